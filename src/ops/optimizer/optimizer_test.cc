// The optimizer ops beyond what the gate draws: the public functions write the parameter and state in
// place with the bits of a run into fresh outputs; squared_norm gives the same bits at any thread count
// and on every CPU tier; bad state is refused by name.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"
#include "ops/optimizer/optimizer.h"
#include "routes.h"

namespace dew::ops {
namespace {

Tensor draw(const Shape& shape, uint64_t stream, double scale = 1.0) {
  return random_input(shape, DType::f32, {17, stream, 0}, scale);
}

// The selected implementation run into fresh outputs, as the gate runs it.
std::vector<Tensor> fresh(const OptimizerUpdateArgs& a) {
  std::vector<Tensor> outs = allocate_outputs<OptimizerUpdate>(a);
  OptimizerUpdate::registry().select(OptimizerUpdate::name(a), a, OptimizerUpdate::case_label(a)).run(a, outs);
  return outs;
}

TEST(OptimizerUpdate, InPlaceGivesTheBitsOfFreshOutputs) {
  const Shape shape{70001};  // several parallel chunks and a tail
  const Tensor g = draw(shape, 1, 0.1);
  {
    Tensor p = draw(shape, 2), m = draw(shape, 3, 0.1), v = square(draw(shape, 4, 0.1));
    const AdamWStep step{.lr = 1e-2, .weight_decay = 0.1, .step = 3};
    const std::vector<Tensor> expected = fresh({p, g, {m, v}, step});
    adamw_update(p, g, m, v, step);
    EXPECT_EQ(p.to_f64_vector(), expected[0].to_f64_vector());
    EXPECT_EQ(m.to_f64_vector(), expected[1].to_f64_vector());
    EXPECT_EQ(v.to_f64_vector(), expected[2].to_f64_vector());
  }
  {
    Tensor p = draw(shape, 5), buffer = draw(shape, 6, 0.1);
    const SgdStep step{.lr = 1e-2, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true, .first = false};
    const std::vector<Tensor> expected = fresh({p, g, {buffer}, step});
    sgd_update(p, g, buffer, step);
    EXPECT_EQ(p.to_f64_vector(), expected[0].to_f64_vector());
    EXPECT_EQ(buffer.to_f64_vector(), expected[1].to_f64_vector());
  }
  {
    Tensor p = draw(shape, 7), m = draw(shape, 8, 0.1);
    const LionStep step{.lr = 1e-3, .weight_decay = 0.1};
    const std::vector<Tensor> expected = fresh({p, g, {m}, step});
    lion_update(p, g, m, step);
    EXPECT_EQ(p.to_f64_vector(), expected[0].to_f64_vector());
    EXPECT_EQ(m.to_f64_vector(), expected[1].to_f64_vector());
  }
}

TEST(OptimizerUpdate, ATransposedGradientIsReadInLogicalOrder) {
  Tensor p = draw({5, 7}, 1), q = p.clone(), m = draw({5, 7}, 2, 0.1), n = m.clone();
  const Tensor g = draw({7, 5}, 3, 0.1).transpose(0, 1);
  lion_update(p, g, m, {.lr = 0.5});
  lion_update(q, g.contiguous(), n, {.lr = 0.5});
  EXPECT_EQ(p.to_f64_vector(), q.to_f64_vector());
}

TEST(OptimizerUpdate, RefusesStateOfAnotherShapeOrAMissingBuffer) {
  Tensor p = draw({4, 4}, 1), m = draw({4, 4}, 2), v = draw({16}, 3), none;
  const Tensor g = draw({4, 4}, 4);
  EXPECT_NE(testing::error_of([&] { adamw_update(p, g, m, v, {}); })
                .find("[adamw_update] a state tensor is f32[16] (cpu); expected the parameter's shape"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { sgd_update(p, g, none, {.momentum = 0.9}); })
                .find("expected a buffer exactly when momentum > 0"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { adamw_update(p, g, m, m, {.step = 0}); }).find("1-based step"),
            std::string::npos);
}

TEST(SquaredNorm, TheSameBitsAtAnyThreadCountAndOnEveryTier) {
  const Tensor x = draw({5 * 16384 + 1234}, 9);
  const int threads = num_threads();
  std::vector<double> sums;
  for (int t : {1, 2}) {
    set_num_threads(t);
    for (const char* impl : {"portable", "cpu.avx2", "cpu.avx512"}) {
      set_impl_overrides(std::string("squared_norm:") + impl);
      try {
        sums.push_back(squared_norm(x).to_f64_vector()[0]);
      } catch (const Error&) {  // a tier this CPU lacks
      }
    }
  }
  set_impl_overrides("");
  set_num_threads(threads);
  ASSERT_GE(sums.size(), 2u);
  for (double s : sums) EXPECT_EQ(s, sums[0]);
}

}  // namespace
}  // namespace dew::ops
