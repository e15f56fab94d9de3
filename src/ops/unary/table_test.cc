// cpu.table at every input a 16-bit float holds: each result against the function in long double
// (computed apart from the table's double forms), correctly rounded but for the double's own error. And
// the GLUs' bf16 and f16 forwards and backwards, whose act(gate) comes from a float table (NOTE [bf16
// gates by table]), at every gate with up = 1: rounded to float, then to bf16 or f16.
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/unary/unary.h"
#include "routes.h"
#include "select/requirements.h"

namespace dew {
namespace {

struct Format {
  DType dtype;
  int mantissa_bits, min_exponent;  // bf16: 7, -126; f16: 10, -14
  double largest;                   // the largest finite value
};
constexpr Format kBf16{DType::bf16, 7, -126, 3.3895313892515355e38};
constexpr Format kF16{DType::f16, 10, -14, 65504.0};

using Truth = long double (*)(long double);
struct Function {
  const char* op;
  Tensor (*run)(const Tensor&);
  Truth truth;
};

long double sigmoid_of(long double x) {
  return 1.0L / (1.0L + std::exp(-x));
}
// The functions that go by table on bf16 and f16 (neg, abs, square and relu go on the tiers).
const Function kFunctions[] = {
    {"exp", exp, [](long double x) { return std::exp(x); }},
    {"sqrt", sqrt, [](long double x) { return x < 0 ? NAN : std::sqrt(x); }},
    {"rsqrt", rsqrt, [](long double x) { return x < 0 ? NAN : 1 / std::sqrt(x); }},
    {"log", log, [](long double x) { return x < 0 ? NAN : std::log(x); }},
    {"tanh", tanh, [](long double x) { return std::tanh(x); }},
    {"sigmoid", sigmoid, sigmoid_of},
    {"silu", silu, [](long double x) { return std::isinf(x) && x < 0 ? NAN : x * sigmoid_of(x); }},
    {"gelu", [](const Tensor& x) { return gelu(x, false); },
     [](long double x) { return 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); }},
    {"gelu_tanh", [](const Tensor& x) { return gelu(x, true); },
     [](long double x) {
       const long double u = 0.79788456080286535588L * (x + 0.044715L * x * x * x);
       return std::isinf(x) && x < 0 ? NAN : x * sigmoid_of(2 * u);  // -inf * 0, as the reference
     }},
};

// Every bit pattern of the format, in order, as a tensor of that dtype.
Tensor every_value(DType dtype) {
  std::vector<uint16_t> bits(65536);
  for (size_t b = 0; b < bits.size(); ++b) bits[b] = uint16_t(b);
  Tensor x = Tensor::zeros({65536}, dtype);
  std::memcpy(x.raw_data(), bits.data(), bits.size() * sizeof(uint16_t));
  return x;
}

// f at every value of the format through impl (pinned, if `pin`): within half a step of the truth
// (correct rounding) plus `slack` relative to it — 2^-50 for the table's double evaluation (libm's few
// ulps of double), 2^-24 more where a result is rounded to float before bf16.
void check_every_value(const Function& f, const Format& fmt, const std::string& impl, bool pin = true,
                       long double slack = 0x1p-50L) {
  const Tensor x = every_value(fmt.dtype);
  Tensor y;
  if (pin) set_impl_overrides(std::string(f.op) + ":" + impl);
  EXPECT_ROUTE(f.op, impl, y = f.run(x));
  if (pin) set_impl_overrides("");
  const std::vector<double> xs = x.to_f64_vector(), ys = y.to_f64_vector();
  int failures = 0;
  for (size_t i = 0; i < xs.size() && failures < 5; ++i) {
    const long double truth = f.truth(xs[i]);
    const std::string what = std::string(f.op) + "(" + std::to_string(xs[i]) + ") in " +
                             std::string(dtype_name(fmt.dtype)) + ": got " + std::to_string(ys[i]);
    bool ok;
    if (std::isnan(truth))
      ok = std::isnan(ys[i]);
    else if (std::fabs(truth) >=
             fmt.largest + std::ldexp(1.0, std::ilogb(fmt.largest) - fmt.mantissa_bits - 1))
      ok = std::isinf(ys[i]) && std::signbit(ys[i]) == std::signbit(truth);  // rounds past the largest
    else if (truth == 0)
      ok = ys[i] == 0 && std::signbit(ys[i]) == std::signbit(truth);
    else {
      const int e = std::max(std::ilogb(truth), fmt.min_exponent);
      const long double half_step = std::ldexp(1.0L, e - fmt.mantissa_bits - 1);
      ok = std::fabs(ys[i] - truth) <= half_step + std::fabs(truth) * slack;
    }
    if (!ok) ++failures, ADD_FAILURE() << what << ", truth " << double(truth);
  }
}

// The table implementations this CPU runs: cpu.table on every CPU, cpu.avx512.table with AVX-512.
std::vector<std::string> table_implementations() {
  std::vector<std::string> v{"cpu.table"};
  if (select::cpu_supports(select::Isa::avx512)) v.push_back("cpu.avx512.table");
  return v;
}

// Whether impl takes f on fmt here: cpu.avx512.table leaves the cheap functions to cpu.avx512 (NOTE
// [cheap functions on AVX-512 vectors]).
bool takes(const std::string& impl, const Function& f, const Format& fmt) {
  return impl != "cpu.avx512.table" || !ops::unary_computed_on_avx512(ops::unary_from_name(f.op), fmt.dtype);
}

TEST(UnaryTable, EveryBf16InputCorrectlyRounded) {
  for (const std::string& impl : table_implementations())
    for (const Function& f : kFunctions)
      if (takes(impl, f, kBf16)) check_every_value(f, kBf16, impl);
}

TEST(UnaryTable, EveryF16InputCorrectlyRounded) {
  for (const std::string& impl : table_implementations())
    for (const Function& f : kFunctions)
      if (takes(impl, f, kF16)) check_every_value(f, kF16, impl);
}

// The functions cpu.avx512 computes in its place: at every input, the float arithmetic's result (within
// a few float ulps: exp_f32_within_2ulp, one division; tanh, log and both GELUs in their forms for bf16
// and f16) rounded once, so within half a step plus 2^-22 relative of the truth. And the selector routes
// them there.
TEST(UnaryTable, CheapFunctionsOnAvx512VectorsAtEveryInput) {
  if (!select::cpu_supports(select::Isa::avx512)) GTEST_SKIP() << "no AVX-512 here";
  int computed = 0;
  for (const Format& fmt : {kBf16, kF16})
    for (const Function& f : kFunctions)
      if (ops::unary_computed_on_avx512(ops::unary_from_name(f.op), fmt.dtype)) {
        check_every_value(f, fmt, "cpu.avx512", false, 0x1p-22L);
        ++computed;
      }
  EXPECT_GE(computed, 9) << "exp, log, sqrt, rsqrt, tanh, sigmoid, silu and both GELUs on f16 at least";
}

// The functions cpu.avx512 computes and looks up at once (NOTE [maps by vectors and lookups at once],
// NOTE [erf-GELU for bf16 and f16 results]) give each input the same bits wherever it sits: in one row
// (each step's values computed and looked up), in rows of 255 (steps and a tail) and of 32 (shorter than
// a step), and down the columns (the scalar body). On bf16 those are cpu.table's correctly rounded bits.
TEST(UnaryTable, MapsByVectorsAndLookupsGiveEachInputOneResult) {
  if (!select::cpu_supports(select::Isa::avx512)) GTEST_SKIP() << "no AVX-512 here";
  int checked = 0;
  for (const DType dtype : {DType::bf16, DType::f16}) {
    const Tensor x = every_value(dtype);
    const std::pair<const char*, Tensor> inputs[] = {
        {"one row", x},
        {"rows of 255", x.slice(0, 0, 65535).reshape({257, 255})},
        {"rows of 32", x.reshape({2048, 32})},
        {"columns", x.reshape({256, 256}).transpose(0, 1)}};
    for (const Function& f : kFunctions) {
      const ops::UnaryFn fn = ops::unary_from_name(f.op);
      if (!ops::unary_by_vectors_and_lookups(fn, dtype) || !ops::unary_computed_on_avx512(fn, dtype))
        continue;
      ++checked;
      std::vector<uint16_t> first(65536);  // the bits the first layout gave each input
      for (const auto& [layout, input] : inputs) {
        const Tensor& in = input;  // a lambda may not capture a structured binding (C++20, clang 14)
        const auto run = [&](const std::string& impl) {
          set_impl_overrides(std::string(f.op) + ":" + impl);
          Tensor y;
          EXPECT_ROUTE(f.op, impl, y = f.run(in));
          set_impl_overrides("");
          return y.contiguous();
        };
        const Tensor computed = run("cpu.avx512"), table = run("cpu.table");
        const uint16_t* c = static_cast<const uint16_t*>(computed.raw_data());
        const uint16_t* t = static_cast<const uint16_t*>(table.raw_data());
        const Tensor in_order = in.contiguous();
        const uint16_t* xs = static_cast<const uint16_t*>(in_order.raw_data());
        int differ = 0, moved = 0;
        const uint16_t exponent = dtype == DType::bf16 ? 0x7f80 : 0x7c00;
        for (int64_t i = 0; i < in.numel(); ++i) {
          if ((xs[i] & 0x7fff) > exponent) continue;  // NaN: a NaN out, its sign as it falls (other tests)
          if (layout == inputs[0].first) {
            first[xs[i]] = c[i];
          } else if (c[i] != first[xs[i]] && ++moved <= 5) {
            ADD_FAILURE() << f.op << " on " << dtype_name(dtype) << ", input bits " << xs[i] << ": " << c[i]
                          << " in " << layout << ", " << first[xs[i]] << " in one row";
          }
          if (dtype == DType::bf16 && c[i] != t[i] && ++differ <= 5)
            ADD_FAILURE() << f.op << " on bf16, input bits " << xs[i] << ": computed bits " << c[i]
                          << ", the table's " << t[i];
        }
        EXPECT_EQ(moved, 0) << f.op << " on " << dtype_name(dtype) << ", " << layout;
        EXPECT_EQ(differ, 0) << f.op << " on " << dtype_name(dtype) << ", " << layout;
      }
    }
  }
  EXPECT_EQ(checked, ops::unary_computed_on_avx512(ops::UnaryFn::gelu, DType::bf16) ? 4 : 1)
      << "erf-GELU, tanh-GELU and tanh on bf16 (with AVX-512 BF16), erf-GELU on f16";
}

}  // namespace
}  // namespace dew

namespace dew {
namespace {

TEST(UnaryTable, GluGatesOnBf16AndF16AtEveryGate) {
  if (!select::cpu_supports(select::Isa::avx2)) GTEST_SKIP() << "the GLUs go by table on the tiers only";
  const std::string tier = select::cpu_supports(select::Isa::avx512) ? "cpu.avx512" : "cpu.avx2";
  const auto truth_of = [](const char* op) {
    for (const Function& f : kFunctions)
      if (std::string(f.op) == op) return f.truth;
    return Truth(nullptr);
  };
  const Function glus[] = {
      {"swiglu", [](const Tensor& g) { return swiglu(g, Tensor::full(g.shape(), 1.0, g.dtype())); },
       truth_of("silu")},
      {"geglu", [](const Tensor& g) { return geglu(g, Tensor::full(g.shape(), 1.0, g.dtype())); },
       truth_of("gelu")},
      {"geglu_tanh", [](const Tensor& g) { return geglu(g, Tensor::full(g.shape(), 1.0, g.dtype()), true); },
       truth_of("gelu_tanh")},
  };
  // By table (AVX2): act rounded once to float, so half a float ulp more; on AVX-512 act is computed
  // (NOTE [half gates computed on AVX-512]), within a few float ulps, as the unary maps there.
  const long double slack = tier == "cpu.avx512" ? 0x1p-22L : 0x1p-24L;
  for (const Format& fmt : {kBf16, kF16})
    for (const Function& f : glus) check_every_value(f, fmt, tier, false, slack);
}

// The backward ops at every gate with dy = up = 1: d_gate is act'(gate), d_up act(gate), each rounded to
// float and then to bf16 or f16 (NOTE [bf16 gates by table]).
Tensor ones_like(const Tensor& t) {
  return Tensor::full(t.shape(), 1.0, t.dtype());
}
long double silu_derivative(long double x) {
  const long double s = sigmoid_of(x);
  return s * (1 + x * (1 - s));
}
long double gelu_derivative(long double x) {
  return 0.5L * std::erfc(-x / std::sqrt(2.0L)) +
         x * std::exp(-x * x / 2) / std::sqrt(2 * 3.14159265358979323846L);
}
long double gelu_tanh_derivative(long double x) {
  const long double k = 0.79788456080286535588L, u = k * (x + 0.044715L * x * x * x);
  const long double s = sigmoid_of(2 * u), du = k * (1 + 3 * 0.044715L * x * x);
  return s + 2 * x * s * sigmoid_of(-2 * u) * du;
}

TEST(UnaryTable, GluBackwardsOnBf16AndF16AtEveryGate) {
  if (!select::cpu_supports(select::Isa::avx2)) GTEST_SKIP() << "the GLUs go by table on the tiers only";
  const std::string tier = select::cpu_supports(select::Isa::avx512) ? "cpu.avx512" : "cpu.avx2";
  const Function d_gates[] = {
      {"swiglu_backward",
       [](const Tensor& g) { return swiglu_backward(ones_like(g), g, ones_like(g)).d_gate; },
       silu_derivative},
      {"geglu_backward", [](const Tensor& g) { return geglu_backward(ones_like(g), g, ones_like(g)).d_gate; },
       gelu_derivative},
      {"geglu_tanh_backward",
       [](const Tensor& g) { return geglu_backward(ones_like(g), g, ones_like(g), true).d_gate; },
       gelu_tanh_derivative},
      {"geglu_tanh_backward",
       [](const Tensor& g) { return geglu_backward(ones_like(g), g, ones_like(g), true).d_up; },
       [](long double x) {
         const long double u = 0.79788456080286535588L * (x + 0.044715L * x * x * x);
         return std::isinf(x) && x < 0 ? NAN : x * sigmoid_of(2 * u);
       }},
  };
  // bf16 on AVX-512 computes act and act' (NOTE [half gates computed on AVX-512]): a few float ulps, as
  // the forward; f16 keeps the tables of pairs, whose act' near its zeros a float evaluation misses.
  const long double slack = tier == "cpu.avx512" ? 0x1p-22L : 0x1p-24L;
  for (const Format& fmt : {kBf16, kF16})
    for (const Function& f : d_gates)  // SiLU's backward on f16 is arithmetic (NOTE [bf16 gates by table])
      if (fmt.dtype == DType::bf16 || std::string(f.op) != "swiglu_backward")
        check_every_value(f, fmt, tier, false, fmt.dtype == DType::bf16 ? slack : 0x1p-24L);
}

}  // namespace
}  // namespace dew

namespace dew {
namespace {

// tanh-GEGLU's d_gate with dy = up = 1 is act'(gate): 1 for a huge positive gate, 0 for a huge negative
// one, on every f32 implementation here. x^2 in u'(x) overflowed float from |x| ~ 2e19, and 0 * inf
// made it NaN (gelu_tanh_argument_derivative caps |x| now; 2 x overflowed past 1.7e38 in the tiers).
TEST(UnaryTable, GegluTanhBackwardAtHugeF32Gates) {
  const std::vector<double> gates = {3e19, -3e19, 1e30, -1e30, 3e38, -3e38};
  const Tensor g = Tensor::from_values(gates, {int64_t(gates.size())}, DType::f32);
  const Tensor ones = Tensor::full(g.shape(), 1.0, DType::f32);
  std::vector<std::string> impls = {"portable"};
  if (select::cpu_supports(select::Isa::avx2)) impls.push_back("cpu.avx2");
  if (select::cpu_supports(select::Isa::avx512)) impls.push_back("cpu.avx512");
  for (const std::string& impl : impls) {
    set_impl_overrides("geglu_tanh_backward:" + impl);
    Tensor d;
    EXPECT_ROUTE("geglu_tanh_backward", impl, d = geglu_backward(ones, g, ones, true).d_gate);
    set_impl_overrides("");
    const std::vector<double> got = d.to_f64_vector();
    for (size_t i = 0; i < gates.size(); ++i)
      EXPECT_EQ(got[i], gates[i] > 0 ? 1.0 : 0.0) << impl << " at gate " << gates[i];
  }
}

}  // namespace
}  // namespace dew
