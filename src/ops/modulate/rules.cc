// modulate (y = x (1 + s) + h) and gated_add (y = r + g v) are linear in each input, so their rules
// are the ops themselves and sums over T: modulate's vjp gives d (1 + s), sum_T d and sum_T d x; its
// jvp is x' (1 + s) + h' + x s' = gated_add(modulate(x', h', s), x, s'). gated_add's vjp gives d,
// d g and sum_T d v; its jvp is gated_add(gated_add(r', v, g'), v', g).
#include "ops/modulate/modulate.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

Tensor or_zeros(const Tensor& t, const Tensor& like) {
  return t.defined() ? t : Tensor::zeros(like.shape(), like.dtype(), like.device());
}

}  // namespace

Differentiation Modulate::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Modulate::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Modulate::vjp(const Args& a) {
  const char* op = name(a).data();
  if (a.fn == ModulateFn::modulate) {
    const SavedTensor x(a.x, op), scale(a.b, op);
    return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
      const Tensor &g = d[0], &s = scale.get();
      return {mul(g, add(scalar_like(1.0, s), s).unsqueeze(1)), sum(g, {1}), sum(mul(g, x.get()), {1})};
    };
  }
  const SavedTensor y(a.y, op), gate(a.a, op);
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor& g = d[0];
    return {g, mul(g, gate.get().unsqueeze(1)), sum(mul(g, y.get()), {1})};
  };
}

std::vector<Tensor> Modulate::jvp(const Args& a, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  if (a.fn == ModulateFn::modulate) {  // inputs x, shift, scale
    Tensor out = modulate(or_zeros(t[0], a.x), or_zeros(t[1], a.a), a.b);
    if (t[2].defined()) out = gated_add(out, a.x, t[2]);
    return {out};
  }
  Tensor out = or_zeros(t[0], a.x);  // inputs residual, y, gate
  if (t[2].defined()) out = gated_add(out, a.y, t[2]);
  if (t[1].defined()) out = gated_add(out, t[1], a.a);
  return {out};
}

}  // namespace dew::ops
