// The DiT's initialization, save and load, and refusals (its agreement with PyTorch:
// image_model_reference_test.cc).
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
  EXPECT_NE(error_of([&] {
              model.forward(Tensor::zeros({2, 1, 28, 28}, DType::f32), t, labels);
            }).find("expected (B, 1, 8, 8): 1 channel(s) of 8x8 pixels"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.forward(Tensor::zeros({2, 3, 8, 8}, DType::f32), t, labels);
            }).find("expected (B, 1, 8, 8)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.forward(Tensor::zeros({2, 1, 8, 8}, DType::f32), t,
                            Tensor::from_values({1, 4}, {2}, DType::i64));
            }).find("class 4; expected 0 to 2, or 3 (no class)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse_dit_config(R"({"model_type": "dit", "image_size": 27})", "c");
            }).find("image_size 27 is not a multiple of patch_size 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse_dit_config(R"({"model_type": "dit", "depht": 3})", "c");
            }).find("unknown key \"depht\""),
            std::string::npos);
}

}  // namespace
}  // namespace dew
