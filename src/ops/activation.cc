// Names of the activations, for case labels and messages.
#include "ops/activation.h"

namespace dew::ops {

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::none:
      return "none";
    case Activation::relu:
      return "relu";
    case Activation::gelu_erf:
      return "gelu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
    case Activation::silu:
      return "silu";
  }
  return "?";
}

}  // namespace dew::ops
