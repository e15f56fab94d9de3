// timestep_embedding's own tests beyond OpSuite: its values against DiT's formula written out, the
// derivative in t that MeanFlow's jvp needs, and refusals by name.
#include <dew/autodiff.h>
#include <dew/image_ops.h>
#include <gtest/gtest.h>

#include <cmath>

#include "error_of.h"

namespace dew {
namespace {

TEST(TimestepEmbedding, ValuesAreDiTsCosinesThenSines) {
  const Tensor t = Tensor::from_values({0.0, 1.0, 250.0}, {3}, DType::f64);
  const std::vector<double> y = timestep_embedding(t, 5, 10000).to_f64_vector();
  // dim 5: half 2, frequencies 10000^(-0/2) = 1 and 10000^(-1/2) = 0.01; column 4 is zero.
  const std::vector<double> want{1,
                                 1,
                                 0,
                                 0,
                                 0,  //
                                 std::cos(1.0),
                                 std::cos(0.01),
                                 std::sin(1.0),
                                 std::sin(0.01),
                                 0,
                                 std::cos(250.0),
                                 std::cos(2.5),
                                 std::sin(250.0),
                                 std::sin(2.5),
                                 0};
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-15) << i;
}

TEST(TimestepEmbedding, ItsTangentInTimeIsTheDerivative) {
  const Tensor t = Tensor::from_values({0.3, 2.0}, {2}, DType::f64);
  const Tensor v = Tensor::from_values({1.0, -0.5}, {2}, DType::f64);
  const JvpResult r = jvp(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{timestep_embedding(in[0], 4, 100)}; },
      {t}, {v});
  const std::vector<double> got = r.tangents[0].to_f64_vector();
  // d/dt cos(t f) = -f sin(t f), d/dt sin(t f) = f cos(t f), f = 1 and 0.1, times the tangent.
  const double f[2] = {1.0, 0.1}, tv[2] = {0.3, 2.0}, vv[2] = {1.0, -0.5};
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(got[size_t(b * 4 + i)], -f[i] * std::sin(tv[b] * f[i]) * vv[b], 1e-15);
      EXPECT_NEAR(got[size_t(b * 4 + 2 + i)], f[i] * std::cos(tv[b] * f[i]) * vv[b], 1e-15);
    }
}

TEST(TimestepEmbedding, BadArgumentsAreRefusedByName) {
  EXPECT_NE(testing::error_of([] {
              timestep_embedding(Tensor::zeros({2, 1}, DType::f32), 8);
            }).find("expected a floating vector of times (B)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              timestep_embedding(Tensor::zeros({2}, DType::f32), 1);
            }).find("dim 1; expected at least 2"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
