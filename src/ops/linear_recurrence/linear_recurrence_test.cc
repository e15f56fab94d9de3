// linear_recurrence's own tests beyond OpSuite: values worked by hand for each update, a prefill then
// single decode steps through the returned state equal to the whole, packed documents equal to separate
// calls, the final state's derivatives against central differences, and refusals by name.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/recurrence_ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <cmath>

#include "error_of.h"
#include "gate/rule_gate.h"
#include "routes.h"
#include "select/requirements.h"

namespace dew {
namespace {

Tensor f64(std::vector<double> v, Shape s) {
  return Tensor::from_values(v, s, DType::f64);
}

Tensor normal(Shape s, uint64_t stream, DType t = DType::f32, double scale = 1) {
  Tensor x = Tensor::empty(s, t);
  fill_normal(x, {7, stream, 0}, 0, scale);
  return x;
}

TEST(LinearRecurrence, ValuesOfEachUpdateWorkedByHand) {
  // One head, K = V = 1, q = k = 1, v = 1, 2, 3, scale 1.
  const Tensor one = f64({1, 1, 1}, {1, 3, 1, 1}), v = f64({1, 2, 3}, {1, 3, 1, 1});
  const Tensor half = f64({std::log(0.5), std::log(0.5), std::log(0.5)}, {1, 3, 1});
  const Tensor beta = f64({0.5, 0.5, 0.5}, {1, 3, 1});
  const RecurrenceOptions unit{.scale = 1};
  // Additive with decay 1/2: S = 1, 1/2 + 2, 5/4 + 3.
  EXPECT_EQ(linear_recurrence(one, one, v, half, {}, {}, unit).out.to_f64_vector(),
            (std::vector<double>{1, 2.5, 4.25}));
  // Delta rule, beta 1/2: S += (v - S) / 2: 1/2, 1/2 + 3/4, 5/4 + 7/8.
  EXPECT_EQ(linear_recurrence(one, one, v, {}, beta, {}, unit).out.to_f64_vector(),
            (std::vector<double>{0.5, 1.25, 2.125}));
  // Gated delta rule from the state 4: S~ = S / 2, then S~ + (v - S~) / 2: 3/2, 11/8, 59/32.
  const RecurrenceResult r = linear_recurrence(one, one, v, half, beta, f64({4}, {1, 1, 1, 1}), unit);
  EXPECT_EQ(r.out.to_f64_vector(), (std::vector<double>{1.5, 1.375, 1.84375}));
  EXPECT_EQ(r.state.to_f64_vector(), (std::vector<double>{1.84375}));
  // The default scale is 1/sqrt(K): K = 4 halves the output.
  const Tensor q4 = f64({1, 0, 0, 0}, {1, 1, 1, 4}), k4 = f64({2, 0, 0, 0}, {1, 1, 1, 4});
  EXPECT_EQ(linear_recurrence(q4, k4, f64({3}, {1, 1, 1, 1})).out.to_f64_vector(), (std::vector<double>{3}));
}

// The inputs of one gated delta-rule call (GDN's), T tokens.
struct Sequence {
  Tensor q, k, v, gate, beta;
  Sequence part(int64_t t0, int64_t t1) const {
    const auto cut = [&](const Tensor& x) { return x.slice(1, t0, t1).contiguous(); };
    return {cut(q), cut(k), cut(v), cut(gate), cut(beta)};
  }
  RecurrenceResult run(const Tensor& initial = {}, const RecurrenceOptions& o = {}) const {
    return linear_recurrence(q, k, v, gate, beta, initial, o);
  }
};
Sequence sequence(int64_t T, uint64_t stream) {
  const int64_t B = 2, H = 3, K = 8, V = 5;
  return {normal({B, T, H, K}, stream), normal({B, T, H, K}, stream + 1, DType::f32, 0.3),
          normal({B, T, H, V}, stream + 2),
          mul(abs(normal({B, T, H}, stream + 3)), Tensor::full({}, -0.1, DType::f32)),
          sigmoid(normal({B, T, H}, stream + 4))};
}

TEST(LinearRecurrence, APrefillThenDecodeStepsThroughTheStateEqualTheWhole) {
  // Token by token (the selector's choice, and portable), every split is the same arithmetic.
  for (const std::string pin : {"", "linear_recurrence:portable"}) {
    gate::ScopedImplOverrides pinned(pin);
    const Sequence x = sequence(11, 1);
    const RecurrenceResult whole = x.run();
    RecurrenceResult r = x.part(0, 6).run();
    std::vector<Tensor> outs{r.out};
    for (int64_t t = 6; t < 11; ++t) {
      r = x.part(t, t + 1).run(r.state);
      outs.push_back(r.out);
    }
    EXPECT_EQ(concat(outs, 1).to_f64_vector(), whole.out.to_f64_vector()) << pin;
    EXPECT_EQ(r.state.to_f64_vector(), whole.state.to_f64_vector()) << pin;
  }
}

// The chunked implementation of this CPU's best tier, or empty where it has none.
std::string chunked_tier() {
  if (select::cpu_supports(select::Isa::avx512)) return "cpu.avx512.chunked_64";
  if (select::cpu_supports(select::Isa::avx2)) return "cpu.avx2.chunked_64";
  return "";
}

TEST(LinearRecurrence, APrefillContinuesThroughTheStateAtAChunkBoundary) {
  // In chunks of 64: a prompt of 64 tokens, then 6 more from its state, is the whole sequence's
  // arithmetic chunk for chunk.
  if (chunked_tier().empty()) GTEST_SKIP() << "no CPU tier here";
  gate::ScopedImplOverrides pinned("linear_recurrence:" + chunked_tier());
  const Sequence x = sequence(70, 11);
  RecurrenceResult whole, first, rest;
  EXPECT_ROUTE("linear_recurrence", chunked_tier(), whole = x.run());
  first = x.part(0, 64).run(), rest = x.part(64, 70).run(first.state);
  EXPECT_EQ(concat({first.out, rest.out}, 1).to_f64_vector(), whole.out.to_f64_vector());
  EXPECT_EQ(rest.state.to_f64_vector(), whole.state.to_f64_vector());
}

// A row packing documents of the given lengths equals each document run alone: the state restarts at
// each start and no decay crosses one.
void expect_packed_equal_separate(const std::vector<int64_t>& lengths) {
  int64_t T = 0;
  std::vector<double> ids;
  for (size_t d = 0; d < lengths.size(); ++d)
    for (int64_t i = 0; i < lengths[d]; ++i, ++T) ids.push_back(double(7 * d + 3));
  const Sequence x = sequence(T, 21).part(0, T);
  RecurrenceOptions packed;
  packed.segments = Tensor::from_values(ids, {1, T}, DType::i64).expand({2, T}).contiguous();
  const Tensor whole = x.run({}, packed).out;
  std::vector<Tensor> docs;
  int64_t t0 = 0;
  for (int64_t n : lengths) docs.push_back(x.part(t0, t0 + n).run().out), t0 += n;
  EXPECT_EQ(whole.to_f64_vector(), concat(docs, 1).to_f64_vector());
}

TEST(LinearRecurrence, PackedDocumentsEqualSeparateCalls) {
  expect_packed_equal_separate({4, 1, 6});  // the selector's choice, token by token
  {
    gate::ScopedImplOverrides pinned("linear_recurrence:portable");
    expect_packed_equal_separate({4, 1, 6});
  }
  if (chunked_tier().empty()) return;
  // In chunks, a document of one token runs token by token alone: documents of 2 and more here.
  gate::ScopedImplOverrides pinned("linear_recurrence:" + chunked_tier());
  expect_packed_equal_separate({4, 2, 5});
}

// <d state, final state> through the vjp and the jvp, against central differences in float64.
TEST(LinearRecurrence, TheFinalStatesDerivativesMatchCentralDifferences) {
  const int64_t B = 1, T = 9, H = 2, K = 3, V = 4;
  std::vector<Tensor> x{normal({B, T, H, K}, 21, DType::f64),
                        normal({B, T, H, K}, 22, DType::f64, 0.5),
                        normal({B, T, H, V}, 23, DType::f64),
                        mul(abs(normal({B, T, H, K}, 24, DType::f64)), Tensor::full({}, -0.1, DType::f64)),
                        sigmoid(normal({B, T, H}, 25, DType::f64)),
                        normal({B, H, K, V}, 26, DType::f64)};
  std::vector<Tensor> dir;
  for (size_t i = 0; i < x.size(); ++i) dir.push_back(normal(x[i].shape(), 30 + i, DType::f64));
  const Tensor w = normal({B, H, K, V}, 40, DType::f64);
  const auto state_of = [](const std::vector<Tensor>& a) {
    return linear_recurrence(a[0], a[1], a[2], a[3], a[4], a[5]).state;
  };
  const auto moved = [&](double h) {
    std::vector<Tensor> a;
    for (size_t i = 0; i < x.size(); ++i)
      a.push_back(add(x[i], mul(dir[i], Tensor::full({}, h, DType::f64))));
    return sum(mul(state_of(a), w)).to_f64_vector()[0];
  };
  const double h = 1e-5, difference = (moved(h) - moved(-h)) / (2 * h);
  std::vector<Tensor> leaves;
  for (const Tensor& t : x) leaves.push_back(t.detach().requires_grad_());
  backward(sum(mul(state_of(leaves), w)));
  double through_vjp = 0;
  for (size_t i = 0; i < x.size(); ++i) through_vjp += sum(mul(leaves[i].grad(), dir[i])).to_f64_vector()[0];
  const JvpResult j =
      jvp([&](const std::vector<Tensor>& a) { return std::vector<Tensor>{state_of(a)}; }, x, dir);
  const double through_jvp = sum(mul(j.tangents[0], w)).to_f64_vector()[0];
  EXPECT_NEAR(through_vjp, difference, 1e-6 * std::fabs(difference));
  EXPECT_NEAR(through_jvp, difference, 1e-6 * std::fabs(difference));
}

TEST(LinearRecurrence, BadArgumentsAreRefusedByName) {
  const Tensor q = Tensor::zeros({2, 5, 3, 4}, DType::f32), v = Tensor::zeros({2, 5, 3, 6}, DType::f32);
  const auto refusal = [](auto f) { return testing::error_of(f); };
  EXPECT_NE(refusal([&] {
              linear_recurrence(q, q, v, Tensor::zeros({2, 5, 4}, DType::f32));
            }).find("expected f32[2,5,3] (one log-decay per head) or f32[2,5,3,4] (one per key)"),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              linear_recurrence(q, q, v, {}, {}, Tensor::zeros({2, 3, 4, 6}, DType::bf16));
            }).find("expected f32[2,3,4,6] (B,H,K,V), the state"),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              linear_recurrence(q, q, Tensor::zeros({2, 4, 3, 6}, DType::f32));
            }).find("expected f32[2,5,3,V] (B,T,H,V)"),
            std::string::npos);
  RecurrenceOptions o;
  o.segments = Tensor::zeros({2, 5}, DType::f32);
  EXPECT_NE(refusal([&] {
              linear_recurrence(q, q, v, {}, {}, {}, o);
            }).find("expected i64[2,5] (B,T) document ids"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
