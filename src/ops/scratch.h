// Scratch<T>: a kernel's temporary buffer from Dew's caching allocator. Included inside a
// DEW_KERNEL_NS namespace (NOTE [kernel namespaces]) so each instruction set gets its own copy.
#pragma once

#include <dew/tensor.h>

#include <algorithm>
#include "ops/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// A buffer from Dew's caching allocator: a fresh std::vector of many megabytes pays a page fault per
// 4 KB on every call (first touch costs about 7x a warm block, BENCHMARKS.md); these come back warm.
template <class Acc>
class Scratch {
 public:
  Scratch() = default;
  explicit Scratch(int64_t n) : t_(Tensor::empty({n}, Scalar<Acc>::dtype)) {}
  Scratch(int64_t n, Acc value) : Scratch(n) { std::fill(data(), data() + n, value); }
  Acc* data() { return t_.defined() ? t_.data<Acc>() : nullptr; }
  const Acc* data() const { return t_.defined() ? t_.data<Acc>() : nullptr; }
  size_t size() const { return t_.defined() ? size_t(t_.numel()) : 0; }
  bool empty() const { return size() == 0; }
  Acc& operator[](size_t i) { return data()[i]; }
  const Acc& operator[](size_t i) const { return data()[i]; }

 private:
  Tensor t_;
};

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
