// attention on tensor cores (cuda.flash_mma): bf16, D in {64, 128}, sm_80 and up. FlashAttention-2's
// schedule with mma.sync m16n8k16: a block takes 64 query rows of one (b, h), 16 per warp, and walks
// the key tiles (64 keys) that its rows can see through shared memory; scores, the online softmax and
// the output accumulate in f32 registers. Probabilities enter P·V split in two bf16 parts (NOTE [exact
// probabilities on tensor cores], cuda/mma.cuh), and exp is CUDA's expf (2 ulp), so the result keeps
// the SIMT kernel's f32 accuracy. Every output element has one writer: the same bits at every launch.
#include <stdexcept>

#include "cuda/launch.h"
#include "cuda/mma.cuh"
#include "ops/attention/cuda.h"
#include "ops/attention/cuda_scores.cuh"
#include "ops/attention/cuda_tiles.cuh"

namespace dew::ops::cuda_kernels {
namespace {

using namespace tiles;

// The forward of one block: kRows query rows of (b, h), from the grid's reversed order (the causal
// rows with the most keys start first).
template <int D>
__global__ void __launch_bounds__(kThreads)
    forward_mma_kernel(AttentionCall c, const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                       const uint16_t* __restrict__ v, uint16_t* __restrict__ out, float* __restrict__ lse) {
  constexpr int kStride = D + kPad, kSteps = D / 16, kDimTiles = D / 8;
  extern __shared__ uint4 shared_words[];
  uint16_t* ks = reinterpret_cast<uint16_t*>(shared_words);
  uint16_t* vs = ks + kKeys * kStride;

  const BlockRows at = block_rows(c);
  const int lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
  const int64_t b = at.b, h = at.h, hk = h / c.group;
  const int64_t rows[2] = {at.t0 + (threadIdx.x / 32) * 16 + g, at.t0 + (threadIdx.x / 32) * 16 + g + 8};
  const Mask mask{c};

  uint32_t qf[kSteps][4];  // this warp's 16 query rows as A fragments
  load_a_fragments<D>(c, q, b, h, rows, qf);
  float o[kDimTiles][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
  const float scale = float(c.scale), cap = float(c.cap);

  const KeyRange keys = block_keys(mask, at.t0, at.t_last);
  for (int64_t j0 = keys.first_tile; j0 < keys.end; j0 += kKeys) {
    __syncthreads();  // the previous tile's readers are done with the shared tiles
    load_key_tile<D>(c, k, b, hk, j0, ks);
    load_key_tile<D>(c, v, b, hk, j0, vs);
    __syncthreads();

    float s[kKeyTiles][4] = {};  // scores: 16 rows x 64 keys
    add_product_with_rows<D>(qf, ks, s);
    const bool whole = tile_is_whole(mask, at, j0);
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t t = rows[i / 2], j = j0 + fragment_column(nt, i);
        s[nt][i] = sees(mask, whole, b, t, j) ? capped(s[nt][i] * scale, cap) : -INFINITY;
      }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // Online softmax per row (r = 0: elements 0, 1; r = 1: elements 2, 3 of each n-tile); a row is
      // spread over the 4 lanes of its quad.
      float tile_max = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
        tile_max = fmaxf(tile_max, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      tile_max = quad_max(tile_max);
      const float new_m = fmaxf(m[r], tile_max);
      const bool none = new_m == -INFINITY;  // nothing seen yet: the probabilities are 0
      const float correction = none ? 1.0f : expf(m[r] - new_m);
      float sum = 0;
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = none ? 0.0f : expf(s[nt][2 * r + e] - new_m);
          s[nt][2 * r + e] = p;
          sum += p;
        }
      l[r] = l[r] * correction + quad_sum(sum);
      m[r] = new_m;
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt) o[dt][2 * r] *= correction, o[dt][2 * r + 1] *= correction;
    }

    add_split_product<D>(s, vs, o);  // O += P V
  }

  if (c.sinks) {  // the sink joins the denominator with no value
    const float sink = static_cast<const float*>(c.sinks)[h];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float new_m = fmaxf(m[r], sink);
      const float correction = new_m == -INFINITY ? 1.0f : expf(m[r] - new_m);
      l[r] = l[r] * correction + (new_m == -INFINITY ? 0.0f : expf(sink - new_m));
      m[r] = new_m;
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt) o[dt][2 * r] *= correction, o[dt][2 * r + 1] *= correction;
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t t = rows[r];
    if (t >= c.T) continue;
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    uint16_t* row = out + ((b * c.T + t) * c.H + h) * D;
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt)
      *reinterpret_cast<uint32_t*>(row + dt * 8 + 2 * qd) =
          cuda::pack_bf16(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
    if (qd == 0) lse[(b * c.H + h) * c.T + t] = l[r] > 0 ? m[r] + logf(l[r]) : -INFINITY;
  }
}

template <int D>
void launch_forward(const AttentionCall& c, const void* q, const void* k, const void* v, void* out, void* lse,
                    cudaStream_t stream) {
  forward_mma_kernel<D><<<block_grid(c), kThreads, 2 * tile_bytes<D>(), stream>>>(
      c, static_cast<const uint16_t*>(q), static_cast<const uint16_t*>(k), static_cast<const uint16_t*>(v),
      static_cast<uint16_t*>(out), static_cast<float*>(lse));
  DEW_CUDA_CHECK_LAUNCH("attention forward_mma_kernel");
}

}  // namespace

void attention_forward_mma(int device, DType dtype, const AttentionCall& c, const void* q, const void* k,
                           const void* v, void* out, void* lse) {
  if (dtype != DType::bf16) throw std::logic_error("attention_forward_mma: bf16 only (its requirement)");
  if (c.B * c.H * c.T == 0) return;
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  if (c.D == 64)
    launch_forward<64>(c, q, k, v, out, lse, stream);
  else
    launch_forward<128>(c, q, k, v, out, lse, stream);
}

}  // namespace dew::ops::cuda_kernels
