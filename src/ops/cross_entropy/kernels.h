// cross_entropy's row kernels, written once and compiled per instruction set (NOTE [kernel
// namespaces]): L partial lanes for the max and the sum, one exp per logit (kept for the gradient), one
// pass over the logits, and VectorMathExp choosing exp_f32 over libm.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cross_entropy/cross_entropy.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/isa.h"
#include "simd/lanes.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [one pass over the logits]
// A row's max, exps and sum are taken in one pass, block by block: each block's exps are relative to
// the running max m_b (the max of the blocks so far), so the logits stream from memory while the exps
// are computed, instead of in a pass of their own for the max. The gradient pass scales block b by
// exp(m_b - m) / sum (in double, rounded once into the block's factor), so each gradient still takes
// one exp rounding and one product rounding; x - m_b is no larger than x - m, so the exps' arguments
// round no worse.
inline constexpr int64_t kLogitBlock = 1024;

#if DEW_HAS_FLOAT_VEC
// block_max_and_exps on FloatVec: the block read twice from L1 (max, then exps), bf16 and f16 widened
// as they are loaded; masked tails. f32 rows sum the exps in double lanes. bf16 and f16 rows sum them in
// one float vector (1024 / kVecWidth terms a lane in a 1024-logit block, a relative error near 128 *
// 2^-24 at most, far below the 2^-9 or 2^-11 of their gradients), widened to double at the block's end:
// widening per vector of exps would cost a share of the row's time.
template <class T>
inline float block_max_and_exps_vec(const T* x, float running_max, float* e, int64_t n, double& sum) {
  const float bm = row_max_vec(x, n);
  const FloatVec mb = bm > running_max ? bm : running_max;
  DoubleLanes sums;
  FloatVec sum_f32 = 0.0f;
  const auto add = [&](FloatVec v) __attribute__((always_inline)) {
    if constexpr (is_half_type<T>)
      sum_f32 += v;
    else
      sums.add(v);
  };
  int64_t i = 0;
  for (; i + kVecWidth <= n; i += kVecWidth) {
    // The next block's lines, one step's worth at a time (NOTE [prefetching maps]): past the row's end
    // they are the next row's first block.
    prefetch_ahead<0>(x + i, kVecWidth, kLogitBlock * sizeof(T));
    const FloatVec v = exp_nonpositive_rounding_to<T>(load_vec(x + i) - mb);
    store_vec(e + i, v);
    add(v);
  }
  if (i < n) {
    const int tail = int(n - i);
    const FloatVec v = keep_first_lanes(exp_nonpositive_rounding_to<T>(load_vec(x + i, tail) - mb), tail);
    store_vec(e + i, v, tail);
    add(v);
  }
  if constexpr (is_half_type<T>) sums.add(sum_f32);
  sum = sums.total();
  return bm;
}

// scale_block on FloatVec (e is not changed). Ordinary stores read each line first: the next block's
// lines are asked for, for writing, a step at a time (NOTE [prefetching maps]).
template <class T>
inline void scale_block_vec(const float* e, float scale, T* d, int64_t n, bool stream) {
  write_row_vec(
      d, n, stream, [&](int64_t i, int lanes) __attribute__((always_inline)) {
        if (!stream) prefetch_ahead<1>(d + i, lanes, kLogitBlock * sizeof(T));
        return FloatVec(scale) * load_vec(e + i, lanes);
      });
}
#endif

// One block of a row (NOTE [one pass over the logits]): its max, then e[i] = exp(x[i] - m) with the
// running max m and their sum in double. Returns the block's max; `sum` receives the sum.
template <int L, bool VectorMathExp, class T, class Acc>
[[gnu::always_inline]] inline Acc block_max_and_exps(const T* x, Acc running_max, Acc* e, int64_t n,
                                                     double& sum) {
#if DEW_HAS_FLOAT_VEC
  if constexpr (VectorMathExp && std::is_same_v<Acc, float>) {
    if (rows_on_float_vec<T>()) return block_max_and_exps_vec(x, running_max, e, n, sum);
  }
#endif
  const Acc* xb = row_as<Acc>(x, n, e);  // bf16 blocks are widened into e first
  const Acc bm = row_max<L, Acc>(xb, n);
  const Acc mb = bm > running_max ? bm : running_max;  // a const: stores to e could alias a reference
  // The sums in double: their rounding would scale a whole row of gradients by one shared error,
  // which dominates when one logit dominates (large_logits); they cost little next to the exps.
  sum = lane_sum<L, double>(n, [&](int64_t i) { return double(e[i] = exp_with<VectorMathExp>(xb[i] - mb)); });
  return bm;
}

// d[i] = narrow<T>(scale e[i]) for one block; e may be scaled in place. `stream`: NOTE [streaming large
// outputs], where the tier can.
template <bool VectorMathExp, class T, class Acc>
[[gnu::always_inline]] inline void scale_block(Acc* e, Acc scale, T* d, int64_t n,
                                               [[maybe_unused]] bool stream) {
#if DEW_HAS_FLOAT_VEC
  if constexpr (VectorMathExp && std::is_same_v<Acc, float>) {
    if (rows_on_float_vec<T>()) return scale_block_vec(e, scale, d, n, stream);
  }
#endif
  if constexpr (std::is_same_v<T, Acc>) {
    for (int64_t i = 0; i < n; ++i) d[i] = scale * e[i];
  } else {  // the products in place, then narrowed as a row (natively where the CPU can)
    for (int64_t i = 0; i < n; ++i) e[i] *= scale;
    narrow_row(e, d, n);
  }
}

// NOTE [rows in a pipeline]
// A row's gradient needs its lse, so it is written after its exps: a pass that only streams stores,
// while the exps are arithmetic with the logits streaming in. Each thread therefore writes the previous
// row's gradient block by block between the blocks of the next row's exps, so that the two overlap
// (the same arithmetic in the same order per row: only the interleaving of rows changes).

// A row whose exps are taken and whose gradient is still to be written.
template <class T, class Acc>
struct PendingRow {
  explicit PendingRow(int64_t V, int64_t blocks)
      : e(V), block_max(size_t(blocks)), block_sum(size_t(blocks)), block_factor(size_t(blocks)) {}
  Scratch<Acc> e;  // exp(x - m_b) of the row, kept so that each logit costs one exp
  std::vector<Acc> block_max;
  std::vector<double> block_sum, block_factor;
  T* d = nullptr;  // the row's gradient; null while there is none to write
  double row_scale = 0;
  Acc scale = 0;
  int64_t target = -1;
  bool counted = false;
};

// Block b of a pending row's gradient: d = scale (1 + 2 z lse) softmax(x) - scale [i = target], with
// softmax(x) = e exp(m_b - m) / sum folded into one factor per block.
template <bool VectorMathExp, class T, class Acc>
void write_gradient_block(PendingRow<T, Acc>& p, int64_t b, int64_t V, bool stream) {
  const int64_t i0 = b * kLogitBlock, n = std::min(kLogitBlock, V - i0);
  const Acc p_scale = Acc(p.row_scale * p.block_factor[size_t(b)]);
  Acc* eb = p.e.data() + i0;
  T* db = p.d + i0;
  const bool has_target = p.counted && p.target >= i0 && p.target < i0 + n;
  const Acc p_target = has_target ? p_scale * eb[p.target - i0] : Acc(0);
  scale_block<VectorMathExp>(eb, p_scale, db, n, stream);
  if (has_target) db[p.target - i0] = narrow<T>(p_target - p.scale);
}

template <int L, bool VectorMathExp, class T>
void cross_entropy_rows(const CrossEntropyArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  using R = AccumulatorOf<T>;  // loss and lse dtype: f32, or f64 for f64 logits
  Tensor xc = a.logits.contiguous(), tc = a.targets.contiguous();
  Tensor wc = a.weights.defined() ? a.weights.contiguous() : Tensor();
  const T* x = xc.data<T>();
  const int64_t* t = tc.data<int64_t>();
  const R* w = wc.defined() ? wc.data<R>() : nullptr;
  const int64_t V = a.logits.size(-1), N = a.logits.numel() / std::max<int64_t>(V, 1);
  const int64_t blocks = (V + kLogitBlock - 1) / kLogitBlock;
  T* dx = outs[1].data<T>();
  R* lse_out = outs[2].data<R>();
  // The denominator first (cheap): the loss and every gradient row scale by 1 / sum of weights.
  double W = 0;
  for (int64_t i = 0; i < N; ++i)
    if (t[i] != a.ignore_index) W += w ? double(w[i]) : 1.0;
  const Acc inv_w = W > 0 ? Acc(1.0 / W) : Acc(0);
  const Acc z = Acc(a.z_loss);
  std::vector<double> row_loss(size_t(N), 0.0);  // summed in row order below: thread-independent
  const bool stream = streams_output<T>(N * V);
  const auto fence = [&] {
#if DEW_HAS_FLOAT_VEC
    if (stream) _mm_sfence();  // a row's non-temporal stores before anything after it
#endif
  };
  parallel_for(N, std::max<int64_t>(1, 65536 / std::max<int64_t>(V, 1)), [&](int64_t r0, int64_t r1) {
    PendingRow<T, Acc> row(V, blocks), previous(V, blocks);  // NOTE [rows in a pipeline]
    for (int64_t r = r0; r < r1; ++r) {
      Acc m = -std::numeric_limits<Acc>::infinity();
      for (int64_t b = 0; b < blocks; ++b) {  // NOTE [one pass over the logits]
        const int64_t i0 = b * kLogitBlock, n = std::min(kLogitBlock, V - i0);
        const Acc bm = block_max_and_exps<L, VectorMathExp>(x + r * V + i0, m, row.e.data() + i0, n,
                                                            row.block_sum[size_t(b)]);
        m = bm > m ? bm : m;
        row.block_max[size_t(b)] = m;
        if (previous.d) write_gradient_block<VectorMathExp>(previous, b, V, stream);
      }
      if (previous.d) fence();
      double sum = 0;
      for (int64_t b = 0; b < blocks; ++b) {  // exp(m_b - m): each block's exps relative to the row's max
        row.block_factor[size_t(b)] = std::exp(double(row.block_max[size_t(b)] - m));
        sum += row.block_sum[size_t(b)] * row.block_factor[size_t(b)];
      }
      const Acc lse = Acc(double(m) + std::log(sum));
      lse_out[r] = R(lse);
      row.target = t[r];
      row.counted = row.target != a.ignore_index;
      row.scale = row.counted ? (w ? Acc(w[r]) : Acc(1)) * inv_w : Acc(0);
      if (row.counted)
        row_loss[size_t(r)] = double(row.scale) * (double(lse) - double(widen<Acc>(x[r * V + row.target])) +
                                                   double(z) * lse * lse);
      row.row_scale = double(row.scale) * (1.0 + 2.0 * double(z) * double(lse)) / sum;
      row.d = dx + r * V;
      std::swap(row, previous);
    }
    for (int64_t b = 0; b < blocks; ++b) write_gradient_block<VectorMathExp>(previous, b, V, stream);
    fence();
  });
  double loss = 0;
  for (double v : row_loss) loss += v;
  outs[0].data<R>()[0] = R(loss);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
