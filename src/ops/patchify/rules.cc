// patchify and unpatchify only move values and are each other's inverse: each one's vjp is the other
// on the gradient, and its jvp is itself on the tangent.
#include "ops/patchify/patchify.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation Patchify::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Patchify::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Patchify::vjp(const Args& a) {
  const int64_t p = a.patch;
  const bool inverse = a.inverse;
  const int64_t H = inverse ? a.height : a.x.size(2), W = inverse ? a.width : a.x.size(3);
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    return {inverse ? patchify(d[0], p) : unpatchify(d[0], p, H, W)};
  };
}

std::vector<Tensor> Patchify::jvp(const Args& a, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  if (!t[0].defined()) return {Tensor()};
  return {a.inverse ? unpatchify(t[0], a.patch, a.height, a.width) : patchify(t[0], a.patch)};
}

}  // namespace dew::ops
