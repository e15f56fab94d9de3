// attention.h's AttentionMask and score hooks (softcap and its derivative) on the device, shared by
// the SIMT and tensor-core kernels. Keys are bottom-right aligned with the queries, as on the host.
#pragma once

#include "ops/attention/cuda.h"

namespace dew::ops::cuda_kernels {

struct Mask {
  AttentionCall c;
  __device__ int64_t position(int64_t t) const { return t + c.S - c.T; }
  __device__ int64_t first_key(int64_t t) const {
    return c.window > 0 ? max(int64_t(0), position(t) - c.window + 1) : 0;
  }
  __device__ int64_t end_key(int64_t t) const {
    const int64_t hi = c.causal ? min(c.S, position(t) + 1) : c.S;
    return max(first_key(t), hi);
  }
  __device__ bool visible(int64_t b, int64_t t, int64_t j) const {
    if (c.q_segments && c.q_segments[b * c.T + t] != c.k_segments[b * c.S + j]) return false;
    return j >= first_key(t) && j < end_key(t);
  }
};

template <class W>
__device__ W capped(W s, W cap) {
  return cap > 0 ? cap * tanh(s / cap) : s;
}

// d capped / d raw, as a factor of the capped score's derivative.
template <class W>
__device__ W cap_factor(W sc, W cap) {
  if (cap <= 0) return W(1);
  const W th = sc / cap;
  return W(1) - th * th;
}

}  // namespace dew::ops::cuda_kernels
