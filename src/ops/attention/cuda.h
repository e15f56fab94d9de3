// attention, its backward and its jvp on CUDA: the launchers that cuda_simt.cu (cuda.flash_simt) and
// cuda_mma*.cu (cuda.flash_mma, tensor cores) define and cuda.cc registers.
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

// The forward on tensor cores (cuda_mma.cu): dtype bf16 only, c.D 64 or 128, inputs 16-byte aligned.
void attention_forward_mma(int device, DType dtype, const AttentionCall& c, const void* q, const void* k,
                           const void* v, void* out, void* lse);

// dq, dk, dv in q's dtype; dsinks (H) in lse's dtype when c.sinks is set.
void attention_backward(int device, DType dtype, const AttentionCall& c, const void* dout, const void* q,
                        const void* k, const void* v, const void* out, const void* lse, void* dq, void* dk,
                        void* dv, void* dsinks);

// The backward on tensor cores (cuda_mma_backward.cu), with attention_forward_mma's cases.
void attention_backward_mma(int device, DType dtype, const AttentionCall& c, const void* dout, const void* q,
                            const void* k, const void* v, const void* out, const void* lse, void* dq,
                            void* dk, void* dv, void* dsinks);

// The backward kernels' shared steps (cuda_backward_rows.cu), in the wide type of dtype (f32 for
// bf16): Dt (B,H,T) = dout . out per query row and, with sinks, each row's share of dsinks; then
// dsinks (H) from the shares.
void attention_backward_rows(int device, DType dtype, const AttentionCall& c, const void* dout,
                             const void* out, const void* lse, void* Dt_rows, void* dsink_rows);
void attention_dsinks(int device, DType dtype, const AttentionCall& c, const void* dsink_rows, void* dsinks);

// The tangents of out (q's dtype) and lse (lse's dtype); t_sinks (H) when c.sinks is set. lse only
// shifts the exponents (NOTE [attention tangent]).
void attention_jvp(int device, DType dtype, const AttentionCall& c, const void* q, const void* k,
                   const void* v, const void* tq, const void* tk, const void* tv, const void* t_sinks,
                   const void* lse, void* t_out, void* t_lse);

}  // namespace dew::ops::cuda_kernels
