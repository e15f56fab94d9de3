// The binary ops' vjp and jvp; gradients are summed back to each input's shape (broadcasting's vjp).
// Comparisons are non-differentiable. maximum and minimum split a tie's gradient evenly (PyTorch).
#include "ops/binary/binary.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

// The partial derivatives' products for one incoming g (gradient or tangent of the output):
// {g * d out/d a, g * d out/d b}, each of the output's shape; y is the output.
std::pair<Tensor, Tensor> partials(BinaryFn f, const Tensor& g, const Tensor& a, const Tensor& b,
                                   const Tensor& y) {
  auto c = [&](double v) { return scalar_like(v, g); };
  auto as_mask = [&](const Tensor& m) { return cast(m, g.dtype()); };
  switch (f) {
    case BinaryFn::add:
      return {g, g};
    case BinaryFn::sub:
      return {g, neg(g)};
    case BinaryFn::mul:
      return {mul(g, b), mul(g, a)};
    case BinaryFn::div: {
      const Tensor ga = div(g, b);
      return {ga, neg(mul(ga, y))};  // d/db (a / b) = -y / b
    }
    case BinaryFn::pow:  // b a^(b-1) and y log(a)
      return {mul(g, mul(b, pow(a, sub(b, c(1))))), mul(g, mul(y, log(a)))};
    case BinaryFn::maximum:
    case BinaryFn::minimum: {
      const Tensor tie = mul(as_mask(eq(a, b)), c(0.5));
      const Tensor a_wins = as_mask(f == BinaryFn::maximum ? gt(a, b) : lt(a, b));
      const Tensor b_wins = as_mask(f == BinaryFn::maximum ? lt(a, b) : gt(a, b));
      return {mul(g, add(a_wins, tie)), mul(g, add(b_wins, tie))};
    }
    default:
      fail("[{}] is not differentiable", binary_name(f));
  }
}

bool reads_output(BinaryFn f) {
  return f == BinaryFn::div || f == BinaryFn::pow;
}

}  // namespace

Differentiation Binary::differentiation(std::string_view op) {
  return is_comparison(binary_from_name(op)) ? Differentiation::non_differentiable : Differentiation::rules;
}

std::vector<bool> Binary::vjp_reads_outputs(const Args& a) {
  return {reads_output(a.fn)};
}

VjpRule Binary::vjp(const Args& args) {
  const BinaryFn f = args.fn;
  const bool keep = f != BinaryFn::add && f != BinaryFn::sub;
  const SavedTensor a = keep ? SavedTensor(args.a, binary_name(f)) : SavedTensor();
  const SavedTensor b = keep ? SavedTensor(args.b, binary_name(f)) : SavedTensor();
  const Shape a_shape = args.a.shape(), b_shape = args.b.shape();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& y) -> std::vector<Tensor> {
    auto [ga, gb] = partials(f, d[0], a.get(), b.get(), y[0]);
    return {sum_to_shape(ga, a_shape), sum_to_shape(gb, b_shape)};
  };
}

std::vector<Tensor> Binary::jvp(const Args& args, const std::vector<Tensor>& outs,
                                const std::vector<Tensor>& t) {
  const Shape& shape = outs[0].shape();
  Tensor ta, tb;
  if (t[0].defined()) ta = partials(args.fn, t[0].expand(shape), args.a, args.b, outs[0]).first;
  if (t[1].defined()) tb = partials(args.fn, t[1].expand(shape), args.a, args.b, outs[0]).second;
  return {add_defined(ta, tb)};
}

}  // namespace dew::ops
