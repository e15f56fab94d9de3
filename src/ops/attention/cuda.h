// attention, its backward and its jvp on CUDA: the launchers cuda_simt.cu defines and cuda.cc
// registers as cuda.flash_simt.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

namespace dew::ops::cuda_kernels {

// A call's sizes, score constants and mask (attention.h's AttentionGeometry and AttentionMask).
// Tensors are contiguous: q, out (B,T,H,D); k, v (B,S,Hkv,D); lse (B,H,T); segments (B,T), (B,S).
struct AttentionCall {
  int64_t B = 0, T = 0, S = 0, H = 0, Hkv = 0, D = 0, group = 1;
  double scale = 1, cap = 0;
  bool causal = false;
  int64_t window = 0;
  const int64_t* q_segments = nullptr;  // null: no segments
  const int64_t* k_segments = nullptr;
  const void* sinks = nullptr;  // (H) in lse's dtype, or null
};

// The head dims a lane of a warp keeps in registers: D <= 32 * kMaxDimsPerLane.
inline constexpr int64_t kMaxDimsPerLane = 8;

void attention_forward(int device, DType dtype, const AttentionCall& c, const void* q, const void* k,
                       const void* v, void* out, void* lse);

// dq, dk, dv in q's dtype; dsinks (H) in lse's dtype when c.sinks is set.
void attention_backward(int device, DType dtype, const AttentionCall& c, const void* dout, const void* q,
                        const void* k, const void* v, const void* out, const void* lse, void* dq, void* dk,
                        void* dv, void* dsinks);

// The tangents of out (q's dtype) and lse (lse's dtype); t_sinks (H) when c.sinks is set.
void attention_jvp(int device, DType dtype, const AttentionCall& c, const void* q, const void* k,
                   const void* v, const void* tq, const void* tk, const void* tv, const void* t_sinks,
                   const void* out, const void* lse, void* t_out, void* t_lse);

}  // namespace dew::ops::cuda_kernels
