// The names of an enumeration's values (samplers, objectives), one list per enumeration, read both
// ways: a name to its value (an unknown one refused, listing those that exist) and back.
#pragma once

#include <dew/error.h>

#include <span>
#include <string>

namespace dew::diffusion::detail {

template <class E>
E value_named(std::span<const char* const> names, const std::string& name, const char* what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (name == names[i]) return E(i);
  fail("[diffusion] {} \"{}\"; expected one of {}", what, name, fmt::join(names, ", "));
}

}  // namespace dew::diffusion::detail
