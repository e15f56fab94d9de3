// Reductions built once per tier (NOTE [instruction-set regions]). cpu.<tier>.columns: sum and mean
// over leading axes, a contiguous (rows, n) view summed down its columns — a bias's gradient, a batch mean —
// without moving the reduced axes last (the portable path's transposed copy). Each output adds its
// inputs in the portable order (row 0, 1, ...), so the results are the portable path's, bit for bit;
// threads split the columns. cpu.<tier>.rows: argmax over the last axis (argmax_rows).
#include <algorithm>
#include <vector>

#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/reduce/reduce.h"
#include "ops/rows.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

template <class T>
void sum_columns(const ReduceArgs& a, int64_t rows, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t n = a.x.numel() / rows;
  const T* x = a.x.data<T>();
  T* y = out.data<T>();
  const bool mean = a.fn == ReduceFn::mean;
  parallel_for(n, 64, [&](int64_t j0, int64_t j1) {
    std::vector<Acc> acc(size_t(j1 - j0), Acc(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * n + j0;
      for (int64_t j = 0; j < j1 - j0; ++j) acc[size_t(j)] += widen<Acc>(row[j]);
    }
    for (int64_t j = j0; j < j1; ++j)
      y[j] = narrow<T>(mean ? acc[size_t(j - j0)] / Acc(rows) : acc[size_t(j - j0)]);
  });
}

// argmax over a contiguous last axis, row by row: the maximum by a vectorizable pass, then the first
// index holding it, found block by block. A row with a NaN takes the portable rule (the first NaN
// wins, as in PyTorch), so every result is the portable path's.
template <class T>
void argmax_rows(const ReduceArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t n = a.x.size(-1), rows = a.x.numel() / n;
  const T* x = a.x.data<T>();
  int64_t* y = out.data<int64_t>();
  constexpr int64_t kBlock = 64;
  parallel_for(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = x + r * n;
      // Per-lane maxima and NaN flags: each lane is its own select, which vectorizes; one reduction
      // (a select over lanes) would not. The maximum's value is the same in any order.
      constexpr int64_t kLanes = 16;
      Acc lane[kLanes];
      int32_t lane_nan[kLanes] = {};
      for (int64_t l = 0; l < kLanes; ++l) lane[l] = widen<Acc>(row[0]);
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) {
          const Acc v = widen<Acc>(row[i + l]);
          lane_nan[l] |= int32_t(v != v);
          lane[l] = v > lane[l] ? v : lane[l];
        }
      Acc best = lane[0];
      bool nan = false;
      for (int64_t l = 0; l < kLanes; ++l) {
        nan |= lane_nan[l] != 0;
        best = lane[l] > best ? lane[l] : best;
      }
      for (; i < n; ++i) {
        const Acc v = widen<Acc>(row[i]);
        nan |= v != v;
        best = v > best ? v : best;
      }
      int64_t at = 0;
      if (nan) {
        while (widen<Acc>(row[at]) == widen<Acc>(row[at])) ++at;
      } else {
        int64_t block = 0;
        for (; block < n; block += kBlock) {
          bool found = false;
          for (int64_t j = block; j < std::min(n, block + kBlock); ++j) found |= widen<Acc>(row[j]) == best;
          if (found) break;
        }
        at = block;
        while (widen<Acc>(row[at]) != best) ++at;
      }
      y[r] = at;
    }
  });
}

}  // namespace
DEW_ISA_END

void add_reduce_cpu(select::Registry<ReduceArgs>& r) {
  // The leading axes' product (the rows summed), or 0 when the call is not such a reduction.
  static const auto leading_rows = [](const ReduceArgs& a) -> int64_t {
    if (a.fn != ReduceFn::sum && a.fn != ReduceFn::mean) return 0;
    const std::vector<int64_t> axes = normalize_axes(a.axes, a.x.dim(), "reduce");
    if (axes.empty() || int64_t(axes.size()) >= a.x.dim() || !a.x.is_contiguous()) return 0;
    int64_t rows = 1;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] != int64_t(i)) return 0;
      rows *= a.x.size(int64_t(i));
    }
    return rows;
  };
  const select::Requirement<ReduceArgs> leading{
      "sum or mean over leading axes of contiguous x, some axis kept",
      [](const ReduceArgs& a) -> std::optional<std::string> {
        if (leading_rows(a) > 0) return std::nullopt;
        return std::string("not a sum or mean over the leading axes of a contiguous input");
      }};
  add_cpu_f32_bf16<ReduceArgs>(
      r,
      [](auto t, const ReduceArgs& a, std::vector<Tensor>& outs) {
        sum_columns<decltype(t)>(a, leading_rows(a), outs[0]);
      },
      {leading}, "columns");
  const select::Requirement<ReduceArgs> last_axis{
      "argmax over the last axis of contiguous x", [](const ReduceArgs& a) -> std::optional<std::string> {
        const std::vector<int64_t> axes = normalize_axes(a.axes, a.x.dim(), "argmax");
        if (a.fn == ReduceFn::argmax && a.x.dim() >= 1 && a.x.is_contiguous() && axes.size() == 1 &&
            axes[0] == a.x.dim() - 1 && a.x.size(-1) > 0)
          return std::nullopt;
        return std::string("not an argmax over the last axis of a contiguous input");
      }};
  add_cpu_f32_bf16<ReduceArgs>(
      r, [](auto t, const ReduceArgs& a, std::vector<Tensor>& outs) { argmax_rows<decltype(t)>(a, outs[0]); },
      {last_axis}, "rows");
}

}  // namespace dew::ops::DEW_KERNEL_NS
