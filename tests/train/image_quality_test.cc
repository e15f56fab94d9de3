// The image quality measures: the Fréchet distance on features whose answer is known (a shift, a
// scaling, the same set), and the classifier learning separable images, saved and loaded exactly.
#include <dew/image_quality.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "data_files.h"
#include "error_of.h"

namespace dew::train {
namespace {

Tensor features(int64_t n, int64_t f) {
  Tensor x = Tensor::empty({n, f}, DType::f64);
  fill_normal(x, {5, 0}, 0.3, 1.2);
  return x;
}

TEST(FrechetDistance, KnownAnswers) {
  const Tensor a = features(400, 5);
  EXPECT_NEAR(frechet_distance(a, a), 0, 1e-9);
  // A shift by d: the covariances agree, so the distance is |d|^2.
  const Tensor d = Tensor::from_values({1, -2, 0.5, 0, 3}, {5}, DType::f64);
  EXPECT_NEAR(frechet_distance(a, add(a, d)), 1 + 4 + 0.25 + 9, 1e-9);
  // Twice the features: |mu|^2 + tr(S + 4 S - 2 (S^1/2 4 S S^1/2)^1/2) = |mu|^2 + tr(S).
  const std::vector<double> v = a.to_f64_vector();
  double mean_sq = 0, trace = 0;
  for (int f = 0; f < 5; ++f) {
    double m = 0, q = 0;
    for (int i = 0; i < 400; ++i) m += v[size_t(i * 5 + f)] / 400;
    for (int i = 0; i < 400; ++i) q += (v[size_t(i * 5 + f)] - m) * (v[size_t(i * 5 + f)] - m) / 399;
    mean_sq += m * m, trace += q;
  }
  EXPECT_NEAR(frechet_distance(a, mul(a, Tensor::full({}, 2.0, DType::f64))), mean_sq + trace, 1e-8);
  EXPECT_NE(
      testing::error_of([&] { frechet_distance(a, features(10, 4)); }).find("expected (N, F) and (M, F)"),
      std::string::npos);
}

TEST(ImageClassifier, LearnsSeparableImagesAndSavesExactly) {
  // Class k: a bright column block k of a 6x6 image, the rest dark.
  std::vector<data::Record> records;
  for (int n = 0; n < 60; ++n) {
    data::Record r;
    r.channels = 1, r.height = 6, r.width = 6, r.label = n % 3;
    for (int p = 0; p < 36; ++p) r.pixels.push_back(uint8_t((p % 6) / 2 == n % 3 ? 220 - n : 30 + n));
    records.push_back(r);
  }
  data::Chain chain = data::Chain::records(records, {.epochs = 0});
  chain.batch(12);
  const ImageClassifier c = train_image_classifier(chain, 3, 60, 3e-3, 1);
  data::Chain all = data::Chain::records(records);
  all.batch(60);
  const data::Batch b = *all.next_batch();
  EXPECT_EQ(classifier_accuracy(c, b.images, b.labels), 1.0);
  testing::DataDir dir("classifier");
  c.save(dir.path("c"));
  EXPECT_EQ(ImageClassifier::load(dir.path("c")).logits(b.images).to_f64_vector(),
            c.logits(b.images).to_f64_vector());
  EXPECT_EQ(c.features(b.images).size(1), 128);
}

}  // namespace
}  // namespace dew::train
