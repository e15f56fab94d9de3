// The UNet's own tests (its agreement with PyTorch: image_model_reference_test.cc): the checkpoint's
// names and shapes follow diffusers' UNet2DModel, initialization starts every block as its skip path,
// save and load are exact, MeanFlow's reverse-over-forward reaches the weights, and bad configs are
// refused by name (bad inputs: the checks dit_test.cc shows, shared by both backbones).
#include <dew/autodiff.h>
#include <dew/image_models.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "error_of.h"

namespace dew {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

UnetConfig small_config() {
  return parse_unet_config(
      R"({"model_type": "unet", "sample_size": 8, "in_channels": 1, "block_out_channels": [8, 16],
          "down_block_types": ["DownBlock2D", "AttnDownBlock2D"], "up_block_types": ["AttnUpBlock2D", "UpBlock2D"],
          "layers_per_block": 1, "norm_num_groups": 4, "attention_head_dim": 4, "num_classes": 3})",
      "test config");
}

TEST(Unet, ParametersAreDiffusersNamesAndShapes) {
  std::map<std::string, Shape> shapes;
  for (const auto& [name, shape] : unet_parameter_shapes(small_config())) shapes[name] = shape;
  // the first up block's first ResNet reads the middle's 16 channels and the last down skip's 16
  EXPECT_EQ(shapes.at("up_blocks.0.resnets.0.conv1.weight"), Shape({16, 32, 3, 3}));
  // its last reads the downsampler's output of level 0: 8 channels
  EXPECT_EQ(shapes.at("up_blocks.0.resnets.1.conv_shortcut.weight"), Shape({16, 24, 1, 1}));
  EXPECT_EQ(shapes.at("up_blocks.1.resnets.1.conv1.weight"), Shape({8, 16, 3, 3}));  // conv_in's skip
  EXPECT_EQ(shapes.at("time_embedding.linear_1.weight"), Shape({32, 8}));
  EXPECT_EQ(shapes.at("class_embedding.weight"), Shape({4, 32}));  // 3 classes and the null row
  EXPECT_EQ(shapes.at("mid_block.attentions.0.to_out.0.weight"), Shape({16, 16}));
  EXPECT_EQ(shapes.count("down_blocks.1.downsamplers.0.conv.weight"), 0u);  // the lowest level keeps its size
  EXPECT_EQ(shapes.count("up_blocks.1.upsamplers.0.conv.weight"), 0u);
}

TEST(Unet, StartsAtZeroAndSavesAndLoadsExactly) {
  Unet model = Unet::init(small_config(), DType::f32, 5);
  const Tensor x = Tensor::full({2, 1, 8, 8}, 0.5, DType::f32), t = Tensor::full({2}, 0.3, DType::f32);
  const Tensor labels = Tensor::from_values({1, 3}, {2}, DType::i64);
  EXPECT_EQ(model.forward(x, t, labels).to_f64_vector(), std::vector<double>(128, 0.0));  // conv_out at zero
  for (auto& [name, p] : model.parameters()) fill_normal(p, {7, uint64_t(p.numel())}, 0, 0.1);
  const fs::path dir = fs::temp_directory_path() / ("dew_unet_" + std::to_string(::getpid()));
  model.save(dir.string());
  const ImageModel loaded = ImageModel::load(dir.string());
  EXPECT_EQ(loaded.model_type(), "unet");
  EXPECT_EQ(loaded.forward(x, t, labels).to_f64_vector(), model.forward(x, t, labels).to_f64_vector());
  fs::remove_all(dir);
}

// MeanFlow's loss differentiates a jvp of the network: every weight gets a gradient through it.
TEST(Unet, ReverseOverForwardReachesEveryWeight) {
  UnetConfig c = small_config();
  c.time_inputs = 2;
  Unet model = Unet::init(c, DType::f64, 5);
  for (auto& [name, p] : model.parameters()) {
    fill_normal(p, {9, uint64_t(p.numel())}, 0, 0.2);
    p.requires_grad_();
  }
  const Tensor x = Tensor::full({2, 1, 8, 8}, 0.5, DType::f64), t = Tensor::full({2}, 0.7, DType::f64);
  const Tensor r = Tensor::full({2}, 0.2, DType::f64), labels = Tensor::from_values({0, 2}, {2}, DType::i64);
  const Tensor tangent =
      jvp(
          [&](const std::vector<Tensor>& v) {
            return std::vector<Tensor>{model.forward(v[0], v[1], labels, r)};
          },
          {x, t}, {Tensor::full({2, 1, 8, 8}, 1.0, DType::f64), Tensor::full({2}, 1.0, DType::f64)})
          .tangents[0];
  backward(sum(square(tangent)));
  for (const auto& [name, p] : model.parameters()) {
    // the tangent involves neither the class row's value nor the output's constant bias
    if (name == "class_embedding.weight" || name == "conv_out.bias") continue;
    EXPECT_TRUE(p.grad().defined()) << name;
  }
  EXPECT_GT(sum(square(model.parameter("conv_in.weight").grad())).to_f64_vector()[0], 0.0);
}

TEST(Unet, BadConfigsAreRefusedByName) {
  const auto refusal = [](const std::string& json) {
    return error_of([&] { parse_unet_config(json, "c"); });
  };
  EXPECT_NE(refusal(R"({"_class_name": "UNet2DModel", "resnet_time_scale_shift": "scale_shift"})")
                .find("\"resnet_time_scale_shift\" is scale_shift, which Dew does not implement"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"model_type": "unet", "sample_size": 30})")
                .find("sample_size 30 with 3 resolutions; expected a multiple of 4"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"model_type": "unet", "block_out_channels": [8, 12, 16], "norm_num_groups": 8})")
                .find("block_out_channels[1] = 12 is not a multiple of norm_num_groups 8"),
            std::string::npos);
  EXPECT_NE(
      refusal(
          R"({"model_type": "unet", "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"]})")
          .find("expected \"DownBlock2D\" or \"AttnDownBlock2D\""),
      std::string::npos);
  EXPECT_NE(
      refusal(R"({"model_type": "unet", "layers_per_blok": 2})").find("unknown key \"layers_per_blok\""),
      std::string::npos);
  EXPECT_NE(refusal(R"({"model_type": "unet", "num_classes": 10, "num_class_embeds": 10})")
                .find("num_class_embeds 10 with 10 classes and class_dropout_prob 0.1; expected 11 rows"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
