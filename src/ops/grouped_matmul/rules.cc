// grouped_matmul's vjp and jvp. Both ops are bilinear, and each one's derivatives are the pair again:
//   y = grouped_matmul(a, b):   da = grouped_matmul(dy, b, !tb);  db = weight_grad(a, dy) ((G,K,N)),
//                               or weight_grad(dy, a) ((G,N,K)) with transpose_b;
//   w = weight_grad(x, y):      dx = grouped_matmul(y, dw, tb);   dy = grouped_matmul(x, dw);
// the sizes are counts, with no derivative.
#include <optional>

#include "ops/grouped_matmul/grouped_matmul.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation GroupedMatmul::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> GroupedMatmul::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule GroupedMatmul::vjp(const Args& args) {
  const SavedTensor a(args.a, "grouped_matmul"), b(args.b, "grouped_matmul");
  const Tensor sizes = args.sizes;
  const bool tb = args.transpose_b, weight_grad = args.weight_grad;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    if (weight_grad)
      return {grouped_matmul(b.get(), d[0], sizes, true), grouped_matmul(a.get(), d[0], sizes, false),
              Tensor()};
    // Named phases, as matmul's vjp names them, so a step profile tells the two products apart.
    std::optional<ProfilePhase> phase(std::in_place, "input gradient");
    const Tensor da = grouped_matmul(d[0], b.get(), sizes, !tb);
    phase.emplace("weight gradient");
    const Tensor db = tb ? grouped_matmul_weight_grad(d[0], a.get(), sizes)
                         : grouped_matmul_weight_grad(a.get(), d[0], sizes);
    return {da, db, Tensor()};
  };
}

std::vector<Tensor> GroupedMatmul::jvp(const Args& args, const std::vector<Tensor>&,
                                       const std::vector<Tensor>& t) {
  const auto apply = [&](const Tensor& x, const Tensor& y) {
    return args.weight_grad ? grouped_matmul_weight_grad(x, y, args.sizes)
                            : grouped_matmul(x, y, args.sizes, args.transpose_b);
  };
  Tensor out;
  if (t[0].defined()) out = apply(t[0], args.b);
  if (t[1].defined()) out = add_defined(out, apply(args.a, t[1]));
  return {out};
}

}  // namespace dew::ops
