// The gate itself must fail what is wrong: an element outside its bound, an unwritten element, an
// implementation less accurate than the portable one, an integer mismatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "gate/gate.h"

namespace dew::gate {
namespace {

struct Fixture {
  std::vector<double> truth;
  ops::Truth t;
  Fixture() {
    for (int i = 0; i < 64; ++i) truth.push_back(1.0 + i / 7.0 + 1e-9 * i);
    t = {Tensor::from_values(truth, {4, 16}, DType::f64), Tensor::from_values(truth, {4, 16}, DType::f64), 1};
  }
  Tensor rounded() const { return Tensor::from_values(truth, {4, 16}, DType::f32); }
};

// A CUDA implementation is gated on the case's own layout: a transposed or permuted input is moved as
// a contiguous copy of its dense order and permuted back there; a sliced one cannot be, and is copied.
TEST(Gate, PermutedInputsKeepTheirLayoutOnTheWayToADevice) {
  const Tensor x = Tensor::full({3, 4, 5}, 1.0, DType::f32);
  const Tensor t = x.permute({2, 0, 1});
  const std::vector<int64_t> order = dense_order(t);
  ASSERT_EQ(order, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_TRUE(t.permute(order).is_contiguous());
  EXPECT_TRUE(t.permute(order).shares_storage_with(x));
  EXPECT_TRUE(dense_order(x.slice(1, 0, 4, 2)).empty());     // a strided slice: not a permutation
  EXPECT_TRUE(dense_order(x.transpose(0, 2)).size() == 3u);  // a transpose is
}

TEST(Gate, PassesTheCorrectlyRoundedResult) {
  Fixture f;
  OutputReport r = compare_output(f.rounded(), f.rounded(), f.t, DType::f32);
  EXPECT_EQ(r.outside_bound, 0);
  EXPECT_EQ(r.rms_ratio(), 1.0);  // candidate and base are the same values
}

TEST(Gate, FailsAnElementBeyondItsCertifiedBound) {
  Fixture f;
  std::vector<double> off = f.truth;
  off[5] *= 1 + 1e-5;  // ~170 ulps in f32
  OutputReport r =
      compare_output(Tensor::from_values(off, {4, 16}, DType::f32), f.rounded(), f.t, DType::f32);
  EXPECT_EQ(r.outside_bound, 1);
  EXPECT_NE(r.first_violation.find("element 5"), std::string::npos) << r.first_violation;
}

TEST(Gate, FailsAnUnwrittenElement) {
  Fixture f;
  Tensor c = f.rounded();
  c.data<float>()[63] = std::nanf("");
  EXPECT_EQ(compare_output(c, f.rounded(), f.t, DType::f32).unwritten, 1);
}

TEST(Gate, FailsACandidateLessAccurateThanThePortableArm) {
  Fixture f;
  // Every element one ulp off in the same direction: within the bound, but worse in RMS than rounding.
  Tensor c = f.rounded();
  for (int i = 0; i < 64; ++i) c.data<float>()[i] = std::nextafter(c.data<float>()[i], INFINITY);
  ops::Truth loose = f.t;
  loose.steps = 8;
  OutputReport r = compare_output(c, f.rounded(), loose, DType::f32);
  EXPECT_EQ(r.outside_bound, 0);
  EXPECT_GT(r.rms_ratio(), 1.5);
  Report rep{"x", "y", "z", DType::f32, 1, true, "", {r}};
  EXPECT_FALSE(rep.passed());
  EXPECT_NE(rep.verdict().find("RMS ratio"), std::string::npos);
}

TEST(Gate, AnExactBaseDemandsAnExactCandidate) {
  Fixture f;
  Tensor exact = Tensor::from_values(f.truth, {4, 16}, DType::f64);
  std::vector<double> tiny = f.truth;
  tiny[0] = std::nextafter(tiny[0], 10.0);
  OutputReport r = compare_output(Tensor::from_values(tiny, {4, 16}, DType::f64), exact, f.t, DType::f64);
  EXPECT_TRUE(std::isinf(r.rms_ratio()));
}

TEST(Gate, IntegerOutputsMatchExactly) {
  Tensor t = Tensor::from_values({1, 2, 3}, {3}, DType::i64),
         c = Tensor::from_values({1, 2, 4}, {3}, DType::i64);
  ops::Truth truth{t, Tensor(), 0};
  EXPECT_EQ(compare_output(c, t, truth, DType::f32).integer_mismatch, 1);
  EXPECT_EQ(compare_output(t, t, truth, DType::f32).integer_mismatch, 0);
}

// A composition (a rule, a model: no magnitude) is judged by the ratios alone: an element where the
// reference arm itself overflowed is not held against the candidate, but a candidate that overflows
// where the arm did not fails.
TEST(Gate, CompositionsWithoutABoundAreJudgedByTheirRatios) {
  Fixture f;
  const ops::Truth no_bound{f.t.value, {}, 1};
  Tensor base = f.rounded(), candidate = f.rounded();
  base.data<float>()[3] = INFINITY;
  candidate.data<float>()[3] = std::nanf("");  // inf - inf where the arm overflowed: no worse
  OutputReport r = compare_output(candidate, base, no_bound, DType::f32);
  EXPECT_EQ(r.outside_bound, 0);
  EXPECT_EQ(r.unwritten, 0);
  EXPECT_LE(r.rms_ratio(), 1.5);
  candidate.data<float>()[9] = INFINITY;
  r = compare_output(candidate, base, no_bound, DType::f32);
  EXPECT_FALSE(r.rms_ratio() <= 1.5);
}

// DEW_GATE_DRAWS caps the draws (the emulation tests use 1); a value outside 1..kMaxDraws is refused
// naming the variable and the range.
TEST(Gate, DrawsAreCappedByTheEnvironmentWithinTheirRange) {
  ::unsetenv("DEW_GATE_DRAWS");
  EXPECT_EQ(gate_max_draws(), kMaxDraws);
  ::setenv("DEW_GATE_DRAWS", "3", 1);
  EXPECT_EQ(gate_max_draws(), 3);
  for (const char* bad : {"0", "65", "two", "3x"}) {
    ::setenv("DEW_GATE_DRAWS", bad, 1);
    try {
      gate_max_draws();
      ADD_FAILURE() << "DEW_GATE_DRAWS=" << bad << " was accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("DEW_GATE_DRAWS"), std::string::npos) << m;
      EXPECT_NE(m.find("from 1 to 64"), std::string::npos) << m;
    }
  }
  ::unsetenv("DEW_GATE_DRAWS");
}

}  // namespace
}  // namespace dew::gate
