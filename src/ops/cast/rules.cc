// cast: between floating dtypes the gradient is cast back (the rounding's derivative is taken as 1,
// as PyTorch and JAX do); to or from an integer dtype nothing flows.
#include "ops/cast/cast.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation Cast::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Cast::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Cast::vjp(const Args& args) {
  const DType from = args.x.dtype();
  return [from](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    return {is_floating(from) && is_floating(d[0].dtype()) ? cast(d[0], from) : Tensor()};
  };
}

std::vector<Tensor> Cast::jvp(const Args& args, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  return {is_floating(args.to) ? cast(t[0], args.to) : Tensor()};
}

}  // namespace dew::ops
