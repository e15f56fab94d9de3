// The GGUF writer's bytes read back by hand as GGUF v3 lays them out: header, typed key/values,
// tensor descriptions with ggml's innermost-first dimensions, data at 32-byte aligned offsets.
// (llama.cpp itself reads Dew's files in tests/models/gguf_llama_cpp_test.cc.)
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "error_of.h"
#include "io/gguf_file.h"

namespace dew {
namespace {

using testing::error_of;

class Reader {
 public:
  explicit Reader(std::string bytes) : bytes_(std::move(bytes)) {}
  template <class T>
  T get() {
    T v;
    EXPECT_LE(at_ + sizeof(T), bytes_.size());
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string string() {
    const uint64_t n = get<uint64_t>();
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  size_t at() const { return at_; }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  size_t at_ = 0;
};

TEST(GgufFile, HeaderValuesTensorDescriptionsAndAlignedData) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 7);
  w.add_f32("llama.rope.freq_base", 500000.0f);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_strings("tokenizer.ggml.tokens", {"a", "bc"});
  w.add_i32s("tokenizer.ggml.token_type", {1, 3});
  const Tensor matrix = Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32);
  const Tensor vector = Tensor::from_values({-1, 0.5, 2}, {3}, DType::bf16);
  w.add_tensor("m", matrix);
  w.add_tensor("v", vector);
  const std::string path = ::testing::TempDir() + "dew_gguf_writer.gguf";
  w.write(path);
  std::ostringstream text;
  text << std::ifstream(path, std::ios::binary).rdbuf();
  Reader r(text.str());

  EXPECT_EQ(r.bytes().substr(0, 4), "GGUF");
  r.get<uint32_t>();
  EXPECT_EQ(r.get<uint32_t>(), 3u);  // version
  EXPECT_EQ(r.get<uint64_t>(), 2u);  // tensors
  EXPECT_EQ(r.get<uint64_t>(), 6u);  // key/values
  EXPECT_EQ(r.string(), "general.architecture");
  EXPECT_EQ(r.get<uint32_t>(), 8u);  // string
  EXPECT_EQ(r.string(), "llama");
  EXPECT_EQ(r.string(), "llama.block_count");
  EXPECT_EQ(r.get<uint32_t>(), 4u);  // u32
  EXPECT_EQ(r.get<uint32_t>(), 7u);
  EXPECT_EQ(r.string(), "llama.rope.freq_base");
  EXPECT_EQ(r.get<uint32_t>(), 6u);  // f32
  EXPECT_EQ(r.get<float>(), 500000.0f);
  EXPECT_EQ(r.string(), "tokenizer.ggml.add_bos_token");
  EXPECT_EQ(r.get<uint32_t>(), 7u);  // bool, one byte
  EXPECT_EQ(r.get<uint8_t>(), 1u);
  EXPECT_EQ(r.string(), "tokenizer.ggml.tokens");
  EXPECT_EQ(r.get<uint32_t>(), 9u);  // array of strings
  EXPECT_EQ(r.get<uint32_t>(), 8u);
  EXPECT_EQ(r.get<uint64_t>(), 2u);
  EXPECT_EQ(r.string(), "a");
  EXPECT_EQ(r.string(), "bc");
  EXPECT_EQ(r.string(), "tokenizer.ggml.token_type");
  EXPECT_EQ(r.get<uint32_t>(), 9u);  // array of i32
  EXPECT_EQ(r.get<uint32_t>(), 5u);
  EXPECT_EQ(r.get<uint64_t>(), 2u);
  EXPECT_EQ(r.get<int32_t>(), 1);
  EXPECT_EQ(r.get<int32_t>(), 3);

  EXPECT_EQ(r.string(), "m");
  EXPECT_EQ(r.get<uint32_t>(), 2u);  // dimensions, innermost first
  EXPECT_EQ(r.get<uint64_t>(), 3u);
  EXPECT_EQ(r.get<uint64_t>(), 2u);
  EXPECT_EQ(r.get<uint32_t>(), 0u);  // GGML_TYPE_F32
  EXPECT_EQ(r.get<uint64_t>(), 0u);  // offset in the data section
  EXPECT_EQ(r.string(), "v");
  EXPECT_EQ(r.get<uint32_t>(), 1u);
  EXPECT_EQ(r.get<uint64_t>(), 3u);
  EXPECT_EQ(r.get<uint32_t>(), 30u);  // GGML_TYPE_BF16
  EXPECT_EQ(r.get<uint64_t>(), 32u);  // 24 bytes of m, padded to 32

  const size_t data = (r.at() + 31) / 32 * 32;
  ASSERT_EQ(r.bytes().size(), data + 32 + 32);  // each tensor padded to the alignment
  EXPECT_EQ(std::memcmp(r.bytes().data() + data, matrix.raw_data(), 24), 0);
  EXPECT_EQ(std::memcmp(r.bytes().data() + data + 32, vector.raw_data(), 6), 0);
  EXPECT_EQ(r.bytes().substr(r.at(), data - r.at()), std::string(data - r.at(), '\0'));
}

TEST(GgufFile, RefusesTensorsItCannotHold) {
  GgufWriter w;
  EXPECT_NE(error_of([&] {
              w.add_tensor("ids", Tensor::zeros({4}, DType::i64));
            }).find("[gguf] tensor ids is i64; GGUF is written from f32, f16 or bf16"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              w.add_tensor("big", Tensor::zeros({1, 1, 1, 1, 2}, DType::f32));
            }).find("has 5 dimensions; GGUF holds 1 to 4"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
