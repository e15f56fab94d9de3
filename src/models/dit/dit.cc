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
#include <dew/safetensors.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "io/files.h"
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

DType dtype_of_parameters(const std::map<std::string, Tensor>& parameters) {
  return parameters.empty() ? DType::f32 : parameters.begin()->second.dtype();
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
  namespace fs = std::filesystem;
  const std::string config_path = (fs::path(directory) / "config.json").string();
  Dit m;
  m.config_ = parse_dit_config(read_text_file(config_path), config_path);
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(directory);
  const auto shapes = dit_parameter_shapes(m.config_);
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const auto& [name, shape] : shapes) {
    expected.insert(name);
    const SafetensorsEntry* e = checkpoint.find(name);
    if (!e)
      problems.push_back(fmt::format("\"{}\" is missing (expected {})", name, shape_str(shape)));
    else if (e->shape != shape)
      problems.push_back(
          fmt::format("\"{}\" is {} (expected {})", name, shape_str(e->shape), shape_str(shape)));
  }
  for (const std::string& name : checkpoint.names())
    if (!expected.count(name)) problems.push_back(fmt::format("\"{}\" is not a parameter of this dit", name));
  DEW_REQUIRE(problems.empty(), "{}: the checkpoint does not match config.json: {}", directory,
              fmt::join(problems, "; "));
  for (const auto& [name, shape] : shapes) {
    const Tensor t = checkpoint.load(name);
    DEW_REQUIRE(is_floating(t.dtype()), "{}: \"{}\" holds {}; expected floating weights", directory, name,
                dtype_name(t.dtype()));
    m.parameters_[name] = as_dtype(t, dtype.value_or(t.dtype()));
  }
  if (!m.config_.learned_position_embedding)
    m.position_table_ = position_table(m.config_, dtype_of_parameters(m.parameters_));
  return m;
}

void Dit::save(const std::string& directory) const {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, shape] : dit_parameter_shapes(config_)) tensors.push_back({name, parameter(name)});
  save_safetensors_checkpoint(directory, tensors);
  const std::string text = dit_config_json(config_) + "\n";
  AtomicFile config((std::filesystem::path(directory) / "config.json").string());
  config.write(text.data(), text.size());
  config.commit();
}

const Tensor& Dit::parameter(const std::string& name) const {
  const auto it = parameters_.find(name);
  DEW_REQUIRE(it != parameters_.end(), "[dit] no parameter \"{}\"", name);
  return it->second;
}

int64_t Dit::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, p] : parameters_) n += p.numel();
  return n;
}

Dit Dit::to(DType dtype) const {
  Dit m = *this;
  for (auto& [name, t] : m.parameters_)
    if (t.dtype() != dtype) t = cast(t, dtype);
  if (m.position_table_.defined()) m.position_table_ = position_table(m.config_, dtype);
  return m;
}

Dit Dit::to(Device device) const {
  Dit m = *this;
  for (auto& [name, t] : m.parameters_) {
    const bool leaf_wants_grad = t.requires_grad();
    t = t.detach().to(device);
    if (leaf_wants_grad) t.requires_grad_();
  }
  if (m.position_table_.defined()) m.position_table_ = m.position_table_.to(device);
  return m;
}

Tensor Dit::forward(const Tensor& x, const Tensor& t, const Tensor& labels, const Tensor& r) const {
  const DitConfig& c = config_;
  const DType dtype = dtype_of_parameters(parameters_);
  const int64_t h = c.hidden_size, p = c.patch_size, H = c.num_heads, D = h / H;
  DEW_REQUIRE(
      x.dim() == 4 && x.size(1) == c.in_channels && x.size(2) == c.image_size && x.size(3) == c.image_size,
      "[dit] images {}; expected (B, {}, {}, {}): {} channel(s) of {}x{} pixels", x.describe(), c.in_channels,
      c.image_size, c.image_size, c.in_channels, c.image_size, c.image_size);
  DEW_REQUIRE(x.dtype() == dtype, "[dit] images are {}; expected the parameters' {}", dtype_name(x.dtype()),
              dtype_name(dtype));
  const int64_t B = x.size(0), T = c.tokens();
  DEW_REQUIRE(t.dim() == 1 && t.size(0) == B && is_floating(t.dtype()),
              "[dit] times {}; expected a floating vector of {} (one per image)", t.describe(), B);
  DEW_REQUIRE((c.time_inputs == 2) == r.defined(), "[dit] {}; this dit takes {}",
              r.defined() ? "a second time r was given" : "no second time r was given",
              c.time_inputs == 2 ? "r and t (MeanFlow)" : "t alone");
  const auto w = [&](const std::string& name) -> const Tensor& { return parameter(name); };
  // The time embedders run in f32 (or f64) from the times, as DiT's do, then join the parameters' dtype.
  const auto embed_time = [&](const char* embedder, const Tensor& time) {
    const DType embed_dtype = dtype == DType::f64 ? DType::f64 : DType::f32;
    Tensor scaled = cast(time, embed_dtype);
    if (c.time_scale != 1) scaled = mul(scaled, Tensor::full({}, c.time_scale, embed_dtype, time.device()));
    const Tensor f = cast(timestep_embedding(scaled, c.frequency_embedding_size), dtype);
    const std::string e(embedder);
    return linear(linear(f, w(e + ".mlp.0.weight"), w(e + ".mlp.0.bias"), {}, Activation::silu),
                  w(e + ".mlp.2.weight"), w(e + ".mlp.2.bias"));
  };
  Tensor cond = embed_time("t_embedder", t);
  if (r.defined()) {
    DEW_REQUIRE(r.shape() == t.shape(), "[dit] r {}; expected t's shape {}", r.describe(),
                shape_str(t.shape()));
    cond = add(cond, embed_time("r_embedder", sub(t, cast(r, t.dtype()))));
  }
  if (c.num_classes > 0) {
    DEW_REQUIRE(labels.defined() && labels.dtype() == DType::i64 && labels.shape() == Shape({B}),
                "[dit] labels {}; expected i64 ({}) classes",
                labels.defined() ? labels.describe() : "missing", B);
    const int64_t rows = w("y_embedder.embedding_table.weight").size(0);
    for (double label : labels.to_f64_vector())
      DEW_REQUIRE(label >= 0 && label<double(rows), "[dit] class {}; expected 0 to {}{}", int64_t(label),
                                      c.num_classes - 1, rows>
                                    c.num_classes
                      ? fmt::format(", or {} (no class)", c.num_classes)
                      : "");
    cond = add(cond, embedding(w("y_embedder.embedding_table.weight"), labels));
  }
  const Tensor cond_act = silu(cond);  // (B,h): every adaLN reads silu(c)

  Tensor tokens = linear(patchify(x, p), w("x_embedder.proj.weight").reshape({h, c.in_channels * p * p}),
                         w("x_embedder.proj.bias"));
  tokens = add(tokens, c.learned_position_embedding ? w("pos_embed") : position_table_);
  for (int64_t i = 0; i < c.depth; ++i) {
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
    // GELU as its own (vectorized) op: matmul's fused activation is a scalar pass (docs/perf.md).
    const Tensor hidden = gelu(linear(b, bw("mlp.fc1.weight"), bw("mlp.fc1.bias")), true);
    tokens = gated_add(tokens, linear(hidden, bw("mlp.fc2.weight"), bw("mlp.fc2.bias")), m[5]);
  }
  const std::vector<Tensor> f = split(
      linear(cond_act, w("final_layer.adaLN_modulation.1.weight"), w("final_layer.adaLN_modulation.1.bias")),
      {h, h}, -1);
  const Tensor out = linear(modulate(layer_norm(tokens, {}, {}, kNormEps).y, f[0], f[1]),
                            w("final_layer.linear.weight"), w("final_layer.linear.bias"));
  return unpatchify(out, p, c.image_size, c.image_size);
}

}  // namespace dew
