// Tensor-core primitives for sm_80 and up: mma.sync m16n8k16 on bf16 with f32 accumulation, and the
// packing of f32 values into its bf16 operands. Fragment layout (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), with g = lane / 4 and q = lane % 4, a register holding two adjacent columns (the
// lower column in the low half):
//   A (16x16, row-major): a0 (g, 2q), a1 (g+8, 2q), a2 (g, 2q+8), a3 (g+8, 2q+8)
//   B (16x8, k by n):     b0 (k 2q, n g), b1 (k 2q+8, n g)
//   C (16x8, f32):        c0,c1 (g, 2q..2q+1), c2,c3 (g+8, 2q..2q+1)
// So the C fragments of two adjacent n-tiles are, packed, the A fragment of their 16 columns.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace dew::cuda {

// d += a * b.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t bits_of(__nv_bfloat162 v) {
  uint32_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}

// Two bf16 (raw bits) as one operand register, `low` in the low half.
__device__ __forceinline__ uint32_t pair_of(uint16_t low, uint16_t high) {
  return uint32_t(low) | (uint32_t(high) << 16);
}

// x and y rounded to nearest even, x in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float x, float y) {
  return bits_of(__floats2bfloat162_rn(x, y));
}

// NOTE [exact probabilities on tensor cores]: the gate bounds each attention output by f32 roundoff
// of its terms, and a probability rounded to bf16 (FlashAttention's operand) is off by 2^-9 of
// itself. As hi = bf16(x) plus lo = bf16(x - hi) (the difference is exact in f32), x is carried to
// 2^-17 of itself; the two parts go through two mmas on the same B fragments, lo first.
struct SplitPair {
  uint32_t hi, lo;
};
__device__ __forceinline__ SplitPair split_bf16(float x, float y) {
  const __nv_bfloat162 hi = __floats2bfloat162_rn(x, y);
  const float2 back = __bfloat1622float2(hi);
  return {bits_of(hi), pack_bf16(x - back.x, y - back.y)};
}

}  // namespace dew::cuda
