// Reductions over a run of axes followed by kept ones, built once per tier (NOTE [instruction-set
// regions]): cpu.<tier>.columns reads x in place as (outer, rows, n) and reduces down each column — a
// bias's gradient, a batch mean, a max over a middle axis — without the portable path's transposed
// copy; threads split the columns; f32, bf16 and f16. sum, mean, max and min take each column's rows in
// the portable order (row 0, 1, ...), so their results are the portable path's bit for bit;
// logsumexp's maximum too, then its exps on FloatVec. (argmax stays portable here.)
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu_tier.h"
#include "ops/float_vec.h"
#include "ops/kernel_types.h"
#include "ops/reduce/reduce.h"
#include "ops/scratch.h"
#include "ops/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

// y[j] = fn over r of x[r * n + j] for j in [0, width): one block of columns of a (rows, n) array.
// The column loops over j are independent, so the compilers vectorize them without reassociating.
template <class T>
void reduce_column_block(ReduceFn fn, const T* x, int64_t rows, int64_t n, int64_t width, T* y, float* acc,
                         float* sums) {
  switch (fn) {
    case ReduceFn::sum:
    case ReduceFn::mean:
      std::fill(acc, acc + width, 0.0f);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < width; ++j) acc[j] += widen<float>(x[r * n + j]);
      for (int64_t j = 0; j < width; ++j)
        y[j] = narrow<T>(fn == ReduceFn::mean ? acc[j] / float(rows) : acc[j]);
      return;
    case ReduceFn::max:
    case ReduceFn::min:
      for (int64_t j = 0; j < width; ++j) acc[j] = widen<float>(x[j]);
      for (int64_t r = 1; r < rows; ++r)
        for (int64_t j = 0; j < width; ++j) {
          const float v = widen<float>(x[r * n + j]), best = acc[j];
          // The portable rule: a better value, or the first NaN (which stays).
          const bool better = fn == ReduceFn::max ? v > best : v < best;
          acc[j] = (better | ((v != v) & (best == best))) ? v : best;
        }
      for (int64_t j = 0; j < width; ++j) y[j] = narrow<T>(acc[j]);
      return;
    case ReduceFn::logsumexp: {
      // Each column's maximum (NaN passed over), then its exps' sum against it, as the portable path.
      std::fill(acc, acc + width, -std::numeric_limits<float>::infinity());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < width; ++j) acc[j] = std::max(acc[j], widen<float>(x[r * n + j]));
      std::fill(sums, sums + width, 0.0f);
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = x + r * n;
        int64_t j = 0;
        for (; j + kVecWidth <= width; j += kVecWidth)
          store_vec(sums + j, load_vec(sums + j) + exp_f32(load_vec(row + j) - load_vec(acc + j)));
        if (j < width) {
          const int k = int(width - j);
          store_vec(sums + j, load_vec(sums + j, k) + exp_f32(load_vec(row + j, k) - load_vec(acc + j, k)),
                    k);
        }
      }
      // An infinite maximum is the result (exp(x - m) is NaN there), as on the portable path.
      for (int64_t j = 0; j < width; ++j)
        y[j] = narrow<T>(std::isinf(acc[j]) ? acc[j] : acc[j] + std::log(sums[j]));
      return;
    }
    case ReduceFn::argmax:
      return;
  }
}

template <class T>
void reduce_columns(const ReduceArgs& a, const ReducedRun& run, Tensor& out) {
  constexpr int64_t kBlock = 64;  // columns a thread takes at least, and reduces together
  const int64_t rows = run.reduced, n = run.inner;
  const T* x = a.x.data<T>();
  T* y = out.data<T>();
  parallel_for(run.outer * n, kBlock, [&](int64_t c0, int64_t c1) {
    float acc[kBlock], sums[kBlock];
    for (int64_t c = c0; c < c1;) {  // c = b * n + j: column j of outer index b
      const int64_t b = c / n, j = c % n, width = std::min({kBlock, n - j, c1 - c});
      reduce_column_block(a.fn, x + b * rows * n + j, rows, n, width, y + c, acc, sums);
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
