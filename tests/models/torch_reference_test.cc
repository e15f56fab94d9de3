// Every family against an independent implementation: PyTorch running a plain reimplementation of
// it (tools/torch_reference/make_fixtures.py) on a random checkpoint in Hugging Face layout. The
// checkpoint, ids and PyTorch's logits in f32 and f64 are committed in tests/models/torch_fixtures/.
// Two checks, neither with a tolerance of its own:
// - PyTorch's f32 logits pass the gate as a candidate would: against Dew's f64 model as the truth,
//   with Dew's portable f32 model as the reference arm (a different model fails by orders);
// - PyTorch's f64 logits agree with Dew's f64 logits better than any f32 evaluation does.
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/safetensors.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "gate/gate.h"
#include "gate/rule_gate.h"

namespace dew {
namespace {

namespace fs = std::filesystem;

double rms_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_f64_vector(), y = b.to_f64_vector();
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += (x[i] - y[i]) * (x[i] - y[i]);
  return std::sqrt(sum / double(x.size()));
}

class TorchReference : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchReference, LogitsAgreeWithPyTorch) {
  const fs::path dir = fs::path(DEW_SOURCE_DIR) / "tests" / "models" / "torch_fixtures" / GetParam();
  const SafetensorsFile fixture = SafetensorsFile::open((dir / "torch_logits.safetensors").string());
  const Tensor ids = fixture.load("ids"), positions = fixture.load("positions");
  const Tensor torch_f32 = fixture.load("logits_f32"), torch_f64 = fixture.load("logits_f64");

  Tensor base, truth;
  {
    gate::ScopedImplOverrides portable(gate::portable_everywhere());
    base = CausalLM::load(dir.string(), DType::f32).forward(ids, positions);
    truth = CausalLM::load(dir.string(), DType::f64).forward(ids, positions);
  }
  ASSERT_EQ(truth.shape(), torch_f64.shape());
  const gate::OutputReport r = gate::compare_output(torch_f32, base, {truth, {}, 1}, DType::f32);
  EXPECT_LE(r.rms_ratio(), 1.5) << "PyTorch f32 rms error " << r.rms_candidate() << ", Dew portable f32 "
                                << r.rms_base();
  EXPECT_LE(r.worst_row_ratio(), 2.0);
  const double f64_disagreement = rms_difference(torch_f64, truth);
  EXPECT_LT(f64_disagreement, r.rms_base()) << "Dew and PyTorch in f64 differ by " << f64_disagreement
                                            << ", more than f32 rounding (" << r.rms_base() << ")";
}

INSTANTIATE_TEST_SUITE_P(Families, TorchReference,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gpt2"));

}  // namespace
}  // namespace dew
