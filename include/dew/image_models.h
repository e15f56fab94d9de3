// Image backbones for diffusion and flow models (docs/diffusion.md). A backbone is a config (TOML
// or config.json keys) and parameters by name, with a forward pass written with Dew's ops (so it
// differentiates, in reverse and forward mode) from noisy images, times and class labels to a
// prediction of the images' shape.
#pragma once

#include <dew/models.h>
#include <dew/safetensors.h>
#include <dew/tensor.h>

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

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
std::string dit_config_json(const DitConfig& config);

class Dit {
 public:
  // facebookresearch/DiT's initialization: Xavier-uniform linears (the patch embedding's as a Linear),
  // normal(0.02) class table and time MLP, zero adaLN modulations and final linear, zero biases.
  static Dit init(const DitConfig& config, DType dtype, uint64_t seed);
  // config.json and model.safetensors of a directory, every tensor present with its shape.
  static Dit load(const std::string& directory, std::optional<DType> dtype = std::nullopt);
  void save(const std::string& directory, const RankShards* by_rank = nullptr) const;  // as CausalLM::save

  const DitConfig& config() const { return config_; }
  const std::map<std::string, Tensor>& parameters() const { return parameters_; }
  std::map<std::string, Tensor>& parameters() { return parameters_; }
  const Tensor& parameter(const std::string& name) const;
  int64_t parameter_count() const;
  Dit to(DType dtype, const ParameterCast& cast = {}) const;  // every parameter cast
  // Every parameter copied to `device`, as new leaves (requires_grad as the original's).
  Dit to(Device device) const;
  double forward_flops() const;  // per image
  // Entered by every forward from now on, by this model and its copies (to()); not owned. Null: none.
  void set_layer_boundaries(LayerBoundaries* boundaries) { boundaries_ = boundaries; }

  // x (B,C,H,W) noisy images in the parameters' dtype, t (B) f32 or f64 times, labels (B) i64 in [0,
  // num_classes] (num_classes: the null class) or undefined when unconditional; r (B), MeanFlow's
  // other time (time_inputs 2) -> (B,C,H,W).
  Tensor forward(const Tensor& x, const Tensor& t, const Tensor& labels = {}, const Tensor& r = {}) const;

 private:
  DitConfig config_;
  std::map<std::string, Tensor> parameters_;
  Tensor position_table_;  // (1,T,hidden) fixed sine-cosine table in the parameters' dtype
  LayerBoundaries* boundaries_ = nullptr;
};

// The parameters a DiT config has, in checkpoint order.
std::vector<std::pair<std::string, Shape>> dit_parameter_shapes(const DitConfig& config);

// UNet: diffusers' UNet2DModel — conv_in, down blocks of ResNet blocks (GroupNorm, SiLU, 3x3 convs,
// the time embedding projected and added per channel) with self-attention in the Attn blocks and a
// strided 3x3 conv between resolutions, a middle ResNet-attention-ResNet, up blocks taking the down
// path's outputs as skips (channel concatenation) with nearest upsampling and a 3x3 conv, then
// GroupNorm, SiLU and conv_out. Parameter names and config.json keys are diffusers'.
struct UnetConfig {
  int64_t sample_size = 28, in_channels = 1, out_channels = 1;
  std::vector<int64_t> block_out_channels{32, 64, 64};
  // Per resolution, highest first: "DownBlock2D" or "AttnDownBlock2D"; up blocks lowest first:
  // "UpBlock2D" or "AttnUpBlock2D".
  std::vector<std::string> down_block_types{"DownBlock2D", "AttnDownBlock2D", "AttnDownBlock2D"};
  std::vector<std::string> up_block_types{"AttnUpBlock2D", "AttnUpBlock2D", "UpBlock2D"};
  int64_t layers_per_block = 2;
  int64_t norm_num_groups = 8;
  double norm_eps = 1e-5;
  int64_t attention_head_dim = 8;  // heads = channels / attention_head_dim
  bool add_attention = true;       // the middle block's attention
  bool flip_sin_to_cos = true;     // the time embedding's halves: cos then sin (false: sin then cos)
  double freq_shift = 0;           // frequencies 10000^(-i / (half - freq_shift))
  // As the DiT's: classes 0..num_classes-1 (diffusers' class_embedding), with class_dropout_prob > 0
  // one more row, the null class num_classes, for classifier-free guidance.
  int64_t num_classes = 10;
  double class_dropout_prob = 0.1;
  double time_scale = 1;    // the embedding sees time x time_scale (1000 for times in [0, 1])
  int64_t time_inputs = 1;  // 2: MeanFlow's u(z, r, t), t - r embedded by r_embedding and added
  int64_t time_embed_dim() const { return 4 * block_out_channels.front(); }
};
// From JSON (a diffusers config.json with "_class_name": "UNet2DModel", or a TOML [model] table with
// model_type "unet"). Keys that change the mathematics beyond what Dew's UNet computes (another
// time embedding or shift mode, an activation other than silu, center_input_sample, ...) and sizes
// that do not fit are refused by name. `source` names it in errors.
UnetConfig parse_unet_config(const std::string& json_text, const std::string& source);
std::string unet_config_json(const UnetConfig& config);  // diffusers' keys, plus Dew's own

class Unet {
 public:
  // PyTorch's default initialization (Kaiming-uniform convs and linears, bias U(+-1/sqrt(fan_in)),
  // normal(0, 1) class table, unit GroupNorm weights), then zero for the last conv of every ResNet
  // block, every attention output and conv_out, so each block starts as its skip path.
  static Unet init(const UnetConfig& config, DType dtype, uint64_t seed);
  static Unet load(const std::string& directory, std::optional<DType> dtype = std::nullopt);
  void save(const std::string& directory, const RankShards* by_rank = nullptr) const;  // as CausalLM::save

  const UnetConfig& config() const { return config_; }
  const std::map<std::string, Tensor>& parameters() const { return parameters_; }
  std::map<std::string, Tensor>& parameters() { return parameters_; }
  const Tensor& parameter(const std::string& name) const;
  Unet to(DType dtype, const ParameterCast& cast = {}) const;
  Unet to(Device device) const;
  // As Dit::forward: x (B,C,H,W), t (B), labels (B) i64 or undefined, r (B) for time_inputs 2.
  Tensor forward(const Tensor& x, const Tensor& t, const Tensor& labels = {}, const Tensor& r = {}) const;
  double forward_flops() const;  // per image

 private:
  UnetConfig config_;
  std::map<std::string, Tensor> parameters_;
};

// The parameters a UNet config has, in checkpoint order.
std::vector<std::pair<std::string, Shape>> unet_parameter_shapes(const UnetConfig& config);

// What the Trainer and the samplers need of any image backbone.
struct ImageConditioning {
  int64_t image_size = 0, in_channels = 0, num_classes = 0, time_inputs = 1;
  double class_dropout_prob = 0;
};

// An image backbone of either kind, by its config's model type ("dit", or "unet" for UNet2DModel).
class ImageModel {
 public:
  ImageModel(Dit model) : model_(std::move(model)) {}
  ImageModel(Unet model) : model_(std::move(model)) {}
  // From a model config's JSON (TOML [model] table or config.json): its model type chooses the kind.
  static ImageModel init(const std::string& model_json, DType dtype, uint64_t seed);
  static ImageModel load(const std::string& directory, std::optional<DType> dtype = std::nullopt);
  void save(const std::string& directory, const RankShards* by_rank = nullptr) const;  // as CausalLM::save

  std::string model_type() const;  // "dit" or "unet"
  ImageConditioning conditioning() const;
  std::string config_json() const;
  const std::map<std::string, Tensor>& parameters() const;
  std::map<std::string, Tensor>& parameters();
  int64_t parameter_count() const;
  ImageModel to(DType dtype, const ParameterCast& cast = {}) const;
  // A DiT's (Dit::set_layer_boundaries); a UNet's forward enters none.
  void set_layer_boundaries(LayerBoundaries* boundaries);
  ImageModel to(Device device) const;
  Tensor forward(const Tensor& x, const Tensor& t, const Tensor& labels = {}, const Tensor& r = {}) const;
  double forward_flops() const;  // per image
  const Dit* dit() const { return std::get_if<Dit>(&model_); }
  const Unet* unet() const { return std::get_if<Unet>(&model_); }

 private:
  std::variant<Dit, Unet> model_;
};

// Whether a model config's JSON names an image backbone (model_type "dit" or "unet", or diffusers'
// "_class_name": "UNet2DModel"). `source` names the text in errors.
bool is_image_model_config(const std::string& json_text, const std::string& source);
// An image model config's conditioning, its sizes checked by the backbone's parser.
ImageConditioning image_model_conditioning(const std::string& json_text, const std::string& source);

}  // namespace dew
