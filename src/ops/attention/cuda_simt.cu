// attention on CUDA without tensor cores (cuda.flash_simt): one warp per query row (per key row in
// dk/dv), each lane holding D/32 of the head dims in registers, keys visited one at a time with an
// online softmax, so nothing of size T x S exists. Arithmetic in the wide type (f64 for f32: NOTE
// [cuda transcendental precision]). It is the device's exact baseline for every mask and option; the
// tensor-core kernels are measured against it. Every output element has one writer: no atomics, the
// same result at every launch.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/attention/cuda.h"
#include "ops/attention/cuda_scores.cuh"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kThreads = 32 * kWarpsPerBlock;

template <class W>
__device__ W warp_sum(W v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <class T, class W>
__device__ void load_row(const T* p, int64_t D, W (&r)[kMaxDimsPerLane]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    r[i] = d < D ? W(cuda::widen(p[d])) : W(0);
  }
}

template <class T, class W>
__device__ W dot_row(const W (&r)[kMaxDimsPerLane], const T* p, int64_t D) {
  const int lane = threadIdx.x % 32;
  W s = 0;
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    if (d < D) s += r[i] * W(cuda::widen(p[d]));
  }
  return warp_sum(s);
}

template <class T, class W>
__device__ void store_row(T* p, int64_t D, const W (&r)[kMaxDimsPerLane], W factor) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    if (d < D) p[d] = cuda::narrow<T>(r[i] * factor);
  }
}

// r += factor * p over the lane's dims of a row of D.
template <class T, class W>
__device__ void add_scaled(W (&r)[kMaxDimsPerLane], W factor, const T* p, int64_t D) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    if (d < D) r[i] += factor * W(cuda::widen(p[d]));
  }
}

// The query row of a warp: (b, h, t), its KV head, its offset in q and out, its index in lse.
struct QueryRow {
  int64_t b, h, t, hk, row, stat;
};

// This warp's query row, from the global warp index; false past the end.
__device__ bool query_row(const AttentionCall& c, QueryRow* r) {
  const int64_t w = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (w >= c.B * c.H * c.T) return false;
  const int64_t b = w / (c.H * c.T), h = (w / c.T) % c.H, t = w % c.T;
  *r = {b, h, t, h / c.group, ((b * c.T + t) * c.H + h) * c.D, (b * c.H + h) * c.T + t};
  return true;
}

// Head h's sink logit (c.sinks holds lse's dtype).
template <class T>
__device__ cuda::wide_t<T> sink_of(const AttentionCall& c, int64_t h) {
  return cuda::wide_t<T>(static_cast<const cuda::accumulator_t<T>*>(c.sinks)[h]);
}

template <class T>
__global__ void forward_kernel(AttentionCall c, const T* __restrict__ q, const T* __restrict__ k,
                               const T* __restrict__ v, T* __restrict__ out,
                               cuda::accumulator_t<T>* __restrict__ lse) {
  using W = cuda::wide_t<T>;
  QueryRow at;
  if (!query_row(c, &at)) return;
  const Mask mask{c};
  const int64_t b = at.b, h = at.h, t = at.t, hk = at.hk, D = c.D, row = at.row;
  W qr[kMaxDimsPerLane], acc[kMaxDimsPerLane];
  load_row(q + row, D, qr);
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) acc[i] = 0;
  W m = -INFINITY, l = 0;
  const W scale = W(c.scale), cap = W(c.cap);
  for (int64_t j = mask.first_key(t); j < mask.end_key(t); ++j) {
    if (!mask.visible(b, t, j)) continue;
    const int64_t key = ((b * c.S + j) * c.Hkv + hk) * D;
    const W s = capped(scale * dot_row(qr, k + key, D), cap);
    const W new_m = s > m ? s : m;
    const W correction = exp(m - new_m), p = exp(s - new_m);
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int64_t d = lane + 32 * i;
      acc[i] = acc[i] * correction + (d < D ? p * W(cuda::widen(v[key + d])) : W(0));
    }
    l = l * correction + p;
    m = new_m;
  }
  if (c.sinks) {  // the sink joins the denominator with no value
    const W sink = sink_of<T>(c, h);
    const W new_m = sink > m ? sink : m, correction = exp(m - new_m);
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) acc[i] *= correction;
    l = l * correction + exp(sink - new_m);
    m = new_m;
  }
  store_row(out + row, D, acc, l > 0 ? W(1) / l : W(0));
  if (threadIdx.x % 32 == 0) lse[at.stat] = cuda::accumulator_t<T>(l > 0 ? m + log(l) : W(-INFINITY));
}

// Backward, pass 1, one warp per query row: dq (Dt from attention_backward_rows).
template <class T>
__global__ void dq_kernel(AttentionCall c, const T* __restrict__ dout, const T* __restrict__ q,
                          const T* __restrict__ k, const T* __restrict__ v,
                          const cuda::accumulator_t<T>* __restrict__ lse,
                          const cuda::wide_t<T>* __restrict__ Dt_rows, T* __restrict__ dq) {
  using W = cuda::wide_t<T>;
  QueryRow at;
  if (!query_row(c, &at)) return;
  const Mask mask{c};
  const int64_t b = at.b, t = at.t, hk = at.hk, D = c.D, row = at.row, stat = at.stat;
  const W lse_t = W(lse[stat]), Dt = Dt_rows[stat];
  W qr[kMaxDimsPerLane], dor[kMaxDimsPerLane], dqr[kMaxDimsPerLane];
  load_row(q + row, D, qr);
  load_row(dout + row, D, dor);
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) dqr[i] = 0;
  const W scale = W(c.scale), cap = W(c.cap);
  if (lse_t != W(-INFINITY))
    for (int64_t j = mask.first_key(t); j < mask.end_key(t); ++j) {
      if (!mask.visible(b, t, j)) continue;
      const int64_t key = ((b * c.S + j) * c.Hkv + hk) * D;
      const W sc = capped(scale * dot_row(qr, k + key, D), cap);
      const W p = exp(sc - lse_t);
      const W ds = p * (dot_row(dor, v + key, D) - Dt) * cap_factor(sc, cap) * scale;
      add_scaled(dqr, ds, k + key, D);
    }
  store_row(dq + row, D, dqr, W(1));
}

// Backward, pass 2, one warp per key row (b, j, hk): dk and dv over the group's heads and the queries
// that see the key, in order.
template <class T>
__global__ void dkv_kernel(AttentionCall c, const T* __restrict__ dout, const T* __restrict__ q,
                           const T* __restrict__ k, const T* __restrict__ v,
                           const cuda::accumulator_t<T>* __restrict__ lse,
                           const cuda::wide_t<T>* __restrict__ Dt_rows, T* __restrict__ dk,
                           T* __restrict__ dv) {
  using W = cuda::wide_t<T>;
  const int64_t w = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (w >= c.B * c.S * c.Hkv) return;
  const int64_t b = w / (c.S * c.Hkv), j = (w / c.Hkv) % c.S, hk = w % c.Hkv, D = c.D;
  const Mask mask{c};
  const int64_t key = ((b * c.S + j) * c.Hkv + hk) * D;
  W kr[kMaxDimsPerLane], vr[kMaxDimsPerLane], dkr[kMaxDimsPerLane], dvr[kMaxDimsPerLane];
  load_row(k + key, D, kr);
  load_row(v + key, D, vr);
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) dkr[i] = dvr[i] = 0;
  const W scale = W(c.scale), cap = W(c.cap);
  // The queries that can see key j: position(t) >= j when causal, < j + window with a window.
  const int64_t shift = c.S - c.T;
  const int64_t t_lo = c.causal ? max(int64_t(0), j - shift) : 0;
  const int64_t t_hi = c.window > 0 ? min(c.T, j - shift + c.window) : c.T;
  for (int64_t h = hk * c.group; h < (hk + 1) * c.group; ++h)
    for (int64_t t = t_lo; t < t_hi; ++t) {
      const int64_t stat = (b * c.H + h) * c.T + t;
      const W lse_t = W(lse[stat]);
      if (lse_t == W(-INFINITY) || !mask.visible(b, t, j)) continue;
      const int64_t row = ((b * c.T + t) * c.H + h) * D;
      const W sc = capped(scale * dot_row(kr, q + row, D), cap);
      const W p = exp(sc - lse_t);
      const W ds = p * (dot_row(vr, dout + row, D) - Dt_rows[stat]) * cap_factor(sc, cap) * scale;
      add_scaled(dkr, ds, q + row, D);
      add_scaled(dvr, p, dout + row, D);
    }
  store_row(dk + key, D, dkr, W(1));
  store_row(dv + key, D, dvr, W(1));
}

// NOTE [attention tangent] (attention.h), one warp per query row.
template <class T>
__global__ void jvp_kernel(AttentionCall c, const T* __restrict__ q, const T* __restrict__ k,
                           const T* __restrict__ v, const T* __restrict__ tq, const T* __restrict__ tk,
                           const T* __restrict__ tv, const cuda::accumulator_t<T>* __restrict__ t_sinks,
                           const cuda::accumulator_t<T>* __restrict__ lse, T* __restrict__ t_out,
                           cuda::accumulator_t<T>* __restrict__ t_lse) {
  using W = cuda::wide_t<T>;
  QueryRow at;
  if (!query_row(c, &at)) return;
  const Mask mask{c};
  const int64_t b = at.b, h = at.h, t = at.t, hk = at.hk, D = c.D, row = at.row, stat = at.stat;
  const W lse_t = W(lse[stat]);
  W acc[kMaxDimsPerLane], own_out[kMaxDimsPerLane];
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) acc[i] = own_out[i] = 0;
  if (lse_t == W(-INFINITY)) {  // the row saw nothing: out is 0, so is its tangent
    store_row(t_out + row, D, acc, W(1));
    if (threadIdx.x % 32 == 0) t_lse[stat] = 0;
    return;
  }
  W qr[kMaxDimsPerLane], tqr[kMaxDimsPerLane];
  load_row(q + row, D, qr);
  load_row(tq + row, D, tqr);
  const W scale = W(c.scale), cap = W(c.cap);
  const int lane = threadIdx.x % 32;
  W mu = 0, l = 0;
  for (int64_t j = mask.first_key(t); j < mask.end_key(t); ++j) {
    if (!mask.visible(b, t, j)) continue;
    const int64_t key = ((b * c.S + j) * c.Hkv + hk) * D;
    const W sc = capped(scale * dot_row(qr, k + key, D), cap);
    const W p = exp(sc - lse_t);
    const W ds = scale * (dot_row(tqr, k + key, D) + dot_row(qr, tk + key, D)) * cap_factor(sc, cap);
    l += p;
    mu += p * ds;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int64_t d = lane + 32 * i;
      if (d < D) {
        const W vd = W(cuda::widen(v[key + d]));
        acc[i] += p * (ds * vd + W(cuda::widen(tv[key + d])));
        own_out[i] += p * vd;
      }
    }
  }
  if (c.sinks) {
    const W p_sink = exp(sink_of<T>(c, h) - lse_t);
    l += p_sink;
    mu += p_sink * W(t_sinks[h]);
  }
  const W inv = W(1) / l;
  mu *= inv;
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) acc[i] -= mu * own_out[i];
  store_row(t_out + row, D, acc, inv);
  if (lane == 0) t_lse[stat] = cuda::accumulator_t<T>(mu);
}

unsigned warps_grid(int64_t warps) {
  return unsigned((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void attention_forward(int device, DType dtype, const AttentionCall& c, const void* q, const void* k,
                       const void* v, void* out, void* lse) {
  const int64_t rows = c.B * c.H * c.T;
  if (rows == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<warps_grid(rows), kThreads, 0, cuda::stream_of(device)>>>(
        c, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), static_cast<T*>(out),
        static_cast<cuda::accumulator_t<T>*>(lse));
    DEW_CUDA_CHECK_LAUNCH("attention forward_kernel");
  });
}

void attention_backward(int device, DType dtype, const AttentionCall& c, const void* dout, const void* q,
                        const void* k, const void* v, const void* out, const void* lse, void* dq, void* dk,
                        void* dv, void* dsinks) {
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using W = cuda::wide_t<T>;
    const int64_t rows = c.B * c.H * c.T, keys = c.B * c.S * c.Hkv;
    cuda::DeviceBuffer<W> Dt(device, rows), dsink_rows(device, c.sinks ? rows : 0);
    attention_backward_rows(device, dtype, c, dout, out, lse, Dt.data(), dsink_rows.data());
    if (rows > 0) {
      dq_kernel<T><<<warps_grid(rows), kThreads, 0, stream>>>(
          c, static_cast<const T*>(dout), static_cast<const T*>(q), static_cast<const T*>(k),
          static_cast<const T*>(v), static_cast<const cuda::accumulator_t<T>*>(lse), Dt.data(),
          static_cast<T*>(dq));
      DEW_CUDA_CHECK_LAUNCH("attention dq_kernel");
    }
    if (keys > 0) {
      dkv_kernel<T><<<warps_grid(keys), kThreads, 0, stream>>>(
          c, static_cast<const T*>(dout), static_cast<const T*>(q), static_cast<const T*>(k),
          static_cast<const T*>(v), static_cast<const cuda::accumulator_t<T>*>(lse), Dt.data(),
          static_cast<T*>(dk), static_cast<T*>(dv));
      DEW_CUDA_CHECK_LAUNCH("attention dkv_kernel");
    }
    attention_dsinks(device, dtype, c, dsink_rows.data(), dsinks);
  });
}

void attention_jvp(int device, DType dtype, const AttentionCall& c, const void* q, const void* k,
                   const void* v, const void* tq, const void* tk, const void* tv, const void* t_sinks,
                   const void* lse, void* t_out, void* t_lse) {
  const int64_t rows = c.B * c.H * c.T;
  if (rows == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    jvp_kernel<T><<<warps_grid(rows), kThreads, 0, cuda::stream_of(device)>>>(
        c, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
        static_cast<const T*>(tq), static_cast<const T*>(tk), static_cast<const T*>(tv),
        static_cast<const cuda::accumulator_t<T>*>(t_sinks), static_cast<const cuda::accumulator_t<T>*>(lse),
        static_cast<T*>(t_out), static_cast<cuda::accumulator_t<T>*>(t_lse));
    DEW_CUDA_CHECK_LAUNCH("attention jvp_kernel");
  });
}

}  // namespace dew::ops::cuda_kernels
