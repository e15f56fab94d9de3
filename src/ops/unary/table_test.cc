// cpu.table at every input a 16-bit float holds: each result against the function in long double
// (computed apart from the table's double forms), correctly rounded but for the double's own error.
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "routes.h"

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
// On both formats; the others go by table on f16 only.
const Function kFunctions[] = {
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

void check_every_value(const Function& f, const Format& fmt) {
  const Tensor x = every_value(fmt.dtype);
  Tensor y;
  EXPECT_ROUTE(f.op, "cpu.table", y = f.run(x));
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
      ok = std::fabs(ys[i] - truth) <= half_step + std::fabs(truth) * 0x1p-50L;
    }
    if (!ok) ++failures, ADD_FAILURE() << what << ", truth " << double(truth);
  }
}

TEST(UnaryTable, EveryBf16InputCorrectlyRounded) {
  for (const Function& f : kFunctions) check_every_value(f, kBf16);
}

const Function kF16Functions[] = {
    {"exp", exp, [](long double x) { return std::exp(x); }},
    {"sqrt", sqrt, [](long double x) { return x < 0 ? NAN : std::sqrt(x); }},
    {"rsqrt", rsqrt, [](long double x) { return x < 0 ? NAN : 1 / std::sqrt(x); }},
    {"neg", neg, [](long double x) { return -x; }},
    {"abs", abs, [](long double x) { return std::fabs(x); }},
    {"square", square, [](long double x) { return x * x; }},
    {"relu", relu, [](long double x) { return x > 0 ? x : 0.0L; }},
};

TEST(UnaryTable, EveryF16InputCorrectlyRounded) {
  for (const Function& f : kFunctions) check_every_value(f, kF16);
  for (const Function& f : kF16Functions) check_every_value(f, kF16);
}

}  // namespace
}  // namespace dew
