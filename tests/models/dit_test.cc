// The DiT against an independent PyTorch DiT (tools/torch_reference/make_dit_fixtures.py, written from
// facebookresearch/DiT's models.py with a strided Conv2d for the patch embedding) on random bf16
// checkpoints: outputs, gradients and forward-mode tangents agree as the language-model families'
// logits do (torch_agreement.h). Then initialization, save and load, and refusals.
#include <dew/autodiff.h>
#include <dew/image_models.h>
#include <dew/ops.h>
#include <dew/safetensors.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "error_of.h"
#include "gate/rule_gate.h"
#include "torch_agreement.h"

namespace dew {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::expect_f64_agreement;

fs::path fixture_dir(const std::string& name) {
  return fs::path(DEW_SOURCE_DIR) / "tests" / "models" / "torch_fixtures" / name;
}

struct Inputs {
  Tensor images, times, labels, r;
};

Inputs inputs_of(const SafetensorsFile& f, DType dtype) {
  Inputs in{as_dtype(f.load("images"), dtype), as_dtype(f.load("times"), dtype), {}, {}};
  if (f.find("labels")) in.labels = f.load("labels");
  if (f.find("r")) in.r = as_dtype(f.load("r"), dtype);
  return in;
}

class DitReference : public ::testing::TestWithParam<std::string> {};

TEST_P(DitReference, OutputsGradientsAndTangentsAgreeWithPyTorch) {
  const fs::path dir = fixture_dir(GetParam());
  const SafetensorsFile fixture = SafetensorsFile::open((dir / "torch_outputs.safetensors").string());
  std::vector<std::string> names;
  for (const SafetensorsEntry& e : fixture.header().tensors)
    if (e.name.starts_with("grad_f32.") && e.name != "grad_f32.images") names.push_back(e.name.substr(9));
  ASSERT_GE(names.size(), 5u);
  struct Run {
    Tensor output, tangent;
    std::vector<Tensor> gradients;  // the named parameters', then the images'
  };
  const auto run = [&](DType dtype) {
    Run out;
    Dit model = Dit::load(dir.string(), dtype);
    for (const std::string& name : names) model.parameters()[name].requires_grad_();
    Inputs in = inputs_of(fixture, dtype);
    in.images.requires_grad_();
    out.output = model.forward(in.images, in.times, in.labels, in.r);
    backward(sum(mul(out.output, as_dtype(fixture.load("cotangent"), dtype))));
    for (const std::string& name : names) out.gradients.push_back(model.parameter(name).grad());
    out.gradients.push_back(in.images.grad());
    const Dit frozen = Dit::load(dir.string(), dtype);
    const Inputs fresh = inputs_of(fixture, dtype);
    out.tangent = jvp(
                      [&](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{frozen.forward(v[0], v[1], fresh.labels, fresh.r)};
                      },
                      {fresh.images, fresh.times},
                      {as_dtype(fixture.load("image_tangent"), dtype), as_dtype(fixture.load("time_tangent"), dtype)})
                      .tangents[0];
    return out;
  };
  Run base, truth;
  {
    gate::ScopedImplOverrides portable(gate::portable_everywhere());
    base = run(DType::f32);
    truth = run(DType::f64);
  }
  expect_f64_agreement("output", base.output, fixture.load("output_f32"), truth.output, fixture.load("output_f64"));
  expect_f64_agreement("tangent", base.tangent, fixture.load("tangent_f32"), truth.tangent,
                       fixture.load("tangent_f64"));
  names.push_back("images");
  for (size_t i = 0; i < names.size(); ++i)
    expect_f64_agreement("gradient of " + names[i], base.gradients[i], fixture.load("grad_f32." + names[i]),
                         truth.gradients[i], fixture.load("grad_f64." + names[i]));
}

INSTANTIATE_TEST_SUITE_P(Dit, DitReference, ::testing::Values("dit", "dit_meanflow"));

DitConfig small_config() {
  return parse_dit_config(
      R"({"model_type": "dit", "image_size": 8, "in_channels": 1, "patch_size": 2, "hidden_size": 16, "depth": 1,
          "num_heads": 2, "num_classes": 3, "frequency_embedding_size": 8})",
      "test config");
}

TEST(Dit, StartsAtZeroAndSavesAndLoadsExactly) {
  Dit model = Dit::init(small_config(), DType::f32, 5);
  const Tensor x = Tensor::full({2, 1, 8, 8}, 0.5, DType::f32), t = Tensor::full({2}, 0.3, DType::f32);
  const Tensor labels = Tensor::from_values({1, 3}, {2}, DType::i64);
  // adaLN-Zero: the final linear starts at zero, so the output does.
  EXPECT_EQ(model.forward(x, t, labels).to_f64_vector(), std::vector<double>(128, 0.0));
  for (auto& [name, p] : model.parameters()) fill_normal(p, {7, uint64_t(p.numel())}, 0, 0.1);
  const fs::path dir = fs::temp_directory_path() / ("dew_dit_" + std::to_string(::getpid()));
  model.save(dir.string());
  const Dit loaded = Dit::load(dir.string());
  EXPECT_EQ(loaded.forward(x, t, labels).to_f64_vector(), model.forward(x, t, labels).to_f64_vector());
  EXPECT_EQ(loaded.parameter_count(), model.parameter_count());
  fs::remove_all(dir);
}

TEST(Dit, BadInputsAreRefusedByName) {
  const Dit model = Dit::init(small_config(), DType::f32, 5);
  const Tensor t = Tensor::full({2}, 0.3, DType::f32), labels = Tensor::from_values({1, 3}, {2}, DType::i64);
  EXPECT_NE(error_of([&] { model.forward(Tensor::zeros({2, 1, 28, 28}, DType::f32), t, labels); })
                .find("expected (B, 1, 8, 8): 1 channel(s) of 8x8 pixels"),
            std::string::npos);
  EXPECT_NE(error_of([&] { model.forward(Tensor::zeros({2, 3, 8, 8}, DType::f32), t, labels); })
                .find("expected (B, 1, 8, 8)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.forward(Tensor::zeros({2, 1, 8, 8}, DType::f32), t, Tensor::from_values({1, 4}, {2}, DType::i64));
            }).find("class 4; expected 0 to 2, or 3 (no class)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_dit_config(R"({"model_type": "dit", "image_size": 27})", "c"); })
                .find("image_size 27 is not a multiple of patch_size 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_dit_config(R"({"model_type": "dit", "depht": 3})", "c"); })
                .find("unknown key \"depht\""),
            std::string::npos);
}

}  // namespace
}  // namespace dew
