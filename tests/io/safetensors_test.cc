// safetensors: round trips of every dtype, the reference writer's layout byte for byte, sharded
// checkpoints, and every malformed header the reader must refuse (with what it says).
#include <dew/safetensors.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>

#include "error_of.h"
#include "io/files.h"
#include "io/json.h"

namespace dew {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("dew_safetensors_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string slurp(const std::string& path) {
  return read_text_file(path);
}

// A file's bytes from header text and data size; `length` overrides the declared header length.
std::string file_bytes(const std::string& header, size_t data_bytes, std::optional<uint64_t> length = {}) {
  std::string out(8, '\0');
  const uint64_t n = length.value_or(header.size());
  for (int b = 0; b < 8; ++b) out[b] = char(uint8_t(n >> (8 * b)));
  out += header;
  out.append(data_bytes, '\x5a');
  return out;
}

std::string refusal(const std::string& bytes) {
  return error_of([&] {
    parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.safetensors");
  });
}

TEST(Safetensors, EveryDtypeRoundTripsBitForBit) {
  const std::string dir = fresh_dir("round_trip");
  std::vector<std::pair<std::string, Tensor>> tensors;
  const std::vector<double> specials = {0.0, -0.0, 1.5, -3.25, INFINITY, -INFINITY, NAN, 1e-40};
  for (DType t : {DType::f64, DType::f32, DType::bf16, DType::f16})
    tensors.push_back({"float." + std::string(dtype_name(t)), Tensor::from_values(specials, {2, 4}, t)});
  tensors.push_back({"int.i64", Tensor::from_values({-9007199254740991.0, 7, 0}, {3}, DType::i64)});
  tensors.push_back({"int.i32", Tensor::from_values({-2147483648.0, 5}, {2}, DType::i32)});
  tensors.push_back({"int.u8", Tensor::from_values({255, 0, 17}, {3}, DType::u8)});
  tensors.push_back({"mask", Tensor::from_values({1, 0, 1}, {3}, DType::boolean)});
  tensors.push_back({"scalar", Tensor::from_values({2.5}, {}, DType::f32)});
  tensors.push_back({"empty", Tensor::empty({0, 3}, DType::f32)});
  // A transposed view is written as its logical (row-major) contents.
  tensors.push_back({"view", Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32).transpose(0, 1)});
  save_safetensors(dir + "/t.safetensors", tensors);

  const SafetensorsFile f = SafetensorsFile::open(dir + "/t.safetensors");
  EXPECT_EQ(f.header().metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(f.header().tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    const Tensor back = f.load(name);
    EXPECT_EQ(back.dtype(), t.dtype()) << name;
    EXPECT_EQ(back.shape(), t.shape()) << name;
    const Tensor c = t.contiguous();
    EXPECT_EQ(std::memcmp(back.raw_data(), c.raw_data(), size_t(t.numel()) * dtype_size(t.dtype())), 0)
        << name;
  }
  EXPECT_EQ(f.load("view").to_f64_vector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(Safetensors, LayoutIsTheReferenceWritersByteForByte) {
  const std::string dir = fresh_dir("layout");
  save_safetensors(dir + "/t.safetensors", {{"b", Tensor::from_values({1, 2}, {2}, DType::f32)},
                                            {"a", Tensor::from_values({1, 2, 3}, {3}, DType::bf16)},
                                            {"c", Tensor::from_values({7}, {1}, DType::i64)},
                                            {"d", Tensor::from_values({1}, {1}, DType::f32)}});
  const std::string bytes = slurp(dir + "/t.safetensors");
  // Decreasing alignment (I64, F32, BF16), then name; compact JSON; spaces to a multiple of 8.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"c":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},"d":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},)"
      R"("a":{"dtype":"BF16","shape":[3],"data_offsets":[20,26]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  ASSERT_EQ(bytes.size(), 8 + header.size() + 26);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n, header.size());
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.substr(8, n), header);
  float b[2];
  std::memcpy(b, bytes.data() + 8 + n + 8, 8);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], 2.0f);
}

TEST(Safetensors, MalformedHeadersAreRefusedByName) {
  const std::string ok_entry = R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  EXPECT_EQ(refusal(file_bytes("{" + ok_entry + "}", 8)), "");
  EXPECT_NE(refusal("abcd").find("4 bytes is too short"), std::string::npos);
  EXPECT_NE(
      refusal(file_bytes("{}", 0, 100'000'001))
          .find("is not a safetensors file: it does not begin with an 8-byte header length and a JSON header "
                "(its first 8 bytes read as a length of 100000001 bytes, over the format's 100000000)"),
      std::string::npos);
  EXPECT_NE(refusal(file_bytes("{}", 0, 4000)).find("the file is truncated"), std::string::npos);
  EXPECT_NE(refusal(file_bytes("[]", 0)).find("is not a safetensors file"), std::string::npos);
  EXPECT_NE(refusal(file_bytes("{\"\xC3\x28\":1}", 0)).find("byte 2 is not valid UTF-8"), std::string::npos);
  EXPECT_NE(refusal(file_bytes("{\"x\":", 0)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(refusal(file_bytes("{" + ok_entry + "," + ok_entry + "}", 8)).find("\"x\" appears twice"),
            std::string::npos);
  const auto entry = [](const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return R"({"x":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
  };
  EXPECT_NE(
      refusal(file_bytes(entry("F33", "[2]", "[0,8]"), 8)).find("has dtype \"F33\"; expected one of BOOL"),
      std::string::npos);
  EXPECT_NE(refusal(file_bytes(entry("F32", "[-2]", "[0,8]"), 8)).find("expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(refusal(file_bytes(entry("F32", "[2.0]", "[0,8]"), 8)).find("expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(refusal(file_bytes(entry("F32", "[4294967296,4294967296]", "[0,8]"), 8)).find("overflows"),
            std::string::npos);
  EXPECT_NE(
      refusal(file_bytes(entry("F32", "[2]", "[0,4]"), 4)).find("span 4 bytes, but F32 of shape [2] takes 8"),
      std::string::npos);
  EXPECT_NE(refusal(file_bytes(entry("F32", "[0]", "[8,0]"), 0)).find("end before they begin"),
            std::string::npos);
  EXPECT_NE(refusal(file_bytes(entry("F32", "[2]", "[0]"), 8)).find("expected [begin, end]"),
            std::string::npos);
  EXPECT_NE(
      refusal(file_bytes(R"({"x":{"dtype":"F32","shape":[2]}})", 8)).find("\"data_offsets\" is missing"),
      std::string::npos);
  EXPECT_NE(refusal(file_bytes(R"({"x":[1]})", 0)).find("expected an object with dtype"), std::string::npos);
  // Offsets: a gap, an overlap, a tensor past the end, and bytes after the last tensor.
  const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  EXPECT_NE(refusal(file_bytes("{" + a + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12))
                .find("\"b\" starts at data byte 8 but the tensors before it end at 4"),
            std::string::npos);
  EXPECT_NE(refusal(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                               12))
                .find("starts at data byte 4 but the tensors before it end at 8"),
            std::string::npos);
  EXPECT_NE(
      refusal(file_bytes(entry("F32", "[2]", "[0,8]"), 4)).find("cover 8 bytes of data but the file holds 4"),
      std::string::npos);
  EXPECT_NE(refusal(file_bytes(entry("F32", "[2]", "[0,8]"), 12))
                .find("cover 8 bytes of data but the file holds 12"),
            std::string::npos);
  EXPECT_NE(refusal(file_bytes(R"({"__metadata__":{"k":1}})", 0))
                .find("__metadata__[\"k\"] is 1; expected a string"),
            std::string::npos);
  EXPECT_NE(refusal(file_bytes(R"({"__metadata__":[]})", 0)).find("expected an object of strings"),
            std::string::npos);
  EXPECT_NE(refusal(file_bytes("{\"x\":" + std::string(200, '[') + std::string(200, ']') + "}", 0))
                .find("nested deeper than 128"),
            std::string::npos);
}

// A header of 200,000 tensors opens in linear time (NOTE [strict JSON in two passes]): it took minutes
// when the strict parse scanned each parent object at every child's end (20,000 tensors: 4 s).
TEST(Safetensors, AHeaderOfTwoHundredThousandTensorsOpens) {
  constexpr int kTensors = 200000;
  std::string header = "{";
  for (int i = 0; i < kTensors; ++i)
    header += fmt::format(R"({}"t{}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}})", i ? "," : "", i,
                          4 * i, 4 * i + 4);
  header += "}";
  const std::string dir = fresh_dir("many");
  std::ofstream(dir + "/many.safetensors", std::ios::binary) << file_bytes(header, 4 * size_t(kTensors));
  const SafetensorsFile f = SafetensorsFile::open(dir + "/many.safetensors");
  EXPECT_EQ(f.header().tensors.size(), size_t(kTensors));
  EXPECT_NE(f.find("t199999"), nullptr);
}

TEST(Safetensors, KnownDtypesDewCannotHoldAreListedButNotLoaded) {
  const std::string dir = fresh_dir("i8");
  const std::string bytes = file_bytes(R"({"q":{"dtype":"I8","shape":[3],"data_offsets":[0,3]}})", 3);
  std::ofstream(dir + "/q.safetensors", std::ios::binary) << bytes;
  const SafetensorsFile f = SafetensorsFile::open(dir + "/q.safetensors");
  ASSERT_NE(f.find("q"), nullptr);
  EXPECT_EQ(f.find("q")->dtype, "I8");
  EXPECT_NE(error_of([&] { f.load("q"); }).find("tensor \"q\" is I8, which Dew does not hold"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f.load("p"); }).find("has no tensor \"p\""), std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsFile::open(dir + "/absent.safetensors"); }).find("cannot open"),
            std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsFile::open(dir); }).find("a directory"), std::string::npos);
}

TEST(Safetensors, AFailedWriteLeavesTheOldFileWholeAndNoTemporary) {
  const std::string dir = fresh_dir("atomic");
  const std::string path = dir + "/t.safetensors";
  save_safetensors(path, {{"w", Tensor::from_values({1, 2, 3}, {3}, DType::f32)}});
  const std::string before = slurp(path);
  const Tensor x = Tensor::from_values({4}, {1}, DType::f32);
  EXPECT_NE(error_of([&] {
              save_safetensors(path, {{"w", x}, {"w", x}});
            }).find("two tensors are named \"w\""),
            std::string::npos);
  {
    AtomicFile abandoned(path);
    abandoned.write("partial", 7);
  }  // an error on the way: never committed
  EXPECT_EQ(slurp(path), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(Safetensors, CheckpointsShardWithAnIndexAndLoadBack) {
  const std::string dir = fresh_dir("sharded");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int i = 0; i < 3; ++i)
    tensors.push_back({fmt::format("layers.{}.weight", i), Tensor::full({100}, double(i), DType::f32)});
  save_safetensors_checkpoint(dir, tensors, 1000);  // 400 + 400 fit, the third starts a shard
  EXPECT_TRUE(fs::exists(dir + "/model-00001-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/model-00002-of-00002.safetensors"));
  const nlohmann::json index = parse_json(slurp(dir + "/model.safetensors.index.json"), "index");
  EXPECT_EQ(index["metadata"]["total_size"], 1200);
  EXPECT_EQ(index["weight_map"]["layers.2.weight"], "model-00002-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["layers.1.weight"], "model-00001-of-00002.safetensors");

  const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(dir);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"layers.0.weight", "layers.1.weight", "layers.2.weight"}));
  EXPECT_EQ(c.load("layers.2.weight").to_f64_vector(), std::vector<double>(100, 2.0));
  EXPECT_NE(error_of([&] { c.load("lm_head.weight"); }).find("no tensor \"lm_head.weight\""),
            std::string::npos);

  const std::string single = fresh_dir("single");
  save_safetensors_checkpoint(single, tensors);
  EXPECT_TRUE(fs::exists(single + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(single + "/model.safetensors.index.json"));
  EXPECT_EQ(SafetensorsCheckpoint::open(single).names().size(), 3u);
}

// Written by 3 ranks together, each with its own tensors (the others' bytes released, never read):
// one checkpoint that loads whole; the rank that owns nothing writes no file.
TEST(Safetensors, RanksWriteOneCheckpointTogether) {
  const std::string dir = fresh_dir("by_rank");
  const std::function<int(const std::string&)> owner = [](const std::string& name) {
    return name == "layers.2.weight" ? 0 : 2;
  };
  for (const int rank : {2, 1, 0}) {  // rank 0's index last or first, the files are the same
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (int i = 0; i < 3; ++i) {
      const std::string name = fmt::format("layers.{}.weight", i);
      tensors.push_back({name, Tensor::full({100}, double(i), DType::f32)});
      if (owner(name) != rank) tensors.back().second.release_storage();
    }
    const RankShards by_rank{rank, 3, owner};
    save_safetensors_checkpoint(dir, tensors, 5'000'000'000, &by_rank);
  }
  EXPECT_TRUE(fs::exists(dir + "/model-00001-of-00003.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/model-00002-of-00003.safetensors"));
  const nlohmann::json index = parse_json(slurp(dir + "/model.safetensors.index.json"), "index");
  EXPECT_EQ(index["metadata"]["total_size"], 1200);
  EXPECT_EQ(index["weight_map"]["layers.0.weight"], "model-00003-of-00003.safetensors");
  const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(dir);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(c.load(fmt::format("layers.{}.weight", i)).to_f64_vector(),
              std::vector<double>(100, double(i)));
}

TEST(Safetensors, AnIndexThatLiesIsRefused) {
  const std::string dir = fresh_dir("lying_index");
  save_safetensors(dir + "/a.safetensors", {{"w", Tensor::from_values({1}, {1}, DType::f32)}});
  auto index = [&](const std::string& map) {
    std::ofstream(dir + "/model.safetensors.index.json") << R"({"metadata":{},"weight_map":)" + map + "}";
    return error_of([&] { SafetensorsCheckpoint::open(dir); });
  };
  EXPECT_EQ(index(R"({"w":"a.safetensors"})"), "");
  EXPECT_NE(index(R"({"v":"a.safetensors"})").find("lists \"v\" in a.safetensors, which has no such tensor"),
            std::string::npos);
  EXPECT_NE(index(R"({"w":"../a.safetensors"})").find("expected a file name in the same directory"),
            std::string::npos);
  EXPECT_NE(index(R"({"w":"b.safetensors"})").find("b.safetensors: cannot open"), std::string::npos);
  EXPECT_NE(index(R"([])").find("weight_map"), std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsCheckpoint::open(fresh_dir("nothing")); }).find("holds neither"),
            std::string::npos);
}

TEST(Json, Utf8IsCheckedAsTheStandardDefinesIt) {
  EXPECT_EQ(invalid_utf8_at("plain"), std::string_view::npos);
  EXPECT_EQ(invalid_utf8_at("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), std::string_view::npos);  // é € 😀
  EXPECT_EQ(invalid_utf8_at("ab\xC0\x80"), 2u);                                                // overlong NUL
  EXPECT_EQ(invalid_utf8_at("\xED\xA0\x80"), 0u);                                              // a surrogate
  EXPECT_EQ(invalid_utf8_at("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(invalid_utf8_at("x\xE2\x82"), 1u);         // cut short
  EXPECT_EQ(invalid_utf8_at("\x80"), 0u);              // stray continuation
}

}  // namespace
}  // namespace dew
