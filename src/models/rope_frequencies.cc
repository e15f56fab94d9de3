// Rotary inverse frequencies for each rope type, as transformers' modeling_rope_utils defines them,
// evaluated in f64 (Dew rounds a table once, at the end: rope_tables).
#include <dew/models.h>

#include <algorithm>
#include <cmath>

namespace dew {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<double> default_inv_freq(double theta, int64_t dim) {
  std::vector<double> f(size_t(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) f[size_t(i)] = 1.0 / std::pow(theta, double(2 * i) / double(dim));
  return f;
}

// Llama 3.1: long wavelengths slowed by `factor`, short ones kept, a smooth blend between.
void llama3(std::vector<double>& f, const RopeConfig& r) {
  const double old_context = double(r.original_max_position_embeddings);
  const double low_wavelen = old_context / r.low_freq_factor, high_wavelen = old_context / r.high_freq_factor;
  for (double& x : f) {
    const double wavelen = 2 * kPi / x;
    if (wavelen > low_wavelen) {
      x /= r.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth =
          (old_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      x = (1 - smooth) * x / r.factor + smooth * x;
    }
  }
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// YaRN: interpolation (inv_freq / factor) for dimensions that rotate fewer than beta_slow times over
// the original context, extrapolation for more than beta_fast, a linear ramp between.
double yarn(std::vector<double>& f, const RopeConfig& r, double theta, int64_t dim, int64_t max_positions) {
  // The explicit factor, as current transformers uses it (older releases replaced it by
  // max_position_embeddings / original_max_position_embeddings when the latter was given).
  const double factor = r.factor;
  const int64_t original =
      r.original_max_position_embeddings > 0 ? r.original_max_position_embeddings : max_positions;
  double attention = 0;
  if (r.attention_factor)
    attention = *r.attention_factor;
  else if (r.mscale && r.mscale_all_dim && *r.mscale != 0 && *r.mscale_all_dim != 0)
    attention = yarn_mscale(factor, *r.mscale) / yarn_mscale(factor, *r.mscale_all_dim);
  else
    attention = yarn_mscale(factor, 1);
  auto correction_dim = [&](double rotations) {
    return double(dim) * std::log(double(original) / (rotations * 2 * kPi)) / (2 * std::log(theta));
  };
  double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
  if (r.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (low == high) high += 0.001;  // as transformers: no zero-width ramp
  for (size_t i = 0; i < f.size(); ++i) {
    const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1 - ramp;  // weight of the unscaled frequency
    f[i] = f[i] / factor * (1 - extrapolation) + f[i] * extrapolation;
  }
  return attention;
}

}  // namespace

RopeFrequencies rope_frequencies(const ModelConfig& config, int64_t sequence_length) {
  const RopeConfig& r = config.rope;
  RopeFrequencies out;
  out.rotary_dim = int64_t(double(config.head_dim) * r.partial_rotary_factor);
  double theta = r.theta;
  if (r.type == "dynamic") {
    // NTK-aware: the base grows once the sequence outgrows the trained length.
    const int64_t trained = config.max_position_embeddings;
    const double length = double(std::max(sequence_length, trained));
    const double d = double(out.rotary_dim);
    theta *= std::pow(r.factor * length / double(trained) - (r.factor - 1), d / (d - 2));
  }
  out.inv_freq = default_inv_freq(theta, out.rotary_dim);
  if (r.type == "linear")
    for (double& x : out.inv_freq) x /= r.factor;
  else if (r.type == "llama3")
    llama3(out.inv_freq, r);
  else if (r.type == "yarn")
    out.attention_factor = yarn(out.inv_freq, r, theta, out.rotary_dim, config.max_position_embeddings);
  return out;
}

}  // namespace dew
