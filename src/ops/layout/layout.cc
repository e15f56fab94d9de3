// Layout ops: validation, output rules, the portable implementation (strided copies through
// core's copy_strided), float64 references, cases and public functions.
#include "ops/layout/layout.h"

#include <cmath>

#include "core/strided.h"

namespace dew::ops {

Tensor padded_interior(const Tensor& out, const LayoutArgs& a) {
  Tensor v = out;
  for (size_t p = 0; p < a.ints.size() / 2; ++p) {
    int64_t d = out.dim() - 1 - int64_t(p);
    v = v.slice(d, a.ints[2 * p], out.size(d) - a.ints[2 * p + 1]);
  }
  return v;
}

namespace {

constexpr std::array<std::string_view, 8> kNames{"concat", "split", "pad",  "permute_copy",
                                                 "tril",   "triu",  "fill", "arange"};

int64_t arange_length(const LayoutArgs& a) {
  return int64_t(std::ceil((a.value - a.start) / a.step));
}

// The region of `out` that input k of concat (or output k of split) occupies, as a view.
Tensor piece(const Tensor& whole, int64_t axis, int64_t begin, int64_t length) {
  return whole.slice(axis, begin, begin + length);
}

void copy_into(const Tensor& src, const Tensor& dst) {
  detail::copy_strided(src, dst);
}

}  // namespace

void layout_copies(const LayoutArgs& a, std::vector<Tensor>& outs) {
  switch (a.fn) {
    case LayoutFn::concat: {
      const int64_t axis = normalize_axis(a.axis, a.xs[0].dim(), "concat");
      int64_t at = 0;
      for (const Tensor& x : a.xs) copy_into(x, piece(outs[0], axis, at, x.size(axis))), at += x.size(axis);
      return;
    }
    case LayoutFn::split: {
      const int64_t axis = normalize_axis(a.axis, a.xs[0].dim(), "split");
      int64_t at = 0;
      for (size_t k = 0; k < outs.size(); ++k)
        copy_into(piece(a.xs[0], axis, at, a.ints[k]), outs[k]), at += a.ints[k];
      return;
    }
    case LayoutFn::pad: {
      outs[0].fill(a.value);
      copy_into(a.xs[0], padded_interior(outs[0], a));
      return;
    }
    case LayoutFn::permute_copy:
      return copy_into(a.xs[0].permute(a.ints), outs[0]);
    case LayoutFn::tril:
    case LayoutFn::triu: {
      copy_into(a.xs[0], outs[0]);
      DEW_REQUIRE(outs[0].device().kind == Device::Kind::cpu, "[{}] layout_copies zeroes on the cpu only",
                  kNames[size_t(a.fn)]);
      const int64_t R = outs[0].size(-2), C = outs[0].size(-1),
                    mats = outs[0].numel() / std::max<int64_t>(R * C, 1);
      const size_t es = dtype_size(outs[0].dtype());
      char* p = static_cast<char*>(outs[0].raw_data());
      for (int64_t m = 0; m < mats; ++m)
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < C; ++j)
            if (a.fn == LayoutFn::tril ? j > i + a.axis : j < i + a.axis)
              std::memset(p + size_t((m * R + i) * C + j) * es, 0, es);  // all-zero bits are 0 in every dtype
      return;
    }
    case LayoutFn::fill:
      return outs[0].fill(a.value);
    case LayoutFn::arange: {
      std::vector<double> v(static_cast<size_t>(outs[0].numel()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = a.start + double(i) * a.step;
      Tensor t = Tensor::from_values(v, outs[0].shape(), outs[0].dtype());
      std::memcpy(outs[0].raw_data(), t.raw_data(), size_t(t.numel()) * dtype_size(t.dtype()));
      return;
    }
  }
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

std::vector<Truth> Layout::reference(const Args& a) {
  // Each output element by its own multi-index arithmetic: independent of copy_strided and views.
  std::vector<OutputSpec> specs = infer(a);
  std::vector<Truth> truths;
  auto unravel = [](int64_t i, const Shape& s) {
    std::vector<int64_t> at(s.size());
    for (size_t d = s.size(); d-- > 0;) at[d] = i % s[d], i /= s[d];
    return at;
  };
  auto ravel = [](const std::vector<int64_t>& at, const Shape& s) {
    int64_t i = 0;
    for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + at[d];
    return i;
  };
  std::vector<std::vector<double>> xs;
  for (const Tensor& x : a.xs) xs.push_back(x.to_f64_vector());
  for (size_t k = 0; k < specs.size(); ++k) {
    const Shape& s = specs[k].shape;
    std::vector<double> y(static_cast<size_t>(numel_of(s)));
    for (int64_t i = 0; i < int64_t(y.size()); ++i) {  // output elements
      auto at = unravel(i, s);
      double v = 0;
      switch (a.fn) {
        case LayoutFn::concat: {
          const int64_t axis = normalize_axis(a.axis, int64_t(s.size()), "concat");
          size_t t = 0;
          while (at[size_t(axis)] >= a.xs[t].size(axis)) at[size_t(axis)] -= a.xs[t].size(axis), ++t;
          v = xs[t][size_t(ravel(at, a.xs[t].shape()))];
          break;
        }
        case LayoutFn::split: {
          const int64_t axis = normalize_axis(a.axis, int64_t(s.size()), "split");
          for (size_t j = 0; j < k; ++j) at[size_t(axis)] += a.ints[j];
          v = xs[0][size_t(ravel(at, a.xs[0].shape()))];
          break;
        }
        case LayoutFn::pad: {
          bool inside = true;
          for (size_t p = 0; p < a.ints.size() / 2; ++p) {
            size_t d = s.size() - 1 - p;
            at[d] -= a.ints[2 * p];
            inside &= at[d] >= 0 && at[d] < a.xs[0].size(int64_t(d));
          }
          v = inside ? xs[0][size_t(ravel(at, a.xs[0].shape()))] : a.value;
          break;
        }
        case LayoutFn::permute_copy: {
          std::vector<int64_t> src(at.size());
          for (size_t d = 0; d < at.size(); ++d)
            src[size_t(normalize_axis(a.ints[d], int64_t(at.size()), "permute"))] = at[d];
          v = xs[0][size_t(ravel(src, a.xs[0].shape()))];
          break;
        }
        case LayoutFn::tril:
        case LayoutFn::triu: {
          const int64_t r = at[at.size() - 2], c = at.back();
          const bool keep = a.fn == LayoutFn::tril ? c <= r + a.axis : c >= r + a.axis;
          v = keep ? xs[0][size_t(i)] : 0.0;
          break;
        }
        case LayoutFn::fill:
          v = a.value;
          break;
        case LayoutFn::arange:
          v = a.start + double(i) * a.step;
          break;
      }
      y[size_t(i)] = v;
    }
    if (is_floating(specs[k].dtype))
      truths.push_back({Tensor::from_values(y, s, DType::f64), Tensor::zeros(s, DType::f64), 0});
    else
      truths.push_back({Tensor::from_values(y, s, specs[k].dtype), Tensor(), 0});
  }
  return truths;
}

const select::Registry<LayoutArgs>& Layout::registry() {
  static const select::Registry<LayoutArgs> r = [] {
    select::Registry<LayoutArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_layout_cuda, reg);
    reg.add({"portable", {select::on_cpu<LayoutArgs>()}, layout_copies});
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
