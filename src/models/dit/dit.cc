// DiT (facebookresearch/DiT's models.py): x = patch_embed(patchify(x)) + positions; c = t_embedder(t)
// (+ r_embedder(t - r)) + y_embedder(label); per block, with (shift, scale, gate) x 2 = adaLN(silu(c)):
// x = gated_add(x, attn(modulate(norm1(x), shift_msa, scale_msa)), gate_msa), then the same for the
// MLP (GELU, tanh form); out = unpatchify(linear(modulate(norm(x), shift, scale))). Norms are
// LayerNorm without affine, eps 1e-6.
#include <dew/error.h>
#include <dew/image_models.h>
#include <dew/image_ops.h>
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cmath>
#include <filesystem>

#include "io/files.h"
#include "models/families.h"
#include "models/image_checkpoint.h"
#include "models/image_conditioning.h"
#include "models/linear.h"

namespace dew {
namespace {

using models::linear;

constexpr double kNormEps = 1e-6;

// DiT's fixed table: per token (row i, column j of the patch grid) the 1-D sine-cosine embedding of j
// in the first half of the channels and of i in the second; each half sin(pos w_k) then cos(pos w_k),
// w_k = 10000^(-k/(h/4)).
Tensor position_table(const DitConfig& c, DType dtype) {
  const int64_t h = c.hidden_size, grid = c.image_size / c.patch_size, quarter = h / 4;
  std::vector<double> v(size_t(grid * grid * h));
  for (int64_t i = 0; i < grid; ++i)
    for (int64_t j = 0; j < grid; ++j) {
      double* row = v.data() + (i * grid + j) * h;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t k = 0; k < quarter; ++k) {
          const double angle = double(half == 0 ? j : i) * std::pow(10000.0, -double(k) / double(quarter));
          row[half * 2 * quarter + k] = std::sin(angle);
          row[half * 2 * quarter + quarter + k] = std::cos(angle);
        }
    }
  return Tensor::from_values(v, {1, grid * grid, h}, dtype);
}

}  // namespace

Dit Dit::init(const DitConfig& config, DType dtype, uint64_t seed) {
  Dit m;
  m.config_ = config;
  const auto shapes = dit_parameter_shapes(config);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, shape] = shapes[i];
    Tensor t = Tensor::empty(shape, dtype);
    const RandomKey key{seed, uint64_t(i), 0};
    if (name.ends_with(".bias") || name.find("adaLN_modulation") != std::string::npos ||
        name.starts_with("final_layer.linear")) {
      t = Tensor::zeros(shape, dtype);  // adaLN-Zero: every block starts as the identity, the output at 0
    } else if (name.starts_with("t_embedder") || name.starts_with("r_embedder") ||
               name.starts_with("y_embedder") || name == "pos_embed") {
      fill_normal(t, key, 0, 0.02);
    } else {  // Xavier-uniform over (out, in), the patch embedding's (h, C, p, p) as (h, C p p)
      const double fan_out = double(shape[0]), fan_in = double(numel_of(shape)) / fan_out;
      const double bound = std::sqrt(6.0 / (fan_in + fan_out));
      fill_uniform(t, key, -bound, bound);
    }
    m.parameters_[name] = t;
  }
  if (!config.learned_position_embedding) m.position_table_ = position_table(config, dtype);
  return m;
}

Dit Dit::load(const std::string& directory, std::optional<DType> dtype) {
  const std::string config_path = (std::filesystem::path(directory) / "config.json").string();
  Dit m;
  m.config_ = parse_dit_config(read_text_file(config_path), config_path);
  m.parameters_ = models::load_parameters(directory, dit_parameter_shapes(m.config_), "dit", dtype);
  if (!m.config_.learned_position_embedding)
    m.position_table_ = position_table(m.config_, models::dtype_of_parameters(m.parameters_));
  return m;
}

void Dit::save(const std::string& directory, const RankShards* by_rank) const {
  models::save_parameters(directory, dit_parameter_shapes(config_), parameters_, dit_config_json(config_),
                          by_rank);
}

const Tensor& Dit::parameter(const std::string& name) const {
  return models::parameter_named(parameters_, name, "dit");
}

int64_t Dit::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, p] : parameters_) n += p.numel();
  return n;
}

Dit Dit::to(DType dtype, const ParameterCast& cast) const {
  Dit m = *this;
  models::cast_parameters(m.parameters_, dtype, cast);
  if (m.position_table_.defined()) m.position_table_ = position_table(m.config_, dtype);
  return m;
}

Dit Dit::to(Device device) const {
  Dit m = *this;
  models::move_parameters(m.parameters_, device);
  if (m.position_table_.defined()) m.position_table_ = m.position_table_.to(device);
  return m;
}

double Dit::forward_flops() const {
  const DitConfig& c = config_;
  const double T = double(c.tokens());
  double per_token = 0, per_image = 0;  // weights multiplied once per token, and once per image
  for (const auto& [name, p] : parameters_) {
    if (p.dim() < 2 || name.starts_with("y_embedder") || name == "pos_embed") continue;  // lookups and adds
    const bool conditioning =
        name.find("embedder") != std::string::npos || name.find("adaLN") != std::string::npos;
    (conditioning ? per_image : per_token) += double(p.numel());
  }
  return 2 * (per_token * T + per_image) + 4 * double(c.depth) * T * T * double(c.hidden_size);
}

Tensor Dit::forward(const Tensor& x, const Tensor& t, const Tensor& labels, const Tensor& r) const {
  const DitConfig& c = config_;
  const DType dtype = models::dtype_of_parameters(parameters_);
  const int64_t h = c.hidden_size, p = c.patch_size, H = c.num_heads, D = h / H;
  models::check_images("dit", x, c.in_channels, c.image_size, dtype);
  const int64_t B = x.size(0), T = c.tokens();
  models::check_times("dit", t, r, B, c.time_inputs);
  const auto w = [&](const std::string& name) -> const Tensor& { return parameter(name); };
  // The time embedders run in f32 (or f64) from the times, as DiT's do, then join the parameters' dtype.
  const auto embed_time = [&](const char* embedder, const Tensor& time) {
    const Tensor f = models::time_features(time, c.time_scale, c.frequency_embedding_size, 10000, dtype);
    const std::string e(embedder);
    return linear(linear(f, w(e + ".mlp.0.weight"), w(e + ".mlp.0.bias"), {}, Activation::silu),
                  w(e + ".mlp.2.weight"), w(e + ".mlp.2.bias"));
  };
  Tensor cond = embed_time("t_embedder", t);
  if (r.defined()) {
    cond = add(cond, embed_time("r_embedder", sub(t, cast(r, t.dtype()))));
  }
  if (c.num_classes > 0) {
    models::check_labels("dit", labels, B, c.num_classes, w("y_embedder.embedding_table.weight").size(0));
    cond = add(cond, embedding(w("y_embedder.embedding_table.weight"), labels));
  }
  const Tensor cond_act = silu(cond);  // (B,h): every adaLN reads silu(c)

  Tensor tokens = linear(patchify(x, p), w("x_embedder.proj.weight").reshape({h, c.in_channels * p * p}),
                         w("x_embedder.proj.bias"));
  tokens = add(tokens, c.learned_position_embedding ? w("pos_embed") : position_table_);
  for (int64_t i = 0; i < c.depth; ++i) {
    tokens = models::enter_layer(boundaries_, i, tokens);
    const auto bw = [&](const char* name) -> const Tensor& {
      return w(fmt::format("blocks.{}.{}", i, name));
    };
    const std::vector<Tensor> m =
        split(linear(cond_act, bw("adaLN_modulation.1.weight"), bw("adaLN_modulation.1.bias")),
              {h, h, h, h, h, h}, -1);
    const Tensor a = modulate(layer_norm(tokens, {}, {}, kNormEps).y, m[0], m[1]);
    const std::vector<Tensor> qkv =
        split(linear(a, bw("attn.qkv.weight"), bw("attn.qkv.bias")), {h, h, h}, -1);
    const Tensor attended =
        attention(qkv[0].reshape({B, T, H, D}), qkv[1].reshape({B, T, H, D}), qkv[2].reshape({B, T, H, D}))
            .out;
    tokens = gated_add(
        tokens, linear(attended.reshape({B, T, h}), bw("attn.proj.weight"), bw("attn.proj.bias")), m[2]);
    const Tensor b = modulate(layer_norm(tokens, {}, {}, kNormEps).y, m[3], m[4]);
    // GELU as its own (vectorized) op: in bf16, matmul's fused activation is a scalar pass (docs/perf.md).
    const Tensor hidden = gelu(linear(b, bw("mlp.fc1.weight"), bw("mlp.fc1.bias")), true);
    tokens = gated_add(tokens, linear(hidden, bw("mlp.fc2.weight"), bw("mlp.fc2.bias")), m[5]);
  }
  tokens = models::enter_layer(boundaries_, c.depth, tokens);
  const std::vector<Tensor> f = split(
      linear(cond_act, w("final_layer.adaLN_modulation.1.weight"), w("final_layer.adaLN_modulation.1.bias")),
      {h, h}, -1);
  const Tensor out = linear(modulate(layer_norm(tokens, {}, {}, kNormEps).y, f[0], f[1]),
                            w("final_layer.linear.weight"), w("final_layer.linear.bias"));
  return unpatchify(out, p, c.image_size, c.image_size);
}

}  // namespace dew
