// rope rotates pairs of x by position-dependent angles: linear in x, so its jvp is rope of the
// tangent and its vjp is the inverse rotation (rope with the sines negated). The tables are inputs
// without gradients: a table that needs one is refused.
#include "ops/rope/rope.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation Rope::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Rope::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Rope::vjp(const Args& a) {
  for (const Tensor* table : {&a.cos, &a.sin})
    DEW_REQUIRE(!detail::needs_grad(*table),
                "[rope] the table {} needs a gradient, which is not written; detach() it", table->describe());
  const SavedTensor positions(a.positions, "rope"), cos(a.cos, "rope"), sin(a.sin, "rope");
  const RopeLayout layout = a.layout;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    return {rope(d[0], positions.get(), {cos.get(), neg(sin.get())}, layout), Tensor(), Tensor(), Tensor()};
  };
}

std::vector<Tensor> Rope::jvp(const Args& a, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  DEW_REQUIRE(!t[2].defined() && !t[3].defined(), "[rope] a table carries a tangent, which is not written");
  return {t[0].defined() ? rope(t[0], a.positions, {a.cos, a.sin}, a.layout) : Tensor()};
}

}  // namespace dew::ops
