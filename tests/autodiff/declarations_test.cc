// Every op in src/ops/ops.def says how it is differentiated (an op type without a differentiation()
// does not compile here): rules, unless listed by name as non-differentiable or composite, so a new
// op cannot skip its rules silently.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ops/op_headers.h"  // every op folder of ops.def (generated)

namespace dew::ops {
namespace {

struct Declared {
  std::string op;
  Differentiation how;
};

TEST(Differentiation, EveryOpDeclaresHowItIsDifferentiated) {
#define DEW_OP(name, folder, Type) {#name, Type::differentiation(#name)},
  const std::vector<Declared> declared = {
#include "ops/ops.def"
  };
#undef DEW_OP
  const std::set<std::string> non_differentiable{
      "eq",           "ne",         "lt",          "le",           "gt",
      "ge",           "argmax",     "one_hot",     "fill",         "arange",
      "adamw_update", "sgd_update", "lion_update", "squared_norm", "paged_attention"};
  // Differentiated through the ops they are made of (NOTE [attention's higher derivatives];
  // group_norm.h); the recurrence's derivative ops have no second derivatives yet, and a call that
  // would need one is refused by name (linear_recurrence.h).
  const std::set<std::string> composite{"attention_backward", "attention_jvp", "group_norm_backward",
                                        "linear_recurrence_backward", "linear_recurrence_jvp"};
  for (const Declared& d : declared) {
    if (non_differentiable.count(d.op))
      EXPECT_EQ(d.how, Differentiation::non_differentiable) << d.op;
    else if (composite.count(d.op))
      EXPECT_EQ(d.how, Differentiation::composite) << d.op;
    else
      EXPECT_EQ(d.how, Differentiation::rules) << d.op << " has no rules; write them or list it";
  }
}

}  // namespace
}  // namespace dew::ops
