// Reductions over a run of axes that ends at the last one, built once per tier (NOTE [instruction-set
// regions]): cpu.<tier>.rows reads x in place as (rows, n) and reduces each row on FloatVec, in pieces
// (NOTE [reductions in pieces]); f32, bf16 and f16. sum, mean, max, min and logsumexp on FloatVec;
// argmax by a vectorizable maximum, then its first index. Every result keeps the portable path's
// special values: max and min return a row's first NaN, logsumexp its infinite maximum, argmax its
// first NaN.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/reduce/reduce.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

// NOTE [reductions in pieces]
// A row is reduced in pieces of kPiece elements, the pieces spread over the threads, and their results
// are combined in the row's order: a long row (a sum over every axis) takes every thread, and the
// result is the same whatever the number of threads, since the pieces do not depend on it. A piece
// (64 KB of f32) stays in L2 between logsumexp's two passes, its maximum and its exps.
constexpr int64_t kPiece = 16384;

// The sum of x[0..n) in kVecWidth lanes of four partials.
template <class T>
float row_sum_vec(const T* x, int64_t n) {
  FloatVec s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int64_t i = 0;
  for (; i + 4 * kVecWidth <= n; i += 4 * kVecWidth) {
    s0 += load_vec(x + i), s1 += load_vec(x + i + kVecWidth);
    s2 += load_vec(x + i + 2 * kVecWidth), s3 += load_vec(x + i + 3 * kVecWidth);
  }
  for (; i + kVecWidth <= n; i += kVecWidth) s0 += load_vec(x + i);
  if (i < n) s1 += load_vec(x + i, int(n - i));  // its other lanes read as 0
  return lanes_sum((s0 + s1) + (s2 + s3));
}

// The sum of exp(x[i] - m) over x[0..n), m finite, in one vector of partials (the exp's constants take
// most of the 16 ymm registers: a second vector of partials was kept on the stack, for no gain).
template <class T>
float row_exp_sum_vec(const T* x, int64_t n, float m) {
  const FloatVec mv = m;
  FloatVec s = 0.0f;
  int64_t i = 0;
#if DEW_HAS_F32X16
  if constexpr (std::is_same_v<T, bf16>)  // NOTE [bf16 maps by even and odd]: a sum takes them in any order
    for (; i + 2 * kVecWidth <= n; i += 2 * kVecWidth) {
      const auto [even, odd] = load_even_odd(x + i);
      s += exp_nonpositive_rounding_to<T>(even, mv) + exp_nonpositive_rounding_to<T>(odd, mv);
    }
#endif
  for (; i + kVecWidth <= n; i += kVecWidth) s += exp_nonpositive_rounding_to<T>(load_vec(x + i), mv);
  if (i < n)
    s += keep_first_lanes(exp_nonpositive_rounding_to<T>(load_vec(x + i, int(n - i)), mv), int(n - i));
  return lanes_sum(s);
}

// The first NaN of x[0..n) (n > 0, x holding one).
template <class T>
float first_nan(const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (widen<float>(x[i]) != widen<float>(x[i])) return widen<float>(x[i]);
  return widen<float>(x[n - 1]);
}

// part[r * pieces + k] = value(r, piece, length) for every piece k of every row r, over the threads.
template <class T, class Value>
void for_each_piece(const T* x, int64_t rows, int64_t n, int64_t pieces, float* part, Value&& value) {
  const int64_t grain = std::max<int64_t>(1, kPiece / std::max<int64_t>(1, std::min(n, kPiece)));
  parallel_for(rows * pieces, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t r = p / pieces, begin = (p % pieces) * kPiece;
      part[p] = value(r, x + r * n + begin, std::min(kPiece, n - begin));
    }
  });
}

template <class T>
void reduce_rows(const ReduceArgs& a, const ReducedRun& run, Tensor& out) {
  const int64_t rows = run.outer, n = run.reduced, pieces = std::max<int64_t>(1, (n + kPiece - 1) / kPiece);
  const T* x = a.x.data<T>();
  T* y = out.data<T>();
  Scratch<float> part(rows * pieces);
  const auto row_parts = [&](int64_t r) { return part.data() + r * pieces; };
  switch (a.fn) {
    case ReduceFn::sum:
    case ReduceFn::mean:
      for_each_piece(x, rows, n, pieces, part.data(),
                     [](int64_t, const T* p, int64_t k) { return row_sum_vec(p, k); });
      for (int64_t r = 0; r < rows; ++r) {
        float s = 0;
        for (int64_t k = 0; k < pieces; ++k) s += row_parts(r)[k];
        y[r] = narrow<T>(a.fn == ReduceFn::mean ? s / float(n) : s);
      }
      return;
    case ReduceFn::max:
    case ReduceFn::min: {
      const bool max = a.fn == ReduceFn::max;
      for_each_piece(x, rows, n, pieces, part.data(), [max](int64_t, const T* p, int64_t k) {
        const RowExtreme e = max ? row_extreme_vec<true, true>(p, k) : row_extreme_vec<false, true>(p, k);
        return e.nan ? first_nan(p, k) : e.value;
      });
      for (int64_t r = 0; r < rows; ++r) {
        float m = row_parts(r)[0];
        for (int64_t k = 1; k < pieces && m == m; ++k) {  // a piece's NaN is the row's first
          const float v = row_parts(r)[k];
          m = v != v || (max ? v > m : v < m) ? v : m;
        }
        y[r] = narrow<T>(m);
      }
      return;
    }
    case ReduceFn::logsumexp: {
      // The row's maximum first (NaN passed over), then the exps' sum against it, as the portable path.
      for_each_piece(x, rows, n, pieces, part.data(),
                     [](int64_t, const T* p, int64_t k) { return row_max_vec(p, k); });
      Scratch<float> m(rows, -std::numeric_limits<float>::infinity());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < pieces; ++k) m[size_t(r)] = std::max(m[size_t(r)], row_parts(r)[k]);
      for_each_piece(x, rows, n, pieces, part.data(), [&m](int64_t r, const T* p, int64_t k) {
        return std::isinf(m[size_t(r)]) ? 0.0f : row_exp_sum_vec(p, k, m[size_t(r)]);
      });
      for (int64_t r = 0; r < rows; ++r) {
        float s = 0;
        for (int64_t k = 0; k < pieces; ++k) s += row_parts(r)[k];
        const float mr = m[size_t(r)];
        y[r] = narrow<T>(std::isinf(mr) ? mr : mr + std::log(s));
      }
      return;
    }
    case ReduceFn::argmax:
      break;
  }
}

// argmax of each row, row by row: the maximum by a vectorizable pass, then the first index holding it,
// found block by block. A row with a NaN takes the portable rule (the first NaN wins, as in PyTorch),
// so every result is the portable path's.
template <class T>
void argmax_rows(const ReduceArgs& a, const ReducedRun& run, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t n = run.reduced, rows = run.outer;
  const T* x = a.x.data<T>();
  int64_t* y = out.data<int64_t>();
  constexpr int64_t kBlock = 64;
  parallel_for(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = x + r * n;
      const RowExtreme e = row_extreme_vec<true, true>(row, n);
      int64_t at = 0;
      if (e.nan) {
        while (widen<Acc>(row[at]) == widen<Acc>(row[at])) ++at;
      } else {
        int64_t block = 0;
        for (; block < n; block += kBlock) {
          bool found = false;
          for (int64_t j = block; j < std::min(n, block + kBlock); ++j)
            found |= widen<Acc>(row[j]) == e.value;
          if (found) break;
        }
        at = block;
        while (widen<Acc>(row[at]) != e.value) ++at;
      }
      y[r] = at;
    }
  });
}

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

namespace dew::ops::DEW_KERNEL_NS {

void add_reduce_rows_cpu(select::Registry<ReduceArgs>& r) {
  add_cpu_f32_bf16<ReduceArgs, true>(
      r,
      [](auto t, const ReduceArgs& a, std::vector<Tensor>& outs) {
        const ReducedRun run = *reduced_run(a);
        if (a.fn == ReduceFn::argmax)
          argmax_rows<decltype(t)>(a, run, outs[0]);
        else
          reduce_rows<decltype(t)>(a, run, outs[0]);
      },
      {reduced_run_requirement(ReducedRunKind::rows)}, "rows");
}

}  // namespace dew::ops::DEW_KERNEL_NS
