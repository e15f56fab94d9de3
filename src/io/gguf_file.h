// A GGUF file writer (version 3, the format llama.cpp loads): typed metadata key/values, then tensor
// descriptions, then the tensors' bytes, each at an offset aligned to 32 bytes. It knows the format, not
// any model's names: models/gguf_export.cc maps a model onto it. Written whole or not at all (AtomicFile).
#pragma once

#include <dew/tensor.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace dew {

class GgufWriter {
 public:
  // Metadata, written in the order added. Integers are written as u32 or i32, GGUF's usual widths.
  void add_string(const std::string& key, const std::string& value);
  void add_u32(const std::string& key, uint32_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_strings(const std::string& key, const std::vector<std::string>& values);
  void add_i32s(const std::string& key, const std::vector<int32_t>& values);

  // A CPU tensor of f32, f16 or bf16, kept (not copied) until write(). GGUF lists dimensions
  // innermost first; this turns the row-major shape around.
  void add_tensor(const std::string& name, const Tensor& tensor);

  // Writes the file at `path`; an error names it and what failed.
  void write(const std::string& path) const;

 private:
  using Value =
      std::variant<std::string, uint32_t, float, bool, std::vector<std::string>, std::vector<int32_t>>;
  struct Entry {
    std::string key;
    Value value;
  };
  struct TensorEntry {
    std::string name;
    Tensor tensor;  // contiguous
  };
  std::vector<Entry> metadata_;
  std::vector<TensorEntry> tensors_;
};

}  // namespace dew
