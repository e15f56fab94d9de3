// The optimizer ops have no derivatives: they step state outside the graph (run under no grad), and
// run_op refuses them on an input that needs a derivative rather than give a silent zero.
#include "ops/optimizer/optimizer.h"

namespace dew::ops {

Differentiation OptimizerUpdate::differentiation(std::string_view) {
  return Differentiation::non_differentiable;
}

Differentiation SquaredNorm::differentiation(std::string_view) {
  return Differentiation::non_differentiable;
}

}  // namespace dew::ops
