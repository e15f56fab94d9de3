// What the diffusion files share: an enumeration's value by name (samplers, objectives; an unknown
// name refused, listing those that exist), and a tensor scaled by a number.
#pragma once

#include <dew/error.h>
#include <dew/ops.h>

#include <span>
#include <string>

namespace dew::diffusion::detail {

template <class E>
E value_named(std::span<const char* const> names, const std::string& name, const char* what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (name == names[i]) return E(i);
  fail("[diffusion] {} \"{}\"; expected one of {}", what, name, fmt::join(names, ", "));
}

// c x, the scalar in x's dtype and on its device.
inline Tensor scaled(const Tensor& x, double c) {
  return mul(x, Tensor::full({}, c, x.dtype(), x.device()));
}

}  // namespace dew::diffusion::detail
