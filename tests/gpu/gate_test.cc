// The CUDA implementations through the float64 gate on cuda:0: for every op with one, every case
// tagged ci at every dtype, one test per op. Without a CUDA device each test is reported skipped.
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "gate/catalog.h"

namespace dew::gate {
namespace {

struct CudaOp {
  const OpEntry* op;
  std::vector<std::string> implementations;
};

std::vector<CudaOp> cuda_ops() {
  std::vector<CudaOp> v;
  for (const auto& e : catalog()) {
    CudaOp c{&e, {}};
    for (const auto& impl : e.implementations)
      if (implementation_device(impl.name).kind == Device::Kind::cuda) c.implementations.push_back(impl.name);
    if (!c.implementations.empty()) v.push_back(c);
  }
  return v;
}

void PrintTo(const CudaOp& p, std::ostream* os) {
  *os << p.op->name;
}

class CudaGate : public ::testing::TestWithParam<CudaOp> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaGate);  // a build without the CUDA toolkit has none

TEST_P(CudaGate, EveryCaseAndDtypePassesTheFloat64Gate) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const CudaOp& p = GetParam();
  const uint64_t seed = gate_seed();
  int ran = 0;
  bool device_placeable = false;  // fill and arange have no input to place on the device
  for (const std::string& impl : p.implementations)
    for (const auto& c : p.op->cases) {
      if (!c.has_tag("ci")) continue;
      for (DType t : c.dtypes) {
        const Report r = p.op->check(impl, c.name, t, seed);
        if (r.refusal.find("device is cpu") == std::string::npos) device_placeable = true;
        if (!r.ran) continue;  // a case outside the implementation's requirements
        ++ran;
        EXPECT_TRUE(r.passed()) << p.op->name << " " << impl << " " << dtype_name(t) << " " << c.name << ": "
                                << r.verdict();
      }
    }
  if (!device_placeable)
    GTEST_SKIP() << p.op->name << " makes tensors on the cpu: no input to place on cuda:0";
  EXPECT_GT(ran, 0) << p.op->name << ": no case ran on any CUDA implementation";
}

std::string op_name(const ::testing::TestParamInfo<CudaOp>& info) {
  return info.param.op->name;
}

INSTANTIATE_TEST_SUITE_P(Gate, CudaGate, ::testing::ValuesIn(cuda_ops()), op_name);

}  // namespace
}  // namespace dew::gate
