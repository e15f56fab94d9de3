// The weights' average: its update rule with and without warm-up, and a save and load that resumes it
// exactly (values and update count) or refuses another model's.
#include <dew/train.h>
#include <gtest/gtest.h>

#include "data_files.h"
#include "error_of.h"

namespace dew::train {
namespace {

TEST(Ema, MovesByTheWarmedUpDecay) {
  std::map<std::string, Tensor> w{{"a", Tensor::from_values({1.0, 2.0}, {2}, DType::f32)}};
  Ema warm(w, 0.99, true), plain(w, 0.99, false);
  w["a"] = Tensor::from_values({3.0, -2.0}, {2}, DType::f32);
  warm.update(w);
  plain.update(w);
  // avg + (1 - d)(w - avg), each step rounded to f32 as the update computes it; d = min(0.99, 2/11).
  const auto moved = [](float avg, float w, double d) { return double(avg + (w - avg) * float(1 - d)); };
  EXPECT_EQ(warm.averages().at("a").to_f64_vector(),
            (std::vector<double>{moved(1, 3, 2.0 / 11.0), moved(2, -2, 2.0 / 11.0)}));
  EXPECT_EQ(plain.averages().at("a").to_f64_vector(),
            (std::vector<double>{moved(1, 3, 0.99), moved(2, -2, 0.99)}));
  EXPECT_EQ(warm.updates(), 1);
  EXPECT_NE(testing::error_of([&] { Ema(w, 1.0, true); }).find("expected 0 < decay < 1"), std::string::npos);
}

TEST(Ema, SavedAndLoadedItContinuesExactly) {
  testing::DataDir dir("ema");
  std::map<std::string, Tensor> w{{"a", Tensor::from_values({1.0, 2.0, 3.0}, {3}, DType::f32)}};
  Ema first(w, 0.9, true);
  for (int i = 0; i < 3; ++i) {
    w["a"] = Tensor::from_values({double(i), 1.5, -double(i)}, {3}, DType::f32);
    first.update(w);
  }
  first.save(dir.path("ema.safetensors"));
  Ema second(w, 0.9, true);
  second.load(dir.path("ema.safetensors"));
  EXPECT_EQ(second.updates(), 3);
  first.update(w);
  second.update(w);
  EXPECT_EQ(second.averages().at("a").to_f64_vector(), first.averages().at("a").to_f64_vector());
  std::map<std::string, Tensor> other{{"a", Tensor::zeros({4}, DType::f32)}};
  Ema wrong(other, 0.9, true);
  EXPECT_NE(testing::error_of([&] { wrong.load(dir.path("ema.safetensors")); }).find("it is another model's"),
            std::string::npos);
}

}  // namespace
}  // namespace dew::train
