// safetensors files and checkpoints on disk: SafetensorsFile (mapped, validated on open),
// save_safetensors (the reference writer's layout, atomically) and sharded checkpoints.
#include <dew/safetensors.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "io/files.h"
#include "io/json.h"
#include "io/safetensors_format.h"

namespace dew {
namespace {

// Dew's dtypes by their safetensors names; others (I8, U16, F8_*, ...) are known to the format and
// to `dew inspect` but cannot be loaded into a Tensor.
constexpr std::pair<DType, std::string_view> kNames[] = {
    {DType::f64, "F64"}, {DType::f32, "F32"}, {DType::bf16, "BF16"}, {DType::f16, "F16"},
    {DType::i64, "I64"}, {DType::i32, "I32"}, {DType::u8, "U8"},     {DType::boolean, "BOOL"},
};

std::string_view safetensors_name(DType t) {
  for (const auto& [d, name] : kNames)
    if (d == t) return name;
  fail("[safetensors] dtype {} has no safetensors name", dtype_name(t));
}

constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::string_view kSingleName = "model.safetensors";

}  // namespace

std::optional<DType> safetensors_dtype(std::string_view name) {
  for (const auto& [d, n] : kNames)
    if (n == name) return d;
  return std::nullopt;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = std::make_shared<const MappedFile>(path);
  f.header_ = parse_safetensors(f.file_->data(), f.file_->size(), path);
  return f;
}

const std::string& SafetensorsFile::path() const {
  return file_->path();
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  for (const auto& e : header_.tensors)
    if (e.name == name) return &e;
  return nullptr;
}

Tensor SafetensorsFile::load(std::string_view name) const {
  const SafetensorsEntry* e = find(name);
  DEW_REQUIRE(e, "{}: has no tensor \"{}\"", path(), name);
  const auto dtype = safetensors_dtype(e->dtype);
  DEW_REQUIRE(dtype,
              "{}: tensor \"{}\" is {}, which Dew does not hold; expected one of F64, F32, BF16, F16, I64, "
              "I32, U8, BOOL",
              path(), name, e->dtype);
  Tensor t = Tensor::empty(e->shape, *dtype);
  if (e->nbytes() > 0) std::memcpy(t.raw_data(), file_->data() + header_.data_start + e->begin, e->nbytes());
  return t;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Decreasing alignment, then name: every tensor starts at a multiple of its element size.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::set<std::string_view> names;
  for (const auto& [name, t] : tensors) {
    DEW_REQUIRE(names.insert(name).second, "{}: two tensors are named \"{}\"; expected unique names", path,
                name);
    DEW_REQUIRE(name != "__metadata__", "{}: a tensor cannot be named __metadata__ (the format reserves it)",
                path);
    DEW_REQUIRE(t.defined() && t.device() == Device::cpu(), "{}: tensor \"{}\" is {}; expected a CPU tensor",
                path, name, t.defined() ? t.describe() : "undefined");
  }
  auto rank = [&](size_t i) { return safetensors_dtype_rank(safetensors_name(tensors[i].second.dtype())); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rank(a) != rank(b) ? rank(a) > rank(b) : tensors[a].first < tensors[b].first;
  });
  std::vector<SafetensorsEntry> entries;
  uint64_t offset = 0;
  for (size_t i : order) {
    const Tensor& t = tensors[i].second;
    const uint64_t bytes = uint64_t(t.numel()) * dtype_size(t.dtype());
    entries.push_back(
        {tensors[i].first, std::string(safetensors_name(t.dtype())), t.shape(), offset, offset + bytes});
    offset += bytes;
  }
  const std::string header = safetensors_header_text(entries, metadata);
  AtomicFile out(path);
  uint8_t length[8];
  for (int b = 0; b < 8; ++b) length[b] = uint8_t(uint64_t(header.size()) >> (8 * b));
  out.write(length, 8);
  out.write(header.data(), header.size());
  for (size_t i : order) {
    const Tensor t = tensors[i].second.to(Device::cpu()).contiguous();  // a GPU's tensors via the host
    out.write(t.raw_data(), uint64_t(t.numel()) * dtype_size(t.dtype()));
  }
  out.commit();
}

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path) {
  namespace fs = std::filesystem;
  SafetensorsCheckpoint c;
  auto add_file = [&](const std::string& file) {
    c.files_.push_back(SafetensorsFile::open(file));
    return c.files_.size() - 1;
  };
  // A lone file: every tensor it holds.
  auto add_whole_file = [&](const std::string& file) {
    const size_t f = add_file(file);
    for (const auto& e : c.files_[f].header().tensors) c.file_of_[e.name] = f;
    return c;
  };
  if (!fs::is_directory(path)) return add_whole_file(path);
  const fs::path dir(path);
  if (fs::exists(dir / kIndexName)) {
    const std::string index_path = (dir / kIndexName).string();
    std::map<std::string, size_t> opened;
    for (const auto& [name, shard] : parse_safetensors_index(read_text_file(index_path), index_path)) {
      auto it = opened.find(shard);
      if (it == opened.end()) it = opened.emplace(shard, add_file((dir / shard).string())).first;
      DEW_REQUIRE(c.files_[it->second].find(name), "{}: lists \"{}\" in {}, which has no such tensor",
                  index_path, name, shard);
      c.file_of_[name] = it->second;
    }
    return c;
  }
  DEW_REQUIRE(fs::exists(dir / kSingleName),
              "{}: holds neither {} nor {}; expected a Hugging Face checkpoint", path, kSingleName,
              kIndexName);
  return add_whole_file((dir / kSingleName).string());
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : file_of_) out.push_back(name);
  return out;
}

const SafetensorsEntry* SafetensorsCheckpoint::find(std::string_view name) const {
  auto it = file_of_.find(name);
  return it == file_of_.end() ? nullptr : files_[it->second].find(name);
}

Tensor SafetensorsCheckpoint::load(std::string_view name) const {
  auto it = file_of_.find(name);
  if (it == file_of_.end()) {
    std::vector<std::string> paths;
    for (const auto& f : files_) paths.push_back(f.path());
    fail("checkpoint has no tensor \"{}\" (its files: {})", name, fmt::join(paths, ", "));
  }
  return files_[it->second].load(name);
}

void save_safetensors_checkpoint(const std::string& directory,
                                 const std::vector<std::pair<std::string, Tensor>>& tensors,
                                 uint64_t max_shard_bytes, const RankShards* by_rank) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(directory, ec);
  DEW_REQUIRE(!ec, "{}: cannot create the directory ({})", directory, ec.message());
  // The shards: by size in the given order, or one per rank.
  std::vector<std::vector<std::pair<std::string, Tensor>>> shards(by_rank ? size_t(by_rank->ranks) : 1);
  uint64_t in_shard = 0, total = 0;
  std::set<std::string_view> names;
  for (const auto& entry : tensors) {
    DEW_REQUIRE(names.insert(entry.first).second, "{}: two tensors are named \"{}\"; expected unique names",
                directory, entry.first);
    const uint64_t bytes = uint64_t(entry.second.numel()) * dtype_size(entry.second.dtype());
    total += bytes;
    if (by_rank) {
      const int owner = by_rank->owner(entry.first);
      DEW_REQUIRE(owner >= 0 && owner < by_rank->ranks, "{}: \"{}\" is owned by rank {} of {}", directory,
                  entry.first, owner, by_rank->ranks);
      shards[size_t(owner)].push_back(entry);
      continue;
    }
    if (!shards.back().empty() && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(entry);
    in_shard += bytes;
  }
  const fs::path dir(directory);
  if (shards.size() == 1) {
    save_safetensors((dir / kSingleName).string(), tensors);
    return;
  }
  nlohmann::json index;  // keys sorted, as transformers writes it
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    if (shards[s].empty()) continue;  // a rank that owns nothing
    const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    if (!by_rank || size_t(by_rank->rank) == s) save_safetensors((dir / file).string(), shards[s]);
    for (const auto& [name, t] : shards[s]) index["weight_map"][name] = file;
  }
  if (by_rank && by_rank->rank != 0) return;
  const std::string text = index.dump(2) + "\n";
  AtomicFile out((dir / kIndexName).string());
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace dew
