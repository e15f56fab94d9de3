// attention's backward on tensor cores (cuda.flash_mma): bf16, D in {64, 128}, sm_80 and up, in two
// passes that each own their outputs, so nothing is accumulated by atomics and every launch gives the
// same bits (FlashAttention-2 adds dQ atomically instead):
//   dq pass, per block of 64 query rows: over the key tiles, S = Q K^T and dP = dO V^T, then
//     dS = P (dP - Dt) and dQ += dS K;
//   dkv pass, per block of 64 keys: over the group's heads and the query tiles that see the keys,
//     S^T = K Q^T and dP^T = V dO^T, then dV += P^T dO and dK += dS^T Q.
// P and dS enter their products split in two bf16 parts (NOTE [exact probabilities on tensor cores]).
#include <stdexcept>

#include "cuda/launch.h"
#include "cuda/mma.cuh"
#include "cuda/runtime.h"
#include "ops/attention/cuda.h"
#include "ops/attention/cuda_scores.cuh"
#include "ops/attention/cuda_tiles.cuh"

namespace dew::ops::cuda_kernels {
namespace {

using namespace tiles;

// dS of one score from its raw product and dP: P (dP - Dt) through the softcap's derivative.
__device__ __forceinline__ float score_gradient(float raw, float dp, float lse, float Dt, float scale,
                                                float cap, float* p_out) {
  const float sc = capped(raw * scale, cap);
  const float p = expf(sc - lse);
  *p_out = p;
  return p * (dp - Dt) * cap_factor(sc, cap) * scale;
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    dq_mma_kernel(AttentionCall c, const uint16_t* __restrict__ dout, const uint16_t* __restrict__ q,
                  const uint16_t* __restrict__ k, const uint16_t* __restrict__ v,
                  const float* __restrict__ lse, const float* __restrict__ Dt_rows,
                  uint16_t* __restrict__ dq) {
  constexpr int kStride = D + kPad, kSteps = D / 16, kDimTiles = D / 8;
  extern __shared__ uint4 shared_words[];
  uint16_t* ks = reinterpret_cast<uint16_t*>(shared_words);
  uint16_t* vs = ks + kKeys * kStride;

  const BlockRows at = block_rows(c);
  const int g = threadIdx.x % 32 / 4, qd = threadIdx.x % 4;
  const int64_t b = at.b, h = at.h, hk = h / c.group;
  const int64_t rows[2] = {at.t0 + (threadIdx.x / 32) * 16 + g, at.t0 + (threadIdx.x / 32) * 16 + g + 8};
  const Mask mask{c};

  uint32_t qf[kSteps][4], dof[kSteps][4];
  load_a_fragments<D>(c, q, b, h, rows, qf);
  load_a_fragments<D>(c, dout, b, h, rows, dof);
  float row_lse[2], row_Dt[2];  // rows past T: lse = +inf, so their probabilities are 0
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const bool in = rows[r] < c.T;
    row_lse[r] = in ? lse[(b * c.H + h) * c.T + rows[r]] : INFINITY;
    row_Dt[r] = in ? Dt_rows[(b * c.H + h) * c.T + rows[r]] : 0.0f;
  }
  float dqa[kDimTiles][4] = {};
  const float scale = float(c.scale), cap = float(c.cap);

  const KeyRange keys = block_keys(mask, at.t0, at.t_last);
  for (int64_t j0 = keys.first_tile; j0 < keys.end; j0 += kKeys) {
    __syncthreads();
    load_key_tile<D>(c, k, b, hk, j0, ks);
    load_key_tile<D>(c, v, b, hk, j0, vs);
    __syncthreads();

    float s[kKeyTiles][4] = {}, dp[kKeyTiles][4] = {};
    add_product_with_rows<D>(qf, ks, s);    // S = Q K^T
    add_product_with_rows<D>(dof, vs, dp);  // dP = dO V^T
    const bool whole = tile_is_whole(mask, at, j0);
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t t = rows[i / 2], j = j0 + fragment_column(nt, i);
        float p;
        s[nt][i] = sees(mask, whole, b, t, j)
                       ? score_gradient(s[nt][i], dp[nt][i], row_lse[i / 2], row_Dt[i / 2], scale, cap, &p)
                       : 0.0f;
      }
    add_split_product<D>(s, ks, dqa);  // dQ += dS K
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (rows[r] >= c.T) continue;
    uint16_t* row = dq + ((b * c.T + rows[r]) * c.H + h) * D;
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt)
      *reinterpret_cast<uint32_t*>(row + dt * 8 + 2 * qd) =
          cuda::pack_bf16(dqa[dt][2 * r], dqa[dt][2 * r + 1]);
  }
}

// The dkv pass's block: keys [j0, j0 + kKeys) of (b, hk), in natural order (under a causal mask the
// first keys have the most queries).
struct BlockKeys {
  int64_t b, hk, j0;
};
__device__ inline BlockKeys block_keys_of(const AttentionCall& c) {
  const int64_t tiles = (c.S + kKeys - 1) / kKeys, x = blockIdx.x;
  const int64_t bk = x / tiles;
  return {bk / c.Hkv, bk % c.Hkv, x % tiles * kKeys};
}

template <int D>
constexpr int dkv_shared_bytes() {
  return 4 * tile_bytes<D>() + 2 * kRows * int(sizeof(float));
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    dkv_mma_kernel(AttentionCall c, const uint16_t* __restrict__ dout, const uint16_t* __restrict__ q,
                   const uint16_t* __restrict__ k, const uint16_t* __restrict__ v,
                   const float* __restrict__ lse, const float* __restrict__ Dt_rows,
                   uint16_t* __restrict__ dk, uint16_t* __restrict__ dv) {
  constexpr int kStride = D + kPad, kSteps = D / 16, kDimTiles = D / 8;
  extern __shared__ uint4 shared_words[];
  uint16_t* ks = reinterpret_cast<uint16_t*>(shared_words);
  uint16_t* vs = ks + kKeys * kStride;
  uint16_t* qs = vs + kKeys * kStride;
  uint16_t* dos = qs + kRows * kStride;
  float* lse_s = reinterpret_cast<float*>(dos + kRows * kStride);
  float* Dt_s = lse_s + kRows;

  const BlockKeys at = block_keys_of(c);
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, qd = threadIdx.x % 4;
  const int64_t b = at.b, hk = at.hk, j0 = at.j0;
  const int64_t keys[2] = {j0 + warp * 16 + g, j0 + warp * 16 + g + 8};
  const Mask mask{c};
  load_key_tile<D>(c, k, b, hk, j0, ks);
  load_key_tile<D>(c, v, b, hk, j0, vs);

  float dka[kDimTiles][4] = {}, dva[kDimTiles][4] = {};
  const float scale = float(c.scale), cap = float(c.cap);
  // The queries that can see a key of the block: position(t) >= j0 when causal, < j_last + window.
  const int64_t shift = c.S - c.T, j_last = min(j0 + kKeys, c.S) - 1;
  const int64_t t_lo = c.causal ? max(int64_t(0), j0 - shift) : 0;
  const int64_t t_hi = c.window > 0 ? min(c.T, j_last - shift + c.window) : c.T;
  for (int64_t h = hk * c.group; h < (hk + 1) * c.group; ++h)
    for (int64_t t0 = t_lo; t0 < t_hi; t0 += kRows) {
      __syncthreads();  // the previous query tile's readers are done
      load_query_tile<D>(c, q, b, h, t0, qs);
      load_query_tile<D>(c, dout, b, h, t0, dos);
      for (int i = threadIdx.x; i < kRows; i += kThreads) {
        const int64_t t = t0 + i;
        lse_s[i] = t < c.T ? lse[(b * c.H + h) * c.T + t] : INFINITY;
        Dt_s[i] = t < c.T ? Dt_rows[(b * c.H + h) * c.T + t] : 0.0f;
      }
      __syncthreads();

      float s[kKeyTiles][4] = {}, dp[kKeyTiles][4] = {};  // 16 keys x 64 queries per warp
#pragma unroll
      for (int st = 0; st < kSteps; ++st) {
        uint32_t kf[4], vf[4];
        tile_a_fragment(ks, kStride, warp * 16, st * 16, kf);
        tile_a_fragment(vs, kStride, warp * 16, st * 16, vf);
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt) {
          uint32_t b0, b1;
          tile_b_rows(qs, kStride, nt * 8, st * 16, b0, b1);
          cuda::mma_bf16(s[nt], kf, b0, b1);
          tile_b_rows(dos, kStride, nt * 8, st * 16, b0, b1);
          cuda::mma_bf16(dp[nt], vf, b0, b1);
        }
      }
      const bool whole = !c.q_segments && t0 + kRows <= c.T && j0 + kKeys <= c.S &&
                         mask.first_key(t0 + kRows - 1) <= j0 && mask.end_key(t0) >= j0 + kKeys;
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int n = fragment_column(nt, i);
          const int64_t t = t0 + n, j = keys[i / 2];
          float p = 0.0f, ds = 0.0f;
          if (sees(mask, whole, b, t, j))
            ds = score_gradient(s[nt][i], dp[nt][i], lse_s[n], Dt_s[n], scale, cap, &p);
          s[nt][i] = p;
          dp[nt][i] = ds;
        }
      add_split_product<D>(s, dos, dva);  // dV += P^T dO
      add_split_product<D>(dp, qs, dka);  // dK += dS^T Q
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (keys[r] >= c.S) continue;
    const int64_t offset = ((b * c.S + keys[r]) * c.Hkv + hk) * D;
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt) {
      *reinterpret_cast<uint32_t*>(dk + offset + dt * 8 + 2 * qd) =
          cuda::pack_bf16(dka[dt][2 * r], dka[dt][2 * r + 1]);
      *reinterpret_cast<uint32_t*>(dv + offset + dt * 8 + 2 * qd) =
          cuda::pack_bf16(dva[dt][2 * r], dva[dt][2 * r + 1]);
    }
  }
}

template <int D>
void launch_backward(const AttentionCall& c, const uint16_t* dout, const uint16_t* q, const uint16_t* k,
                     const uint16_t* v, const float* lse, const float* Dt, uint16_t* dq, uint16_t* dk,
                     uint16_t* dv, cudaStream_t stream) {
  if (c.T > 0) {
    dq_mma_kernel<D><<<block_grid(c), kThreads, 2 * tile_bytes<D>(), stream>>>(c, dout, q, k, v, lse, Dt, dq);
    DEW_CUDA_CHECK_LAUNCH("attention dq_mma_kernel");
  }
  if (c.S > 0) {
    // Beyond 48 KiB of dynamic shared memory a kernel must opt in (D = 128 takes 69 KiB).
    DEW_CUDA_CHECK(cudaFuncSetAttribute(dkv_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        dkv_shared_bytes<D>()));
    const unsigned blocks = unsigned((c.S + kKeys - 1) / kKeys * c.B * c.Hkv);
    dkv_mma_kernel<D><<<blocks, kThreads, dkv_shared_bytes<D>(), stream>>>(c, dout, q, k, v, lse, Dt, dk, dv);
    DEW_CUDA_CHECK_LAUNCH("attention dkv_mma_kernel");
  }
}

}  // namespace

void attention_backward_mma(int device, DType dtype, const AttentionCall& c, const void* dout, const void* q,
                            const void* k, const void* v, const void* out, const void* lse, void* dq,
                            void* dk, void* dv, void* dsinks) {
  if (dtype != DType::bf16) throw std::logic_error("attention_backward_mma: bf16 only (its requirement)");
  if (c.B * c.H == 0) return;
  cuda::use_device(device);
  const int64_t rows = c.B * c.H * c.T;
  cuda::DeviceBuffer<float> Dt(device, rows), dsink_rows(device, c.sinks ? rows : 0);
  attention_backward_rows(device, DType::bf16, c, dout, out, lse, Dt.data(), dsink_rows.data());
  auto bits = [](const void* p) { return static_cast<const uint16_t*>(p); };
  const cudaStream_t stream = cuda::stream_of(device);
  const float* lse_f = static_cast<const float*>(lse);
  uint16_t *dq_b = static_cast<uint16_t*>(dq), *dk_b = static_cast<uint16_t*>(dk),
           *dv_b = static_cast<uint16_t*>(dv);
  if (c.D == 64)
    launch_backward<64>(c, bits(dout), bits(q), bits(k), bits(v), lse_f, Dt.data(), dq_b, dk_b, dv_b, stream);
  else
    launch_backward<128>(c, bits(dout), bits(q), bits(k), bits(v), lse_f, Dt.data(), dq_b, dk_b, dv_b,
                         stream);
  attention_dsinks(device, DType::bf16, c, dsink_rows.data(), dsinks);
}

}  // namespace dew::ops::cuda_kernels
