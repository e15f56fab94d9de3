// cross_entropy's vjp uses the d_logits the op already computed (d loss / d logits), scaled by the
// incoming gradient; lse's gradient is softmax. Its jvp: loss' = <d_logits, logits'>, lse' =
// <softmax, logits'>. d_logits is a first derivative that is not differentiated further: a gradient
// reaching it is refused, and it carries no tangent. Per-token weights must not need a gradient.
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

Tensor softmax_from_lse(const Tensor& logits, const Tensor& lse) {
  return exp(sub(logits, cast(lse, logits.dtype()).unsqueeze(-1)));
}

}  // namespace

Differentiation CrossEntropy::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> CrossEntropy::vjp_reads_outputs(const Args&) {
  return {false, true, true};
}

VjpRule CrossEntropy::vjp(const Args& a) {
  DEW_REQUIRE(!a.weights.defined() || !detail::needs_grad(a.weights),
              "[cross_entropy] weights {} need a gradient, which is not written; detach() them",
              a.weights.describe());
  const SavedTensor logits(a.logits, "cross_entropy");
  const bool weighted = a.weights.defined();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
    DEW_REQUIRE(!d[1].defined(),
                "[cross_entropy] a gradient reached its d_logits output; second derivatives of cross_entropy "
                "are not written yet");
    const Tensor& x = logits.get();
    Tensor dx;
    if (d[0].defined()) dx = mul(outs[1], cast(d[0], x.dtype()));
    if (d[2].defined())
      dx = add_defined(dx, mul(softmax_from_lse(x, outs[2]), cast(d[2], x.dtype()).unsqueeze(-1)));
    std::vector<Tensor> grads{dx, Tensor()};
    if (weighted) grads.push_back(Tensor());
    return grads;
  };
}

std::vector<Tensor> CrossEntropy::jvp(const Args& a, const std::vector<Tensor>& outs,
                                      const std::vector<Tensor>& t) {
  DEW_REQUIRE(!a.weights.defined() || !detail::tangent_of(a.weights).defined(),
              "[cross_entropy] weights {} carry a tangent, which is not written; detach() them",
              a.weights.describe());
  if (!t[0].defined()) return {};
  const DType r = outs[0].dtype();
  const Tensor loss = cast(sum(mul(outs[1], t[0])), r);
  const Tensor lse = cast(sum(mul(softmax_from_lse(a.logits, outs[2]), t[0]), {-1}), r);
  return {loss, Tensor(), lse};
}

}  // namespace dew::ops
