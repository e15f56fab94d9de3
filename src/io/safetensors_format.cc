// The safetensors format itself, over bytes in memory: the dtype table, header validation (what the
// reference implementation checks, plus duplicate keys) and the header a writer emits. No files and
// no tensors here, so the fuzz target (tests/fuzz) builds from this file and json.cc alone.
#include "io/safetensors_format.h"

#include "core/printable.h"

#include <dew/error.h>

#include <algorithm>
#include <limits>

#include "io/json.h"

namespace dew {
namespace {

struct DTypeInfo {
  std::string_view name;
  uint64_t size;
};

// In the reference's alignment order (its Dtype enum): a writer places later rows first, so every
// tensor's data starts at a multiple of its element size.
constexpr DTypeInfo kDTypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
    {"F32", 4},  {"F64", 8}, {"C64", 8}, {"I64", 8},     {"U64", 8},
};

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

uint64_t unsigned_member(const nlohmann::json& value, const std::string& what, const std::string& source) {
  DEW_REQUIRE(value.is_number_unsigned(), "{}: {} is {}; expected a non-negative integer", source, what,
              value.dump());
  return value.get<uint64_t>();
}

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& info, const std::string& source) {
  using V = nlohmann::json::value_t;
  const std::string where = fmt::format("{}: tensor \"{}\"", source, printable(name));
  DEW_REQUIRE(info.is_object(), "{} is described by {}; expected an object with dtype, shape, data_offsets",
              where, json_type_name(info.type()));
  SafetensorsEntry e;
  e.name = name;
  e.dtype = json_member(info, "dtype", V::string, where).get<std::string>();
  const uint64_t element = safetensors_dtype_size(e.dtype);
  DEW_REQUIRE(element > 0, "{} has dtype \"{}\"; expected one of {}", where, e.dtype,
              fmt::join(safetensors_dtype_names(), ", "));
  uint64_t bytes = element;
  const auto& shape = json_member(info, "shape", V::array, where);
  for (const auto& d : shape) {
    const uint64_t size = unsigned_member(d, "a dimension of its shape", where);
    DEW_REQUIRE(
        size <= uint64_t(std::numeric_limits<int64_t>::max()) && !__builtin_mul_overflow(bytes, size, &bytes),
        "{}: its shape {} overflows a 64-bit byte count; expected a shape that fits in memory", where,
        shape.dump());
    e.shape.push_back(int64_t(size));
  }
  const auto& offsets = json_member(info, "data_offsets", V::array, where);
  DEW_REQUIRE(offsets.size() == 2, "{}: data_offsets is {}; expected [begin, end]", where, offsets.dump());
  e.begin = unsigned_member(offsets[0], "data_offsets[0]", where);
  e.end = unsigned_member(offsets[1], "data_offsets[1]", where);
  DEW_REQUIRE(e.begin <= e.end, "{}: data_offsets {} end before they begin; expected begin <= end", where,
              offsets.dump());
  DEW_REQUIRE(e.nbytes() == bytes,
              "{}: data_offsets {} span {} bytes, but {} of shape {} takes {}; expected the two to agree",
              where, offsets.dump(), e.nbytes(), e.dtype, shape.dump(), bytes);
  return e;
}

}  // namespace

uint64_t safetensors_dtype_size(std::string_view dtype) {
  for (const auto& d : kDTypes)
    if (d.name == dtype) return d.size;
  return 0;
}

int safetensors_dtype_rank(std::string_view dtype) {
  for (size_t i = 0; i < std::size(kDTypes); ++i)
    if (kDTypes[i].name == dtype) return int(i);
  return -1;
}

std::vector<std::string_view> safetensors_dtype_names() {
  std::vector<std::string_view> names;
  for (const auto& d : kDTypes) names.push_back(d.name);
  return names;
}

SafetensorsHeader parse_safetensors(const uint8_t* bytes, uint64_t size, const std::string& source) {
  DEW_REQUIRE(size >= 8,
              "{}: {} bytes is too short; expected a safetensors file (an 8-byte header length first)",
              source, size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];  // little-endian
  // A file of another kind: its first bytes read as no header length a safetensors file could have, or
  // its header as no JSON object.
  const std::string_view start(reinterpret_cast<const char*>(bytes) + 8, std::min<uint64_t>(n, size - 8));
  DEW_REQUIRE(
      n <= kMaxHeaderBytes && (start.empty() || start[0] == '{'),
      "{} is not a safetensors file: it does not begin with an 8-byte header length and a JSON header "
      "(its first 8 bytes read as a length of {} bytes{})",
      source, n,
      n <= kMaxHeaderBytes ? ", and no '{{' follows them"
                           : fmt::format(", over the format's {}", kMaxHeaderBytes));
  DEW_REQUIRE(n <= size - 8, "{}: the header length is {} bytes but only {} follow it; the file is truncated",
              source, n, size - 8);
  const std::string_view text(reinterpret_cast<const char*>(bytes) + 8, n);
  DEW_REQUIRE(!text.empty() && text[0] == '{',
              "{}: the header does not start with '{{'; expected a JSON object", source);
  const nlohmann::json json = parse_json(text, source + " header");
  DEW_REQUIRE(json.is_object(), "{}: the header is a JSON {}; expected an object", source,
              json_type_name(json.type()));

  SafetensorsHeader header;
  header.data_start = 8 + n;
  for (const auto& [key, value] : json.items()) {
    if (key != "__metadata__") {
      header.tensors.push_back(parse_entry(key, value, source));
      continue;
    }
    DEW_REQUIRE(value.is_object(), "{}: __metadata__ is {}; expected an object of strings", source,
                json_type_name(value.type()));
    for (const auto& [k, v] : value.items()) {
      DEW_REQUIRE(v.is_string(), "{}: __metadata__[\"{}\"] is {}; expected a string", source, k, v.dump());
      header.metadata[k] = v.get<std::string>();
    }
  }
  std::sort(header.tensors.begin(), header.tensors.end(), [](const auto& a, const auto& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  // Contiguous from 0, no gap and no overlap, ending exactly at the end of the file.
  uint64_t covered = 0;
  for (const auto& e : header.tensors) {
    DEW_REQUIRE(e.begin == covered,
                "{}: tensor \"{}\" starts at data byte {} but the tensors before it end at {}; expected "
                "offsets contiguous from 0 with no gap or overlap",
                source, printable(e.name), e.begin, covered);
    covered = e.end;
  }
  const uint64_t data_bytes = size - header.data_start;
  DEW_REQUIRE(covered == data_bytes,
              "{}: the tensors cover {} bytes of data but the file holds {} after the header; expected the "
              "last tensor to end at the end of the file",
              source, covered, data_bytes);
  return header;
}

std::string safetensors_header_text(const std::vector<SafetensorsEntry>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (const auto& e : tensors) {
    nlohmann::ordered_json info;
    info["dtype"] = e.dtype;
    info["shape"] = e.shape;
    info["data_offsets"] = {e.begin, e.end};
    header[e.name] = std::move(info);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

std::map<std::string, std::string> parse_safetensors_index(std::string_view text, const std::string& source) {
  const nlohmann::json index = parse_json(text, source);
  DEW_REQUIRE(index.is_object(), "{}: expected a JSON object with \"weight_map\"", source);
  const auto& map = json_member(index, "weight_map", nlohmann::json::value_t::object, source);
  std::map<std::string, std::string> shards;
  for (const auto& [name, file] : map.items()) {
    DEW_REQUIRE(file.is_string(), "{}: weight_map[\"{}\"] is {}; expected a file name", source,
                printable(name), file.dump());
    const std::string shard = file.get<std::string>();
    DEW_REQUIRE(!shard.empty() && shard.find('/') == std::string::npos && shard != "." && shard != "..",
                "{}: weight_map[\"{}\"] is \"{}\"; expected a file name in the same directory", source,
                printable(name), printable(shard));
    shards[name] = shard;
  }
  return shards;
}

}  // namespace dew
