// Layout ops: validation, output rules, the registry, cases and public functions.
#include "ops/layout/layout.h"

#include <cmath>

#include "core/strided.h"

namespace dew::ops {
namespace {

constexpr std::array<std::string_view, 8> kNames{"concat", "split", "pad",  "permute_copy",
                                                 "tril",   "triu",  "fill", "arange"};

}  // namespace

int64_t arange_length(const LayoutArgs& a) {
  return int64_t(std::ceil((a.value - a.start) / a.step));
}

std::vector<const Tensor*> LayoutArgs::inputs() const {
  std::vector<const Tensor*> v;
  for (const Tensor& t : xs) v.push_back(&t);
  return v;
}
std::vector<Tensor*> LayoutArgs::mutable_inputs() {
  std::vector<Tensor*> v;
  for (Tensor& t : xs) v.push_back(&t);
  return v;
}

std::string_view Layout::name(const Args& a) {
  return kNames[size_t(a.fn)];
}

std::vector<OutputSpec> Layout::infer(const Args& a) {
  const char* op = name(a).data();
  if (a.fn == LayoutFn::fill) {
    for (int64_t s : a.ints) DEW_REQUIRE(s >= 0, "[fill] shape {} has a negative size", shape_str(a.ints));
    return {{a.ints, a.out_dtype}};
  }
  if (a.fn == LayoutFn::arange) {
    DEW_REQUIRE(a.step != 0 && std::isfinite(a.start) && std::isfinite(a.value) && std::isfinite(a.step),
                "[arange] start {}, end {}, step {}; expected finite values and a non-zero step", a.start,
                a.value, a.step);
    return {{{std::max<int64_t>(0, arange_length(a))}, a.out_dtype}};
  }
  DEW_REQUIRE(!a.xs.empty(), "[{}] no input; expected at least one tensor", op);
  require_same_device(op, a.inputs());
  const Tensor& x = a.xs[0];
  switch (a.fn) {
    case LayoutFn::concat: {
      const int64_t axis = normalize_axis(a.axis, x.dim(), op);
      Shape s = x.shape();
      s[size_t(axis)] = 0;
      for (const Tensor& t : a.xs) {
        Shape other = t.shape(), expect = x.shape();
        DEW_REQUIRE(t.dtype() == x.dtype() && t.dim() == x.dim(),
                    "[concat] {} and {}; expected one dtype and rank", t.describe(), x.describe());
        other[size_t(axis)] = expect[size_t(axis)] = 0;
        DEW_REQUIRE(other == expect, "[concat] {} and {} differ off axis {}; expected equal sizes there",
                    t.describe(), x.describe(), axis);
        s[size_t(axis)] += t.size(axis);
      }
      return {{s, x.dtype()}};
    }
    case LayoutFn::split: {
      const int64_t axis = normalize_axis(a.axis, x.dim(), op);
      int64_t total = 0;
      std::vector<OutputSpec> out;
      for (int64_t n : a.ints) {
        DEW_REQUIRE(n >= 0, "[split] size {} is negative", n);
        Shape s = x.shape();
        s[size_t(axis)] = n;
        out.push_back({s, x.dtype()});
        total += n;
      }
      DEW_REQUIRE(total == x.size(axis), "[split] sizes [{}] sum to {}; expected the axis length {}",
                  fmt::join(a.ints, ","), total, x.size(axis));
      return out;
    }
    case LayoutFn::pad: {
      DEW_REQUIRE(a.ints.size() % 2 == 0 && int64_t(a.ints.size()) <= 2 * x.dim(),
                  "[pad] {} pad amounts for rank {}; expected (before, after) pairs for at most {} dims",
                  a.ints.size(), x.dim(), x.dim());
      Shape s = x.shape();
      for (size_t p = 0; p < a.ints.size() / 2; ++p) {
        DEW_REQUIRE(a.ints[2 * p] >= 0 && a.ints[2 * p + 1] >= 0,
                    "[pad] pad amounts [{}] have a negative one", fmt::join(a.ints, ","));
        s[s.size() - 1 - p] += a.ints[2 * p] + a.ints[2 * p + 1];
      }
      return {{s, x.dtype()}};
    }
    case LayoutFn::permute_copy:
      return {{x.permute(a.ints).shape(), x.dtype()}};
    default:
      DEW_REQUIRE(x.dim() >= 2, "[{}] x is {}; expected rank >= 2 (..., rows, cols)", op, x.describe());
      return {{x.shape(), x.dtype()}};
  }
}

const select::Registry<LayoutArgs>& Layout::registry() {
  static const select::Registry<LayoutArgs> r = [] {
    select::Registry<LayoutArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_layout_cuda, reg);
    reg.add({"portable", {select::on_cpu<LayoutArgs>()}, layout_copies});  // portable.cc
    return reg;
  }();
  return r;
}

std::vector<Case<LayoutArgs>> Layout::cases(std::string_view op) {
  LayoutFn fn = LayoutFn::concat;
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == op) fn = LayoutFn(i);
  auto make = [fn](std::vector<Shape> shapes, std::vector<int64_t> ints, int64_t axis, double value) {
    return [=](DType t, RandomKey k) {
      LayoutArgs a;
      a.fn = fn, a.ints = ints, a.axis = axis, a.value = value, a.out_dtype = t;
      for (size_t i = 0; i < shapes.size(); ++i)
        a.xs.push_back(random_input(shapes[i], t, {k.seed, k.stream + i}));
      if (fn == LayoutFn::arange) a.start = -3.5, a.step = 0.25;
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  switch (fn) {
    case LayoutFn::concat:
      return {{"three_middle", {"ci"}, all, make({{2, 3, 4}, {2, 5, 4}, {2, 1, 4}}, {}, 1, 0)}};
    case LayoutFn::split:
      return {{"three_last", {"ci"}, all, make({{3, 10}}, {2, 0, 8}, -1, 0)}};
    case LayoutFn::pad:
      return {{"last_two_dims", {"ci"}, all, make({{2, 3, 4}}, {1, 2, 0, 3}, 0, -7.5)}};
    case LayoutFn::permute_copy:
      return {{"bthd_to_bhtd", {"ci"}, all, make({{2, 5, 3, 4}}, {0, 2, 1, 3}, 0, 0)},
              {"gpt2_qkv", {"bench"}, {DType::f32}, make({{4, 1024, 12, 64}}, {0, 2, 1, 3}, 0, 0)}};
    case LayoutFn::tril:
      return {{"diagonal_1", {"ci"}, all, make({{2, 5, 7}}, {}, 1, 0)}};
    case LayoutFn::triu:
      return {{"diagonal_minus_1", {"ci"}, all, make({{2, 6, 4}}, {}, -1, 0)}};
    case LayoutFn::fill:
      return {{"shape_3x5", {"ci"}, all, make({}, {3, 5}, 0, 2.75)}};
    case LayoutFn::arange:
      return {{"quarter_steps", {"ci"}, all, make({}, {}, 0, 6.0)}};
  }
  return {};
}

}  // namespace dew::ops

namespace dew {
namespace {
std::vector<Tensor> layout(ops::LayoutArgs a) {
  return ops::run_op<ops::Layout>(a);
}
ops::LayoutArgs args(ops::LayoutFn fn, std::vector<Tensor> xs, std::vector<int64_t> ints = {},
                     int64_t axis = 0) {
  ops::LayoutArgs a;
  a.fn = fn, a.xs = std::move(xs), a.ints = std::move(ints), a.axis = axis;
  return a;
}
}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  return layout(args(ops::LayoutFn::concat, xs, {}, axis))[0];
}
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  return layout(args(ops::LayoutFn::split, {x}, sizes, axis));
}
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  auto a = args(ops::LayoutFn::pad, {x}, pads);
  a.value = value;
  return layout(a)[0];
}
Tensor permute_copy(const Tensor& x, const std::vector<int64_t>& order) {
  return layout(args(ops::LayoutFn::permute_copy, {x}, order))[0];
}
Tensor tril(const Tensor& x, int64_t diagonal) {
  return layout(args(ops::LayoutFn::tril, {x}, {}, diagonal))[0];
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return layout(args(ops::LayoutFn::triu, {x}, {}, diagonal))[0];
}
Tensor fill(const Shape& shape, double value, DType dtype) {
  auto a = args(ops::LayoutFn::fill, {}, shape);
  a.value = value, a.out_dtype = dtype;
  return layout(a)[0];
}
Tensor arange(double start, double end, double step, DType dtype) {
  auto a = args(ops::LayoutFn::arange, {});
  a.start = start, a.value = end, a.step = step, a.out_dtype = dtype;
  return layout(a)[0];
}

}  // namespace dew
