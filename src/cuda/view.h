// A tensor as a CUDA kernel sees it: data pointer, shape and strides (in elements) up to kMaxRank.
// Plain data, passed to kernels by value; made from a Tensor by ops/cuda_view.h.
#pragma once

#include <cstdint>

#include "cuda/runtime.h"

namespace dew::cuda {

struct View {
  void* data = nullptr;
  int rank = 0;
  bool contiguous = true;
  int64_t numel = 1;
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

}  // namespace dew::cuda
