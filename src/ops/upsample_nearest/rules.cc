// upsample_nearest is linear: its jvp is itself on the tangent, its vjp each f x f block of the
// gradient summed back to the pixel it repeats.
#include "ops/rules_common.h"
#include "ops/upsample_nearest/upsample_nearest.h"

namespace dew::ops {

Differentiation UpsampleNearest::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> UpsampleNearest::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule UpsampleNearest::vjp(const Args& a) {
  const Shape image = a.x.shape();
  const int64_t f = a.factor;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    if (!d[0].defined()) return {Tensor()};
    return {sum(d[0].contiguous().reshape({image[0], image[1], image[2], f, image[3], f}), {3, 5})};
  };
}

std::vector<Tensor> UpsampleNearest::jvp(const Args& a, const std::vector<Tensor>&,
                                         const std::vector<Tensor>& t) {
  if (!t[0].defined()) return {Tensor()};
  return {upsample_nearest(t[0], a.factor)};
}

}  // namespace dew::ops
