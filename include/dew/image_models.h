// Image backbones for diffusion and flow models (docs/diffusion.md). A backbone is a config (TOML
// or config.json keys) and parameters by name, with a forward pass written with Dew's ops (so it
// differentiates, in reverse and forward mode) from noisy images, times and class labels to a
// prediction of the images' shape.
#pragma once

#include <dew/tensor.h>

#include <map>
#include <optional>
#include <string>

namespace dew {

// DiT (Peebles & Xie): patch embedding, transformer blocks conditioned by adaLN-Zero on the time and
// the class, a final adaLN layer and unpatchify. Parameter names and initialization follow
// facebookresearch/DiT (the final linear's outputs ordered channel-major, as patchify's tokens).
struct DitConfig {
  int64_t image_size = 28, in_channels = 1, patch_size = 2;
  int64_t hidden_size = 256, depth = 6, num_heads = 4;
  double mlp_ratio = 4;
  // Classes 0..num_classes-1; with class_dropout_prob > 0 one more row, the null class num_classes,
  // which training substitutes with that probability and classifier-free guidance samples with.
  int64_t num_classes = 10;  // 0: unconditional
  double class_dropout_prob = 0.1;
  bool learned_position_embedding = false;  // false: DiT's fixed 2-D sine-cosine table
  int64_t frequency_embedding_size = 256;   // the timestep embedding's width
  double time_scale = 1;                    // the embedder sees time x time_scale (1000 for times in [0, 1])
  // 2: MeanFlow's u(z, r, t), the interval t - r embedded by its own MLP and added to t's.
  int64_t time_inputs = 1;
  int64_t tokens() const { return (image_size / patch_size) * (image_size / patch_size); }
};
// From JSON (config.json, or a TOML [model] table as JSON) with "model_type": "dit"; unknown keys and
// sizes that do not fit (an image not divisible into patches, hidden_size not divisible by heads or
// by 4 for the fixed position table) are refused by name. `source` names it in errors.
DitConfig parse_dit_config(const std::string& json_text, const std::string& source);
// Whether a model config's JSON names a DiT (model_type "dit"): the image models' test, wherever a
// config may be either kind. `source` names the text in errors.
bool is_dit_config(const std::string& json_text, const std::string& source);
std::string dit_config_json(const DitConfig& config);

class Dit {
 public:
  // facebookresearch/DiT's initialization: Xavier-uniform linears (the patch embedding's as a Linear),
  // normal(0.02) class table and time MLP, zero adaLN modulations and final linear, zero biases.
  static Dit init(const DitConfig& config, DType dtype, uint64_t seed);
  // config.json and model.safetensors of a directory, every tensor present with its shape.
  static Dit load(const std::string& directory, std::optional<DType> dtype = std::nullopt);
  void save(const std::string& directory) const;

  const DitConfig& config() const { return config_; }
  const std::map<std::string, Tensor>& parameters() const { return parameters_; }
  std::map<std::string, Tensor>& parameters() { return parameters_; }
  const Tensor& parameter(const std::string& name) const;
  int64_t parameter_count() const;
  Dit to(DType dtype) const;  // every parameter cast
  // Every parameter copied to `device`, as new leaves (requires_grad as the original's).
  Dit to(Device device) const;

  // x (B,C,H,W) noisy images in the parameters' dtype, t (B) f32 or f64 times, labels (B) i64 in [0,
  // num_classes] (num_classes: the null class) or undefined when unconditional; r (B), MeanFlow's
  // other time (time_inputs 2) -> (B,C,H,W).
  Tensor forward(const Tensor& x, const Tensor& t, const Tensor& labels = {}, const Tensor& r = {}) const;

 private:
  DitConfig config_;
  std::map<std::string, Tensor> parameters_;
  Tensor position_table_;  // (1,T,hidden) fixed sine-cosine table in the parameters' dtype
};

// The parameters a DiT config has, in checkpoint order.
std::vector<std::pair<std::string, Shape>> dit_parameter_shapes(const DitConfig& config);

}  // namespace dew
