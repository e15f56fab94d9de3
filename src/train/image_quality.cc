// The image classifier, its training, accuracy, and the Fréchet distance (image_quality.h).
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/image_quality.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/safetensors.h>
#include <dew/train.h>

#include <cmath>
#include <filesystem>

#include "io/files.h"
#include "io/json.h"
#include "models/linear.h"

namespace dew::train {
namespace {

constexpr int64_t kHidden = 512, kFeatures = 128;

using models::linear;

// Eigenvalues and vectors of a symmetric n x n matrix (row-major, f64) by cyclic Jacobi rotations;
// `vectors` gets the eigenvectors as columns.
std::vector<double> symmetric_eigen(std::vector<double> a, int64_t n, std::vector<double>& vectors) {
  vectors.assign(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) vectors[size_t(i * n + i)] = 1;
  const auto at = [&](int64_t i, int64_t j) -> double& { return a[size_t(i * n + j)]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, scale = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) (i == j ? scale : off) += at(i, j) * at(i, j);
    if (off <= 1e-30 * std::max(scale, 1e-300)) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (at(p, q) == 0) continue;
        const double theta = (at(q, q) - at(p, p)) / (2 * at(p, q));
        const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p and q, then rows p and q
          const double kp = at(k, p), kq = at(k, q);
          at(k, p) = c * kp - s * kq, at(k, q) = s * kp + c * kq;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double pk = at(p, k), qk = at(q, k);
          at(p, k) = c * pk - s * qk, at(q, k) = s * pk + c * qk;
        }
        for (int64_t k = 0; k < n; ++k) {
          double &vp = vectors[size_t(k * n + p)], &vq = vectors[size_t(k * n + q)];
          const double x = vp, y = vq;
          vp = c * x - s * y, vq = s * x + c * y;
        }
      }
  }
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = at(i, i);
  return values;
}

struct Moments {
  std::vector<double> mean, covariance;  // (F), (F,F)
};
Moments moments(const Tensor& x) {
  const int64_t N = x.size(0), F = x.size(1);
  DEW_REQUIRE(x.dim() == 2 && N >= 2, "[quality] features {}; expected (N, F) with N >= 2", x.describe());
  const std::vector<double> v = x.to_f64_vector();
  Moments m{std::vector<double>(size_t(F), 0.0), std::vector<double>(size_t(F * F), 0.0)};
  for (int64_t i = 0; i < N; ++i)
    for (int64_t f = 0; f < F; ++f) m.mean[size_t(f)] += v[size_t(i * F + f)] / double(N);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t f = 0; f < F; ++f) {
      const double df = v[size_t(i * F + f)] - m.mean[size_t(f)];
      for (int64_t g = 0; g <= f; ++g)
        m.covariance[size_t(f * F + g)] += df * (v[size_t(i * F + g)] - m.mean[size_t(g)]);
    }
  for (int64_t f = 0; f < F; ++f)
    for (int64_t g = 0; g <= f; ++g)
      m.covariance[size_t(g * F + f)] = m.covariance[size_t(f * F + g)] /= double(N - 1);
  return m;
}

}  // namespace

ImageClassifier ImageClassifier::init(int64_t channels, int64_t height, int64_t width, int64_t classes,
                                      uint64_t seed) {
  DEW_REQUIRE(
      channels > 0 && height > 0 && width > 0 && classes >= 2,
      "[quality] a classifier of {}x{}x{} images into {} classes; expected positive sizes and 2+ classes",
      channels, height, width, classes);
  ImageClassifier c;
  c.channels_ = channels, c.height_ = height, c.width_ = width, c.classes_ = classes;
  const int64_t in = channels * height * width;
  const std::pair<const char*, Shape> shapes[] = {{"fc1.weight", {kHidden, in}},
                                                  {"fc2.weight", {kFeatures, kHidden}},
                                                  {"fc3.weight", {classes, kFeatures}}};
  uint64_t stream = 0;
  for (const auto& [name, shape] : shapes) {
    Tensor w = Tensor::empty(shape, DType::f32);
    const double bound = std::sqrt(6.0 / double(shape[0] + shape[1]));
    fill_uniform(w, {seed, stream++}, -bound, bound);
    c.parameters_[name] = w;
    c.parameters_[std::string(name).replace(4, 6, "bias")] = Tensor::zeros({shape[0]}, DType::f32);
  }
  return c;
}

ImageClassifier ImageClassifier::load(const std::string& directory) {
  namespace fs = std::filesystem;
  const std::string config_path = (fs::path(directory) / "config.json").string();
  const nlohmann::json j = parse_json(read_text_file(config_path), config_path);
  DEW_REQUIRE(j.is_object() && j.value("kind", "") == "image_classifier",
              "[quality] {} is not an image classifier's config (kind \"image_classifier\")", config_path);
  const JsonFields f{j, config_path};
  ImageClassifier c = init(f.size("channels"), f.size("height"), f.size("width"), f.size("classes"), 0);
  const SafetensorsFile weights = SafetensorsFile::open((fs::path(directory) / "model.safetensors").string());
  for (auto& [name, p] : c.parameters_) {
    const SafetensorsEntry* e = weights.find(name);
    DEW_REQUIRE(e && e->shape == p.shape(), "[quality] {}: no {} of shape {}", directory, name,
                shape_str(p.shape()));
    p = as_dtype(weights.load(name), DType::f32);
  }
  return c;
}

void ImageClassifier::save(const std::string& directory) const {
  namespace fs = std::filesystem;
  fs::create_directories(directory);
  save_safetensors((fs::path(directory) / "model.safetensors").string(),
                   std::vector<std::pair<std::string, Tensor>>(parameters_.begin(), parameters_.end()));
  write_text_file((fs::path(directory) / "config.json").string(), nlohmann::json{{"kind", "image_classifier"},
                                                                                 {"channels", channels_},
                                                                                 {"height", height_},
                                                                                 {"width", width_},
                                                                                 {"classes", classes_}}
                                                                          .dump(2) +
                                                                      "\n");
}

Tensor ImageClassifier::features(const Tensor& images) const {
  DEW_REQUIRE(images.dim() == 4 && images.size(1) == channels_ && images.size(2) == height_ &&
                  images.size(3) == width_,
              "[quality] images {}; the classifier takes (N, {}, {}, {})", images.describe(), channels_,
              height_, width_);
  const Tensor x =
      cast(images, DType::f32).contiguous().reshape({images.size(0), channels_ * height_ * width_});
  const auto& p = parameters_;
  // GELU as its own (vectorized) op: in bf16, matmul's fused activation is a scalar pass.
  const Tensor h = gelu(linear(x, p.at("fc1.weight"), p.at("fc1.bias")), true);
  return gelu(linear(h, p.at("fc2.weight"), p.at("fc2.bias")), true);
}

Tensor ImageClassifier::logits(const Tensor& images) const {
  return linear(features(images), parameters_.at("fc3.weight"), parameters_.at("fc3.bias"));
}

ImageClassifier train_image_classifier(data::Chain& chain, int64_t classes, int64_t steps, double lr,
                                       uint64_t seed) {
  DEW_REQUIRE(steps >= 1 && lr > 0, "[quality] {} steps at lr {}; expected at least 1 and lr > 0", steps, lr);
  std::optional<ImageClassifier> c;
  std::vector<Param> params;
  std::unique_ptr<Optimizer> optimizer;
  const LrSchedule schedule{.shape = LrSchedule::Shape::cosine, .peak_lr = lr, .total_steps = steps};
  for (int64_t step = 0; step < steps; ++step) {
    const std::optional<data::Batch> batch = chain.next_batch();
    DEW_REQUIRE(batch && batch->images.defined(),
                "[quality] the classifier's chain gave no batch of images at step {}", step);
    const Tensor images = batch->images.slice(0, 0, batch->real_rows).contiguous();
    const Tensor labels = batch->labels.slice(0, 0, batch->real_rows).contiguous();
    if (!c) {
      c = ImageClassifier::init(images.size(1), images.size(2), images.size(3), classes, seed);
      for (auto& [name, p] : c->parameters()) p.requires_grad_();
      params = default_groups(c->parameters(), 0.0);
      optimizer = make_adamw(params, {.beta1 = 0.9, .beta2 = 0.999});
    }
    for (double y : labels.to_f64_vector())
      DEW_REQUIRE(y >= 0 && y < double(classes), "[quality] a label {}; the classifier has classes 0 to {}",
                  int64_t(y), classes - 1);
    backward(cross_entropy(c->logits(images), labels).loss);
    optimizer->step(schedule.at(step));
    optimizer->zero_grad();
  }
  for (auto& [name, p] : c->parameters()) p = p.detach();
  return *c;
}

double classifier_accuracy(const ImageClassifier& classifier, const Tensor& images, const Tensor& labels) {
  NoGrad no_grad;
  const std::vector<double> best = argmax(classifier.logits(images), -1).to_f64_vector(),
                            y = labels.to_f64_vector();
  DEW_REQUIRE(best.size() == y.size() && !y.empty(),
              "[quality] {} images and {} labels; expected one label each", best.size(), y.size());
  int64_t right = 0;
  for (size_t i = 0; i < y.size(); ++i) right += best[i] == y[i];
  return double(right) / double(y.size());
}

double frechet_distance(const Tensor& a, const Tensor& b) {
  DEW_REQUIRE(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(1),
              "[quality] features {} and {}; expected (N, F) and (M, F)", a.describe(), b.describe());
  const int64_t F = a.size(1);
  const Moments x = moments(a), y = moments(b);
  double distance = 0;
  for (int64_t f = 0; f < F; ++f) {
    const double d = x.mean[size_t(f)] - y.mean[size_t(f)];
    distance += d * d + x.covariance[size_t(f * F + f)] + y.covariance[size_t(f * F + f)];
  }
  // S_a^1/2 = V diag(sqrt(l)) V^T, then the square roots' sum of S_a^1/2 S_b S_a^1/2's eigenvalues.
  std::vector<double> v;
  const std::vector<double> l = symmetric_eigen(x.covariance, F, v);
  std::vector<double> root(size_t(F * F), 0.0), m(size_t(F * F), 0.0), r(size_t(F * F), 0.0);
  for (int64_t i = 0; i < F; ++i)
    for (int64_t j = 0; j < F; ++j)
      for (int64_t k = 0; k < F; ++k)
        root[size_t(i * F + j)] +=
            v[size_t(i * F + k)] * std::sqrt(std::max(l[size_t(k)], 0.0)) * v[size_t(j * F + k)];
  for (int64_t i = 0; i < F; ++i)
    for (int64_t k = 0; k < F; ++k)
      for (int64_t j = 0; j < F; ++j)
        r[size_t(i * F + j)] += root[size_t(i * F + k)] * y.covariance[size_t(k * F + j)];
  for (int64_t i = 0; i < F; ++i)
    for (int64_t k = 0; k < F; ++k)
      for (int64_t j = 0; j < F; ++j) m[size_t(i * F + j)] += r[size_t(i * F + k)] * root[size_t(k * F + j)];
  for (int64_t i = 0; i < F; ++i)  // symmetric up to rounding: average the halves
    for (int64_t j = 0; j < i; ++j)
      m[size_t(i * F + j)] = m[size_t(j * F + i)] = (m[size_t(i * F + j)] + m[size_t(j * F + i)]) / 2;
  std::vector<double> unused;
  for (double e : symmetric_eigen(m, F, unused)) distance -= 2 * std::sqrt(std::max(e, 0.0));
  return distance;
}

}  // namespace dew::train
