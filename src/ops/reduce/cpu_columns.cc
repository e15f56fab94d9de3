// Reductions over a run of axes followed by kept ones, built once per tier (NOTE [instruction-set
// regions]): cpu.<tier>.columns reads x in place as (outer, rows, n) and reduces down each column — a
// bias's gradient, a batch mean, a max over a middle axis — without the portable path's transposed
// copy; threads split the columns; f32, bf16 and f16 on FloatVec. sum, mean, max and min take each
// column's rows in the portable order (row 0, 1, ...), so their results are the portable path's bit for
// bit; logsumexp's maximum too, then its exps by exp_nonpositive_rounding_to<T>. (argmax stays portable
// here.)
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/reduce/reduce.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

// y[j] = fn over r of x[r * n + j] for the V kVecWidth columns j of x (the last vector's first `tail`
// lanes only), each column's rows in order; the V vectors side by side, so a row's line is read once.
template <int V, class T>
[[gnu::always_inline]] inline void reduce_column_vectors(ReduceFn fn, const T* x, int64_t rows, int64_t n,
                                                         int tail, T* y) {
  const auto load = [&](int64_t r, int v) __attribute__((always_inline)) {
    const T* p = x + r * n + v * kVecWidth;
    return v == V - 1 && tail < kVecWidth ? load_vec(p, tail) : load_vec(p);
  };
  FloatVec a[V];
  for (int v = 0; v < V; ++v) a[v] = 0.0f;
  switch (fn) {
    case ReduceFn::sum:
    case ReduceFn::mean:
      for (int64_t r = 0; r < rows; ++r)
        for (int v = 0; v < V; ++v) a[v] += load(r, v);
      if (fn == ReduceFn::mean)
        for (int v = 0; v < V; ++v) a[v] = a[v] / FloatVec(float(rows));
      break;
    case ReduceFn::max:
    case ReduceFn::min:
      for (int v = 0; v < V; ++v) a[v] = load(0, v);
      for (int64_t r = 1; r < rows; ++r)
        for (int v = 0; v < V; ++v) {
          // The portable rule: a better value, or the first NaN (which stays).
          const FloatVec x_r = load(r, v),
                         better = select(fn == ReduceFn::max ? x_r > a[v] : x_r < a[v], x_r, a[v]);
          a[v] = select(x_r == x_r, better, select(a[v] == a[v], x_r, a[v]));
        }
      break;
    case ReduceFn::logsumexp: {
      // Each column's maximum (NaN passed over), then its exps' sum against it, as the portable path;
      // an infinite maximum is the result (exp(x - m) is NaN there).
      FloatVec s[V];
      for (int v = 0; v < V; ++v) a[v] = -std::numeric_limits<float>::infinity(), s[v] = 0.0f;
      for (int64_t r = 0; r < rows; ++r)
        for (int v = 0; v < V; ++v) a[v] = max_skipping_nan(a[v], load(r, v));
      for (int64_t r = 0; r < rows; ++r)
        for (int v = 0; v < V; ++v) s[v] += exp_nonpositive_rounding_to<T>(load(r, v), a[v]);
      for (int v = 0; v < V; ++v) {
        alignas(64) float m[kVecWidth], sum[kVecWidth];
        store_vec(m, a[v]), store_vec(sum, s[v]);
        for (int l = 0; l < kVecWidth; ++l) m[l] = std::isinf(m[l]) ? m[l] : m[l] + std::log(sum[l]);
        a[v] = load_vec(m);
      }
      break;
    }
    case ReduceFn::argmax:
      return;
  }
  for (int v = 0; v < V; ++v) {
    const int lanes = v == V - 1 ? tail : kVecWidth;
    if (rows_on_float_vec<T>()) {
      store_vec(y + v * kVecWidth, a[v], lanes);
    } else {  // bf16 on an AVX-512 CPU without vcvtneps2bf16
      alignas(64) float f[kVecWidth];
      store_vec(f, a[v]);
      for (int l = 0; l < lanes; ++l) y[v * kVecWidth + l] = narrow<T>(f[l]);
    }
  }
}

// One block of `width` columns of a (rows, n) array: four vectors at a time (a 64-byte line of bf16 or
// f16 rows on F32x16), then one.
template <class T>
void reduce_column_block(ReduceFn fn, const T* x, int64_t rows, int64_t n, int64_t width, T* y) {
  constexpr int64_t W = kVecWidth;
  int64_t j = 0;
  for (; j + 4 * W <= width; j += 4 * W) reduce_column_vectors<4>(fn, x + j, rows, n, int(W), y + j);
  for (; j < width; j += W) reduce_column_vectors<1>(fn, x + j, rows, n, int(std::min(W, width - j)), y + j);
}

template <class T>
void reduce_columns(const ReduceArgs& a, const ReducedRun& run, Tensor& out) {
  constexpr int64_t kBlock = 64;  // columns a thread takes at least, and reduces together
  const int64_t rows = run.reduced, n = run.inner;
  const T* x = a.x.data<T>();
  T* y = out.data<T>();
  parallel_for(run.outer * n, kBlock, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1;) {  // c = b * n + j: column j of outer index b
      const int64_t b = c / n, j = c % n, width = std::min({kBlock, n - j, c1 - c});
      reduce_column_block(a.fn, x + b * rows * n + j, rows, n, width, y + c);
      c += width;
    }
  });
}

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

namespace dew::ops::DEW_KERNEL_NS {

void add_reduce_columns_cpu(select::Registry<ReduceArgs>& r) {
  add_cpu_f32_bf16<ReduceArgs, true>(
      r,
      [](auto t, const ReduceArgs& a, std::vector<Tensor>& outs) {
        reduce_columns<decltype(t)>(a, *reduced_run(a), outs[0]);
      },
      {reduced_run_requirement(ReducedRunKind::columns)}, "columns");
}

}  // namespace dew::ops::DEW_KERNEL_NS
