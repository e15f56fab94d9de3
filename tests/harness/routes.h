// Test helper: run a callable and assert the implementation the selector chose for an op.
#pragma once

#include <dew/ops.h>
#include <gtest/gtest.h>

namespace dew::testing {

// The implementations that ran for `op` while f ran (from the route log).
template <class F>
std::vector<std::string> routes_of(const std::string& op, F&& f) {
  reset_routes();
  f();
  std::vector<std::string> impls;
  for (const auto& r : routes())
    if (r.op == op) impls.push_back(r.implementation);
  return impls;
}

#define EXPECT_ROUTE(op, impl, ...) \
  EXPECT_EQ(::dew::testing::routes_of(op, [&] { __VA_ARGS__; }), std::vector<std::string>{impl})

}  // namespace dew::testing
