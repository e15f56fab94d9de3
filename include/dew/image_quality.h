// Measuring generated images (docs/diffusion.md, "Quality"): a small classifier Dew trains on the
// data set itself, the Fréchet distance between the statistics of its features on generated and on
// real images (FID's formula on this classifier's features, not Inception's: comparable between runs
// of the same data and classifier, not with published FIDs), and its accuracy on conditional samples.
#pragma once

#include <dew/data.h>
#include <dew/tensor.h>

#include <map>
#include <string>

namespace dew::train {

// An MLP over flattened images in [-1, 1]: fc1 (hidden) GELU, fc2 (features) GELU, fc3 (classes).
// The features are fc2's activations.
class ImageClassifier {
 public:
  static ImageClassifier init(int64_t channels, int64_t height, int64_t width, int64_t classes,
                              uint64_t seed);
  static ImageClassifier load(const std::string& directory);  // config.json and model.safetensors
  void save(const std::string& directory) const;
  Tensor features(const Tensor& images) const;  // (N,C,H,W) f32 -> (N, 128)
  Tensor logits(const Tensor& images) const;    // (N, classes)
  std::map<std::string, Tensor>& parameters() { return parameters_; }
  int64_t classes() const { return classes_; }

 private:
  int64_t channels_ = 0, height_ = 0, width_ = 0, classes_ = 0;
  std::map<std::string, Tensor> parameters_;
};

// Trains a classifier on `chain`'s image batches (labels 0..classes-1) for `steps` AdamW steps with a
// cosine schedule from lr, in f32; the same chain, steps and seed give the same weights.
ImageClassifier train_image_classifier(data::Chain& chain, int64_t classes, int64_t steps, double lr,
                                       uint64_t seed);
// The share of images whose argmax class is their label.
double classifier_accuracy(const ImageClassifier& classifier, const Tensor& images, const Tensor& labels);
// ||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a^1/2 S_b S_a^1/2)^1/2) of two feature sets (N,F), in f64
// (covariances with N - 1; square roots by Jacobi's symmetric eigendecomposition).
double frechet_distance(const Tensor& a, const Tensor& b);

}  // namespace dew::train
