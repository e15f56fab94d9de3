// The image backbones against independent PyTorch implementations on random bf16 checkpoints
// (tools/torch_reference/make_dit_fixtures.py, from facebookresearch/DiT's models.py with a strided
// Conv2d for the patch embedding; make_unet_fixtures.py, from diffusers' UNet2DModel): outputs,
// gradients and forward-mode tangents agree as the language-model families' logits do
// (torch_agreement.h).
#include <dew/autodiff.h>
#include <dew/image_models.h>
#include <dew/ops.h>
#include <dew/safetensors.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "gate/rule_gate.h"
#include "torch_agreement.h"

namespace dew {
namespace {

namespace fs = std::filesystem;
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

class ImageModelReference : public ::testing::TestWithParam<std::string> {};

TEST_P(ImageModelReference, OutputsGradientsAndTangentsAgreeWithPyTorch) {
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
    ImageModel model = ImageModel::load(dir.string(), dtype);
    for (const std::string& name : names) model.parameters()[name].requires_grad_();
    Inputs in = inputs_of(fixture, dtype);
    in.images.requires_grad_();
    out.output = model.forward(in.images, in.times, in.labels, in.r);
    backward(sum(mul(out.output, as_dtype(fixture.load("cotangent"), dtype))));
    for (const std::string& name : names) out.gradients.push_back(model.parameters().at(name).grad());
    out.gradients.push_back(in.images.grad());
    const ImageModel frozen = ImageModel::load(dir.string(), dtype);
    const Inputs fresh = inputs_of(fixture, dtype);
    out.tangent =
        jvp(
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
  expect_f64_agreement("output", base.output, fixture.load("output_f32"), truth.output,
                       fixture.load("output_f64"));
  expect_f64_agreement("tangent", base.tangent, fixture.load("tangent_f32"), truth.tangent,
                       fixture.load("tangent_f64"));
  names.push_back("images");
  for (size_t i = 0; i < names.size(); ++i)
    expect_f64_agreement("gradient of " + names[i], base.gradients[i], fixture.load("grad_f32." + names[i]),
                         truth.gradients[i], fixture.load("grad_f64." + names[i]));
}

INSTANTIATE_TEST_SUITE_P(Backbones, ImageModelReference,
                         ::testing::Values("dit", "dit_meanflow", "unet", "unet_diffusers", "unet_meanflow"));

}  // namespace
}  // namespace dew
