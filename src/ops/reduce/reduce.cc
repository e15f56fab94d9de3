// Reductions: names, output rule, the registry, cases and public functions.
#include "ops/reduce/reduce.h"

#include <cmath>
#include <limits>

#include "ops/kernel_types.h"
#include "ops/rows.h"

namespace dew::ops {
namespace {

constexpr std::array<std::string_view, 6> kNames{"sum", "mean", "max", "min", "logsumexp", "argmax"};

}  // namespace

std::string_view reduce_name(ReduceFn f) {
  return kNames[size_t(f)];
}

ReduceFn reduce_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return ReduceFn(i);
  fail("'{}' is not a reduction; expected one of {}", name, fmt::join(kNames, ", "));
}

std::optional<ReducedRun> reduced_run(const ReduceArgs& a) {
  if (!a.x.is_contiguous()) return std::nullopt;
  const std::vector<int64_t> axes = normalize_axes(a.axes, a.x.dim(), reduce_name(a.fn).data());
  const int64_t first = axes.empty() ? 0 : axes.front(), last = axes.empty() ? a.x.dim() - 1 : axes.back();
  if (!axes.empty() && last - first + 1 != int64_t(axes.size())) return std::nullopt;  // not one run
  ReducedRun run;
  for (int64_t d = 0; d < a.x.dim(); ++d)
    (d < first ? run.outer : d > last ? run.inner : run.reduced) *= a.x.size(d);
  return run;
}

select::Requirement<ReduceArgs> reduced_run_requirement(ReducedRunKind kind) {
  const bool rows = kind == ReducedRunKind::rows;
  return {rows ? "reduced axes one run of contiguous x, to its last axis"
               : "fn other than argmax, reduced axes one run of contiguous x, some axis after it",
          [rows](const ReduceArgs& a) {
            const std::optional<ReducedRun> run = reduced_run(a);
            return (rows || a.fn != ReduceFn::argmax) && run && (run->inner == 1) == rows;
          },
          [rows](const ReduceArgs& a) {
            if (!rows && a.fn == ReduceFn::argmax) return std::string("fn is argmax");
            if (!reduced_run(a))
              return std::string("x is not contiguous, or its reduced axes are not consecutive");
            return std::string(rows ? "the reduced axes end before the last axis (cpu.columns' case)"
                                    : "the reduced axes end at the last axis (cpu.rows' case)");
          }};
}

std::vector<OutputSpec> Reduce::infer(const Args& a) {
  const char* op = reduce_name(a.fn).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()), "[{}] x is {}; expected a floating dtype", op, a.x.describe());
  auto axes = normalize_axes(a.axes, a.x.dim(), op);
  for (int64_t ax : axes)
    DEW_REQUIRE(a.x.size(ax) > 0 || a.fn == ReduceFn::sum || a.fn == ReduceFn::mean,
                "[{}] axis {} of {} is empty; expected a non-empty axis for {}", op, ax, a.x.describe(), op);
  Shape s;
  for (int64_t d = 0; d < a.x.dim(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      s.push_back(a.x.size(d));
    else if (a.keepdim)
      s.push_back(1);
  }
  return {{s, a.fn == ReduceFn::argmax ? DType::i64 : a.dtype()}};
}

const select::Registry<ReduceArgs>& Reduce::registry() {
  static const select::Registry<ReduceArgs> r = [] {
    select::Registry<ReduceArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_reduce_cuda, reg);
    avx512::add_reduce_rows_cpu(reg);
    avx512::add_reduce_columns_cpu(reg);
    avx2::add_reduce_rows_cpu(reg);
    avx2::add_reduce_columns_cpu(reg);
    add_reduce_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<ReduceArgs>> Reduce::cases(std::string_view op) {
  ReduceFn fn = reduce_from_name(op);
  auto make = [fn](Shape s, std::vector<int64_t> axes, bool keepdim) {
    return [=](DType t, RandomKey k) { return ReduceArgs{random_input(s, t, k, 3.0), axes, keepdim, fn}; };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  if (fn == ReduceFn::argmax)
    return {{"last_axis", {"ci"}, all, make({6, 500}, {-1}, false)},
            {"first_axis_keepdim", {"ci", "edge"}, all, make({33, 5, 2}, {0}, true)}};
  return {{"last_axis", {"ci"}, all, make({6, 500}, {-1}, false)},
          {"leading_axes", {"ci"}, all, make({4, 9, 70}, {0, 1}, false)},
          {"leading_axes_large", {"bench"}, all, make({16, 64, 768}, {0, 1}, false)},
          {"middle_axis_keepdim", {"ci", "edge"}, all, make({4, 77, 3}, {1}, true)},
          {"two_axes", {"ci"}, all, make({5, 6, 7}, {0, 2}, false)},
          {"all_axes", {"ci"}, all, make({9, 130}, {}, false)},
          {"long_row", {"ci"}, all, make({2, 8192}, {-1}, false)},
          {"rows_in_pieces", {"ci"}, all, make({2, 20000}, {-1}, false)},  // NOTE [reductions in pieces]
          {"last_axis_large", {"bench"}, all, make({4096, 768}, {-1}, false)}};
}

}  // namespace dew::ops

namespace dew {
namespace {
Tensor reduce(ops::ReduceFn fn, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return ops::run_op<ops::Reduce>(ops::ReduceArgs{x, axes, keepdim, fn})[0];
}
}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ops::ReduceFn::sum, x, axes, keepdim);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ops::ReduceFn::mean, x, axes, keepdim);
}
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ops::ReduceFn::max, x, axes, keepdim);
}
Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ops::ReduceFn::min, x, axes, keepdim);
}
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ops::ReduceFn::logsumexp, x, axes, keepdim);
}
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  return reduce(ops::ReduceFn::argmax, x, {axis}, keepdim);
}

}  // namespace dew
