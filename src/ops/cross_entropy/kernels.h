// cross_entropy's row kernels, written once and compiled per instruction set (NOTE [kernel
// namespaces]): L partial lanes for the max and the sum, one exp per logit (kept for the gradient), one
// pass over the logits, and FastExp choosing exp_f32 over libm.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cross_entropy/cross_entropy.h"
#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/lanes.h"
#include "ops/map_elements.h"
#include "ops/scratch.h"
#include "ops/vector_math.h"

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

template <int L, bool FastExp, class T>
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
  parallel_for(N, std::max<int64_t>(1, 65536 / std::max<int64_t>(V, 1)), [&](int64_t r0, int64_t r1) {
    Scratch<Acc> row_buffer(V);
    Acc* e = row_buffer.data();  // exp(x - m_b) of the row, kept so that each logit costs one exp
    std::vector<Acc> block_max(static_cast<size_t>(blocks));
    std::vector<double> block_sum(static_cast<size_t>(blocks)), block_factor(static_cast<size_t>(blocks));
    for (int64_t r = r0; r < r1; ++r) {
      T* dr = dx + r * V;
      Acc m = -std::numeric_limits<Acc>::infinity();
      for (int64_t b = 0; b < blocks; ++b) {  // NOTE [one pass over the logits]
        const int64_t i0 = b * kLogitBlock, n = std::min(kLogitBlock, V - i0);
        Acc* eb = e + i0;
        // Hardware prefetchers stop at page ends, and a block is a page or half of one: ask for the next.
        const T* next = x + r * V + std::min(i0 + kLogitBlock, V - 1);
        for (int64_t k = 0; k < kLogitBlock * int64_t(sizeof(T)); k += 64)
          __builtin_prefetch(reinterpret_cast<const char*>(next) + k);
        const Acc* xb = row_as<Acc>(x + r * V + i0, n, eb);  // bf16 blocks are widened into e first
        const Acc bm = row_max<L, Acc>(xb, n);
        m = bm > m ? bm : m;
        const Acc mb = m;  // a const copy: the lambda's stores to e could alias m, which kept it in memory
        // The sums in double: their rounding would scale a whole row of gradients by one shared error,
        // which dominates when one logit dominates (large_logits); they cost little next to the exps.
        block_sum[size_t(b)] =
            lane_sum<L, double>(n, [&](int64_t i) { return double(eb[i] = exp_with<FastExp>(xb[i] - mb)); });
        block_max[size_t(b)] = m;
      }
      double sum = 0;
      for (int64_t b = 0; b < blocks; ++b) {  // exp(m_b - m): each block's exps relative to the row's max
        block_factor[size_t(b)] = std::exp(double(block_max[size_t(b)] - m));
        sum += block_sum[size_t(b)] * block_factor[size_t(b)];
      }
      const Acc lse = Acc(double(m) + std::log(sum));
      lse_out[r] = R(lse);
      const int64_t target = t[r];
      const bool counted = target != a.ignore_index;
      const Acc scale = counted ? (w ? Acc(w[r]) : Acc(1)) * inv_w : Acc(0);
      if (counted)
        row_loss[size_t(r)] =
            double(scale) * (double(lse) - double(widen<Acc>(x[r * V + target])) + double(z) * lse * lse);
      // d logits = scale (1 + 2 z lse) softmax(x) - scale [i = target], softmax(x) = e exp(m_b - m) / sum
      const double row_scale = double(scale) * (1.0 + 2.0 * double(z) * double(lse)) / sum;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t i0 = b * kLogitBlock, n = std::min(kLogitBlock, V - i0);
        const Acc p_scale = Acc(row_scale * block_factor[size_t(b)]);
        Acc* eb = e + i0;
        T* db = dr + i0;
        if constexpr (std::is_same_v<T, Acc>) {
          for (int64_t i = 0; i < n; ++i) db[i] = p_scale * eb[i];
        } else {  // the products in place, then narrowed as a row (natively where the CPU can)
          for (int64_t i = 0; i < n; ++i) eb[i] *= p_scale;
          narrow_row(eb, db, n);
        }
        if (counted && target >= i0 && target < i0 + n) {
          const Acc p = std::is_same_v<T, Acc> ? widen<Acc>(db[target - i0]) : eb[target - i0];  // p_scale e
          db[target - i0] = narrow<T>(p - scale);
        }
      }
    }
  });
  double loss = 0;
  for (double v : row_loss) loss += v;
  outs[0].data<R>()[0] = R(loss);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
