// GGUF v3 as ggml's gguf.cpp reads it: all integers little-endian; a string is a u64 length and its
// bytes; a value is a u32 type tag and its payload (an array: element type, u64 count, elements).
#include "io/gguf_file.h"

#include <dew/error.h>

#include <cstring>
#include <type_traits>

#include "io/files.h"

namespace dew {
namespace {

constexpr uint64_t kAlignment = 32;  // general.alignment's default; the file states no other

// GGUF's value type tags.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

class Bytes {
 public:
  template <class T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &value, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_ += s;
  }
  void pad_to(uint64_t size) { out_.resize(size, '\0'); }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// ggml's type numbers (ggml.h's enum ggml_type).
uint32_t ggml_type(DType dtype) {
  return dtype == DType::f32 ? 0 : dtype == DType::f16 ? 1 : 30;
}

uint64_t bytes_of(const Tensor& t) {
  return uint64_t(t.numel()) * dtype_size(t.dtype());
}

uint64_t aligned(uint64_t n) {
  return (n + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

void GgufWriter::add_string(const std::string& key, const std::string& value) {
  metadata_.push_back({key, value});
}
void GgufWriter::add_u32(const std::string& key, uint32_t value) {
  metadata_.push_back({key, value});
}
void GgufWriter::add_f32(const std::string& key, float value) {
  metadata_.push_back({key, value});
}
void GgufWriter::add_bool(const std::string& key, bool value) {
  metadata_.push_back({key, value});
}
void GgufWriter::add_strings(const std::string& key, const std::vector<std::string>& values) {
  metadata_.push_back({key, values});
}
void GgufWriter::add_i32s(const std::string& key, const std::vector<int32_t>& values) {
  metadata_.push_back({key, values});
}

void GgufWriter::add_tensor(const std::string& name, const Tensor& tensor) {
  DEW_REQUIRE(tensor.dtype() == DType::f32 || tensor.dtype() == DType::f16 || tensor.dtype() == DType::bf16,
              "[gguf] tensor {} is {}; GGUF is written from f32, f16 or bf16", name,
              dtype_name(tensor.dtype()));
  DEW_REQUIRE(tensor.dim() >= 1 && tensor.dim() <= 4, "[gguf] tensor {} has {} dimensions; GGUF holds 1 to 4",
              name, tensor.dim());
  DEW_REQUIRE(tensor.device().kind == Device::Kind::cpu,
              "[gguf] tensor {} is on {}; move it to the cpu first", name, tensor.device().str());
  tensors_.push_back({name, tensor.contiguous()});
}

void GgufWriter::write(const std::string& path) const {
  Bytes head;
  head.put<uint32_t>(0x46554747);  // "GGUF"
  head.put<uint32_t>(3);
  head.put<uint64_t>(tensors_.size());
  head.put<uint64_t>(metadata_.size());
  for (const Entry& e : metadata_) {
    head.put_string(e.key);
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>) {
            head.put<uint32_t>(kString), head.put_string(v);
          } else if constexpr (std::is_same_v<V, uint32_t>) {
            head.put<uint32_t>(kU32), head.put<uint32_t>(v);
          } else if constexpr (std::is_same_v<V, float>) {
            head.put<uint32_t>(kF32), head.put<float>(v);
          } else if constexpr (std::is_same_v<V, bool>) {
            head.put<uint32_t>(kBool), head.put<uint8_t>(v ? 1 : 0);
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            head.put<uint32_t>(kArray), head.put<uint32_t>(kString), head.put<uint64_t>(v.size());
            for (const std::string& s : v) head.put_string(s);
          } else {
            head.put<uint32_t>(kArray), head.put<uint32_t>(kI32), head.put<uint64_t>(v.size());
            for (int32_t x : v) head.put<int32_t>(x);
          }
        },
        e.value);
  }
  uint64_t offset = 0;  // from the start of the data section
  for (const TensorEntry& t : tensors_) {
    head.put_string(t.name);
    const Shape& shape = t.tensor.shape();
    head.put<uint32_t>(uint32_t(shape.size()));
    for (auto d = shape.rbegin(); d != shape.rend(); ++d) head.put<uint64_t>(uint64_t(*d));
    head.put<uint32_t>(ggml_type(t.tensor.dtype()));
    head.put<uint64_t>(offset);
    offset = aligned(offset + bytes_of(t.tensor));
  }
  head.pad_to(aligned(head.str().size()));
  AtomicFile file(path);
  file.write(head.str().data(), head.str().size());
  static const char zeros[kAlignment] = {};
  for (const TensorEntry& t : tensors_) {
    const uint64_t size = bytes_of(t.tensor);
    file.write(t.tensor.raw_data(), size);
    file.write(zeros, aligned(size) - size);
  }
  file.commit();
}

}  // namespace dew
