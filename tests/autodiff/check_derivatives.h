// The test-side wrapper of derivative_failures (tests/harness/derivative_check.h): each failure an
// EXPECT failure.
#pragma once

#include <gtest/gtest.h>

#include "gate/derivative_check.h"

namespace dew::testing {

inline void check_derivatives(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs,
                              bool forward_mode = true) {
  for (const std::string& failure : derivative_failures(what, f, inputs, {}, forward_mode))
    ADD_FAILURE() << failure;
}

// The same with only the inputs marked differentiable moved (the others stay constants).
inline void check_derivatives(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs,
                              const std::vector<bool>& differentiable) {
  for (const std::string& failure : derivative_failures(what, f, inputs, differentiable))
    ADD_FAILURE() << failure;
}

}  // namespace dew::testing
