// Binary ops: output rule, float64 reference with error magnitudes, portable implementation (any
// dtype, broadcasting through strided rows), cases and the public functions.
#include "ops/binary/binary.h"

#include <cmath>
#include <type_traits>

#include "ops/elementwise.h"
#include "ops/kernel_types.h"

namespace dew::ops {
namespace {

constexpr std::array<std::string_view, 13> kNames{"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                                  "eq",  "ne",  "lt",  "le",  "gt",  "ge"};

template <BinaryFn F, class T>
T binary_apply(T a, T b) {
  if constexpr (F == BinaryFn::add)
    return a + b;
  else if constexpr (F == BinaryFn::sub)
    return a - b;
  else if constexpr (F == BinaryFn::mul)
    return a * b;
  else if constexpr (F == BinaryFn::div)
    return a / b;
  else if constexpr (F == BinaryFn::pow)
    return std::pow(a, b);
  else if constexpr (F == BinaryFn::maximum)
    return (a != a || a > b) ? a : b;  // NaN propagates, as in PyTorch
  else if constexpr (F == BinaryFn::minimum)
    return (a != a || a < b) ? a : b;
  else if constexpr (F == BinaryFn::eq)
    return a == b;
  else if constexpr (F == BinaryFn::ne)
    return a != b;
  else if constexpr (F == BinaryFn::lt)
    return a < b;
  else if constexpr (F == BinaryFn::le)
    return a <= b;
  else if constexpr (F == BinaryFn::gt)
    return a > b;
  else
    return a >= b;
}

// Calls body(std::integral_constant<BinaryFn, f>{}), so loops compile without a switch inside.
template <class Body>
void with_binary_fn(BinaryFn f, Body&& body) {
  switch (f) {
#define DEW_BINARY_CASE(name) \
  case BinaryFn::name:        \
    return body(std::integral_constant<BinaryFn, BinaryFn::name>{});
    DEW_BINARY_CASE(add)
    DEW_BINARY_CASE(sub) DEW_BINARY_CASE(mul) DEW_BINARY_CASE(div) DEW_BINARY_CASE(pow)
        DEW_BINARY_CASE(maximum) DEW_BINARY_CASE(minimum) DEW_BINARY_CASE(eq) DEW_BINARY_CASE(ne)
            DEW_BINARY_CASE(lt) DEW_BINARY_CASE(le) DEW_BINARY_CASE(gt) DEW_BINARY_CASE(ge)
#undef DEW_BINARY_CASE
  }
}

template <class T>
T binary_value(BinaryFn f, T a, T b) {
  T y{};
  with_binary_fn(f, [&](auto fn) { y = binary_apply<decltype(fn)::value>(a, b); });
  return y;
}

template <class T>
void binary_portable(const BinaryArgs& args, Tensor& out) {
  using Acc =
      std::conditional_t<std::is_floating_point_v<T> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>,
                         AccumulatorOf<T>, double>;
  with_binary_fn(args.fn, [&](auto fn) {
    constexpr BinaryFn F = decltype(fn)::value;
    using Out = std::conditional_t<(F >= BinaryFn::eq), bool, T>;
    Out* y = out.data<Out>();
    for_each_row<2>(out.shape(), {args.a, args.b}, [&](const RowView<2>& v, int64_t o) {
      const T* a = static_cast<const T*>(v.in[0]);
      const T* b = static_cast<const T*>(v.in[1]);
      Out* yo = y + o;
      auto put = [&](int64_t i, Acc r) {
        if constexpr (std::is_same_v<Out, bool>)
          yo[i] = r != Acc(0);
        else
          yo[i] = narrow<T>(r);
      };
      if (v.stride[0] == 1 && v.stride[1] == 1)  // contiguous rows: plain loops the compiler vectorizes
        for (int64_t i = 0; i < v.length; ++i) put(i, binary_apply<F>(widen<Acc>(a[i]), widen<Acc>(b[i])));
      else if (v.stride[0] == 1 && v.stride[1] == 0)
        for (int64_t i = 0; i < v.length; ++i) put(i, binary_apply<F>(widen<Acc>(a[i]), widen<Acc>(b[0])));
      else
        for (int64_t i = 0; i < v.length; ++i)
          put(i, binary_apply<F>(widen<Acc>(a[i * v.stride[0]]), widen<Acc>(b[i * v.stride[1]])));
    });
  });
}

}  // namespace

std::string_view binary_name(BinaryFn f) {
  return kNames[size_t(f)];
}

BinaryFn binary_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return BinaryFn(i);
  fail("'{}' is not a binary op; expected one of {}", name, fmt::join(kNames, ", "));
}

std::string Binary::case_label(const Args& a) {
  return fmt::format("{}{}", dtype_name(a.dtype()), a.a.shape() == a.b.shape() ? "" : " broadcast");
}

std::vector<OutputSpec> Binary::infer(const Args& a) {
  const char* op = binary_name(a.fn).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(a.a.dtype() == a.b.dtype(), "[{}] a is {} and b is {}; expected one dtype (cast one first)", op,
              a.a.describe(), a.b.describe());
  if (!is_comparison(a.fn))
    DEW_REQUIRE(is_floating(a.dtype()) || a.fn == BinaryFn::add || a.fn == BinaryFn::sub ||
                    a.fn == BinaryFn::mul || a.fn == BinaryFn::maximum || a.fn == BinaryFn::minimum,
                "[{}] a is {}; expected a floating dtype", op, a.a.describe());
  return {{broadcast_shapes(a.a.shape(), a.b.shape(), op), is_comparison(a.fn) ? DType::boolean : a.dtype()}};
}

std::vector<Truth> Binary::reference(const Args& args) {
  Shape shape = infer(args)[0].shape;
  Tensor a = args.a.expand(shape).contiguous(), b = args.b.expand(shape).contiguous();
  std::vector<double> av = a.to_f64_vector(), bv = b.to_f64_vector(), y(av.size()), m(av.size());
  for (size_t i = 0; i < av.size(); ++i) {
    y[i] = binary_value<double>(args.fn, av[i], bv[i]);
    // One rounding of the exact result, but for add/sub the scale is |a|+|b| (cancellation) and for
    // pow = exp(b log a) the error of log a is amplified by |b log a|.
    if (args.fn == BinaryFn::add || args.fn == BinaryFn::sub)
      m[i] = std::fabs(av[i]) + std::fabs(bv[i]);
    else if (args.fn == BinaryFn::pow)
      m[i] = std::fabs(y[i]) * (1 + std::fabs(bv[i] * std::log(av[i])));
    else
      m[i] = std::fabs(y[i]);
  }
  if (is_comparison(args.fn)) return {{Tensor::from_values(y, shape, DType::boolean), Tensor(), 0}};
  return {{Tensor::from_values(y, shape, DType::f64), Tensor::from_values(m, shape, DType::f64),
           args.fn == BinaryFn::pow ? 4 : 1}};
}

const select::Registry<BinaryArgs>& Binary::registry() {
  static const select::Registry<BinaryArgs> r = [] {
    select::Registry<BinaryArgs> reg;
    reg.add({"portable", {select::on_cpu<BinaryArgs>()}, [](const BinaryArgs& a, std::vector<Tensor>& outs) {
               visit_dtype(a.dtype(), [&](auto zero) { binary_portable<decltype(zero)>(a, outs[0]); });
             }});
    return reg;
  }();
  return r;
}

std::vector<Case<BinaryArgs>> Binary::cases(std::string_view op) {
  BinaryFn fn = binary_from_name(op);
  auto make = [fn](Shape sa, Shape sb) {
    return [=](DType t, RandomKey k) {
      Tensor a = random_input(sa, t, k), b = random_input(sb, t, {k.seed, k.stream + 1});
      if (fn == BinaryFn::pow) a = abs(a);
      if (is_comparison(fn) && sa == sb)  // ties on about half the elements
        b = where(lt(random_input(sb, t, {k.seed, k.stream + 2}), Tensor::zeros(sb, t)), a, b);
      return BinaryArgs{a, b, fn};
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"same_shape", {"ci"}, all, make({16, 300}, {16, 300})},
          {"broadcast_row", {"ci", "edge"}, all, make({7, 5, 33}, {33})},
          {"broadcast_both", {"ci", "edge"}, all, make({6, 1, 9}, {1, 4, 9})},
          {"gpt2_residual", {"bench"}, {DType::f32, DType::bf16}, make({4096, 768}, {4096, 768})}};
}

}  // namespace dew::ops

namespace dew {
namespace {
Tensor binary(ops::BinaryFn fn, const Tensor& a, const Tensor& b) {
  return ops::run_op<ops::Binary>(ops::BinaryArgs{a, b, fn})[0];
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::add, a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::sub, a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::mul, a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::div, a, b);
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::pow, a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::maximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::minimum, a, b);
}
Tensor eq(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::eq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::ne, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::lt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::le, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::gt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return binary(ops::BinaryFn::ge, a, b);
}

}  // namespace dew
