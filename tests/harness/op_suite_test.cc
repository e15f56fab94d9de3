// OpSuite: every op x CPU implementation x case tagged "ci" x dtype through the float64 gate, as one
// parameterized test each. An implementation that refuses a case on this machine is reported skipped.
// The CUDA implementations go through the same gate in tests/gpu (label gpu).
#include <gtest/gtest.h>

#include <algorithm>

#include "gate/catalog.h"
#include "select/requirements.h"

// NOTE [gate shards]: the parameterized rows are split over DEW_GATE_SHARDS executables by op (op i of
// the catalog in shard i % DEW_GATE_SHARDS): gtest registers every row of an executable at each start
// and ctest starts one process per row, so with every row in one executable each start took ~70 ms,
// half the suite's time. The plain tests are shard 0's.
#ifndef DEW_GATE_SHARDS
#define DEW_GATE_SHARDS 1
#define DEW_GATE_SHARD 0
#endif

namespace dew::gate {
namespace {

bool in_this_shard(const OpEntry& e) {
  return size_t(&e - catalog().data()) % DEW_GATE_SHARDS == DEW_GATE_SHARD;
}

struct GateParam {
  const OpEntry* op;
  std::string impl, case_name;
  DType dtype;
};

// A dtype an implementation refuses on every machine makes no row (a tier's f64, a table's f32): the
// rows left are those that run here or that a CPU without the tier reports skipped.
std::vector<GateParam> all_params() {
  std::vector<GateParam> v;
  for (const auto& e : catalog())
    for (const auto& impl : e.implementations)
      for (const auto& c : e.cases)
        if (in_this_shard(e) && c.has_tag("ci") &&
            implementation_device(impl.name).kind == Device::Kind::cpu)  // CUDA: tests/gpu
          for (DType t : c.dtypes)
            if (impl.dtypes.empty() ||
                std::find(impl.dtypes.begin(), impl.dtypes.end(), t) != impl.dtypes.end())
              v.push_back({&e, impl.name, c.name, t});
  return v;
}

void PrintTo(const GateParam& p, std::ostream* os) {
  *os << p.op->name << "/" << p.impl << "/" << dtype_name(p.dtype) << "/" << p.case_name;
}

class OpSuite : public ::testing::TestWithParam<GateParam> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpSuite);  // a shard may hold no row of it

TEST_P(OpSuite, PassesTheFloat64Gate) {
  const GateParam& p = GetParam();
  Report r = p.op->check(p.impl, p.case_name, p.dtype, gate_seed());
  if (!r.ran) GTEST_SKIP() << r.verdict();
  EXPECT_TRUE(r.passed()) << p.op->name << " " << p.impl << " " << dtype_name(p.dtype) << " " << p.case_name
                          << ": " << r.verdict();
}

std::string param_name(const ::testing::TestParamInfo<GateParam>& info) {
  std::string name = fmt::format("{}_{}_{}_{}", info.param.op->name, info.param.impl,
                                 dtype_name(info.param.dtype), info.param.case_name);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Gate, OpSuite, ::testing::ValuesIn(all_params()), param_name);

// The rule rows: every op with rules, implementation, case tagged "ci" and dtype below f64, its vjp
// and jvp at that precision against float64 (rule_gate.h).
class OpRules : public ::testing::TestWithParam<GateParam> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpRules);  // a shard may hold no row of it

TEST_P(OpRules, PassTheGateAtTheirPrecision) {
  const GateParam& p = GetParam();
  Report r = p.op->rules(p.impl, p.case_name, p.dtype, gate_seed());
  if (!r.ran) GTEST_SKIP() << r.verdict();
  EXPECT_TRUE(r.passed()) << p.op->name << " " << p.impl << " " << dtype_name(p.dtype) << " " << r.case_name
                          << ": " << r.verdict();
}

std::vector<GateParam> rule_params() {
  std::vector<GateParam> v;
  for (const GateParam& p : all_params())
    if (p.dtype != DType::f64) v.push_back(p);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Gate, OpRules, ::testing::ValuesIn(rule_params()), param_name);

// The derivative rows: every op with rules, on every case tagged "ci" that has an f64 dtype, its vjp
// and jvp in float64 against central differences and each other (op_derivatives.h).
struct DerivativeParam {
  const OpEntry* op;
  std::string case_name;
};

std::vector<DerivativeParam> derivative_params() {
  std::vector<DerivativeParam> v;
  for (const auto& e : catalog())
    for (const auto& c : e.cases)
      if (in_this_shard(e) && c.has_tag("ci")) v.push_back({&e, c.name});
  return v;
}

void PrintTo(const DerivativeParam& p, std::ostream* os) {
  *os << p.op->name << "/" << p.case_name;
}

class OpDerivatives : public ::testing::TestWithParam<DerivativeParam> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpDerivatives);  // a shard may hold no row of it

TEST_P(OpDerivatives, MatchCentralDifferencesInFloat64) {
  const DerivativeParam& p = GetParam();
  const uint64_t seed = gate_seed();
  const DerivativeReport r = p.op->derivatives(p.case_name, seed);
  if (!r.ran) GTEST_SKIP() << r.skipped;
  for (const std::string& failure : r.failures) ADD_FAILURE() << failure << " (seed " << seed << ")";
}

std::string derivative_param_name(const ::testing::TestParamInfo<DerivativeParam>& info) {
  std::string name = fmt::format("{}_{}", info.param.op->name, info.param.case_name);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Gate, OpDerivatives, ::testing::ValuesIn(derivative_params()),
                         derivative_param_name);

#if DEW_GATE_SHARD == 0
// Derivative draws that once failed, replayed with their seeds.
TEST(OpDerivativesReplay, SeedsThatOnceFailedPass) {
  // sum over a 10^5-long row: the difference quotient's rounding grows with the row's length, which
  // the first bound (a fixed 16 eps) ignored.
  const DerivativeReport r = find_op("sum")->derivatives("long_row", 25322312304720ull);
  ASSERT_TRUE(r.ran);
  for (const std::string& failure : r.failures) ADD_FAILURE() << failure;
  // matmul with a ReLU epilogue: a pre-activation within a difference step of the kink (the case's bias
  // now keeps every pre-activation clear of it).
  const DerivativeReport relu = find_op("matmul")->derivatives("bias_relu_residual", 5035917235661ull);
  ASSERT_TRUE(relu.ran);
  for (const std::string& failure : relu.failures) ADD_FAILURE() << failure;
}

// Draws that once failed the gate, replayed with their seeds on every implementation this machine runs.
TEST(OpSuiteReplay, SeedsThatOnceFailedPass) {
  struct Replay {
    const char *op, *case_name;
    DType dtype;
    uint64_t seed;
  };
  // cross_entropy's d_logits when one logit dominates each row: a float row sum scaled the whole row
  // by one rounding error (RMS ratio 1.6); the sum is now in double.
  const Replay replays[] = {{"cross_entropy", "large_logits", DType::f32, 15420651931273ull}};
  for (const Replay& r : replays) {
    const OpEntry* e = find_op(r.op);
    ASSERT_NE(e, nullptr) << r.op;
    for (const auto& impl : e->implementations) {
      Report rep = e->check(impl.name, r.case_name, r.dtype, r.seed);
      if (!rep.ran) continue;
      EXPECT_TRUE(rep.passed()) << r.op << " " << impl.name << " seed " << r.seed << ": " << rep.verdict();
    }
  }
}

// Rule rows that once failed, replayed: pow's jvp in f16 where an intermediate overflows to inf - inf
// in both arms (it was counted as an unwritten element), and a composition's worst row.
TEST(OpRulesReplay, SeedsThatOnceFailedPass) {
  const Report r = find_op("pow")->rules("portable", "same_shape", DType::f16, 31294305552221ull);
  ASSERT_TRUE(r.ran);
  EXPECT_TRUE(r.passed()) << r.verdict();
  // pow's d_b = sum of g y log a on bases drawn near 0, where one a^b of 1e4 or more held two thirds of a
  // row's squared error and the tiers' log, rounded otherwise than libm's at that one element, made the
  // RMS ratio 1.64-1.76 (the case now draws bases from 1/2 up).
  for (const auto& [impl, seed] :
       {std::pair{"portable", 1623408ull}, std::pair{"portable", 21999282979074ull}}) {
    const Report p = find_op("pow")->rules(impl, "broadcast_row", DType::f32, seed);
    ASSERT_TRUE(p.ran);
    EXPECT_TRUE(p.passed()) << p.verdict();
  }
  // Worst rows of compositions over too few draws: attention's dv for one query token (2.7x over
  // sixteen; borderline rows now draw more before they are judged), attention's dq (forward on cpu.avx2,
  // backward on flash_gemm; 2.24x over four draws).
  const Report d = find_op("attention")->rules("portable", "decode_one_token", DType::f32, 33621751211676ull);
  EXPECT_TRUE(d.passed()) << d.verdict();
  if (!select::cpu_supports(select::Isa::avx2)) return;  // the rest replay the tiers
  const Report a = find_op("attention")->rules("cpu.avx2", "causal_gqa", DType::f32, 32352306982896ull);
  ASSERT_TRUE(a.ran);
  EXPECT_TRUE(a.passed()) << a.verdict();
  // logsumexp over all axes: its jvp's one element set the draws to kMaxDraws, so the vjp, judged over
  // eight, was never drawn more when one draw's lse rounding gave it an RMS ratio of 2.96.
  const Report s = find_op("logsumexp")->rules("cpu.avx2.rows", "all_axes", DType::f32, 6074289ull);
  ASSERT_TRUE(s.ran);
  EXPECT_TRUE(s.passed()) << s.verdict();
  // Found on cpu.avx512 and replayed on the widest tier this CPU has: log_softmax's tangent on large
  // logits (2.06x over eight draws) and, over sixteen, exp's vjp on rows of 1000 (2.22x).
  const std::string tier = select::cpu_supports(select::Isa::avx512) ? "cpu.avx512" : "cpu.avx2";
  const Report l = find_op("log_softmax")->rules(tier, "large_logits", DType::f32, 33226363265319ull);
  ASSERT_TRUE(l.ran);
  EXPECT_TRUE(l.passed()) << l.verdict();
  const Report e = find_op("exp")->rules(tier, "rows_1000", DType::f32, 33422288220400ull);
  ASSERT_TRUE(e.ran);
  EXPECT_TRUE(e.passed()) << e.verdict();
  // exp's jvp on rows of 1000 through the avx2 tier, where exp_f32 before its sixteenths form (0.66 ulp)
  // missed an element that dominated the draws' RMS (ratio 1.59); 1.00 since (NOTE [compensated exp]).
  const Report x = find_op("exp")->rules("cpu.avx2", "rows_1000", DType::f32, 1233135988066ull);
  EXPECT_TRUE(x.passed()) << x.verdict();
}

// Every op declares at least one case tagged ci and a portable implementation (the reference arm).
TEST(Catalog, EveryOpHasCiCasesAndAPortableImplementation) {
  for (const auto& e : catalog()) {
    bool has_ci =
        std::any_of(e.cases.begin(), e.cases.end(), [](const CaseInfo& c) { return c.has_tag("ci"); });
    bool has_portable = std::any_of(e.implementations.begin(), e.implementations.end(),
                                    [](const ImplInfo& i) { return i.name == "portable"; });
    EXPECT_TRUE(has_ci) << e.name;
    EXPECT_TRUE(has_portable) << e.name;
  }
}
#endif

}  // namespace
}  // namespace dew::gate
