// The UNet (diffusers' UNet2DModel, image_models.h): emb = time_embedding(timestep features of t)
// (+ class_embedding(label)) (+ r_embedding(features of t - r)); x = conv_in(x), kept as the first
// skip; per down block, ResNet blocks (then attention in Attn blocks), each output a skip, and a
// strided conv whose output is a skip too; the middle ResNet, attention, ResNet; per up block, each
// ResNet block on the channel concatenation of x and the last unused skip (then attention), then
// nearest upsampling and a conv; out = conv_out(silu(group_norm(x))).
#include <dew/error.h>
#include <dew/image_models.h>
#include <dew/image_ops.h>
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cmath>
#include <filesystem>

#include "io/files.h"
#include "models/image_checkpoint.h"
#include "models/image_conditioning.h"
#include "models/linear.h"

namespace dew {
namespace {

using models::linear;

Conv2dOptions padded(int64_t pad, int64_t stride = 1) {
  Conv2dOptions o;
  o.padding = {pad, pad}, o.stride = {stride, stride};
  return o;
}

// One forward pass's view of the parameters.
struct UnetPass {
  const UnetConfig& c;
  const std::map<std::string, Tensor>& p;
  Tensor emb_act;  // (B,E) silu(emb): every ResNet block projects it

  const Tensor& w(const std::string& name) const { return models::parameter_named(p, name, "unet"); }
  Tensor conv(const std::string& name, const Tensor& x, const Conv2dOptions& o) const {
    return conv2d(x, w(name + ".weight"), w(name + ".bias"), o);
  }
  Tensor norm(const std::string& name, const Tensor& x) const {
    return group_norm(x, c.norm_num_groups, w(name + ".weight"), w(name + ".bias"), c.norm_eps);
  }
  Tensor resnet(const std::string& name, const Tensor& x) const {
    Tensor h = conv(name + ".conv1", silu(norm(name + ".norm1", x)), padded(1));
    const Tensor t = linear(emb_act, w(name + ".time_emb_proj.weight"), w(name + ".time_emb_proj.bias"));
    h = add(h, t.reshape({t.size(0), t.size(1), 1, 1}));
    h = conv(name + ".conv2", silu(norm(name + ".norm2", h)), padded(1));
    const bool projected = p.count(name + ".conv_shortcut.weight") > 0;
    return add(projected ? conv(name + ".conv_shortcut", x, padded(0)) : x, h);
  }
  // Self-attention over the H W positions, heads of attention_head_dim channels (0: one head).
  Tensor attention(const std::string& name, const Tensor& x) const {
    const int64_t B = x.size(0), C = x.size(1), T = x.size(2) * x.size(3);
    const int64_t D = c.attention_head_dim > 0 ? c.attention_head_dim : C, H = C / D;
    const Tensor tokens =
        permute_copy(norm(name + ".group_norm", x).reshape({B, C, T}), {0, 2, 1});  // (B,T,C)
    const auto project = [&](const char* which) {
      return linear(tokens, w(name + which + ".weight"), w(name + which + ".bias")).reshape({B, T, H, D});
    };
    const Tensor attended = dew::attention(project(".to_q"), project(".to_k"), project(".to_v")).out;
    const Tensor out =
        linear(attended.reshape({B, T, C}), w(name + ".to_out.0.weight"), w(name + ".to_out.0.bias"));
    return add(permute_copy(out, {0, 2, 1}).reshape(x.shape()), x);
  }
  // diffusers' Timesteps then TimestepEmbedding. Its frequencies 10000^(-i/(half - shift)) are
  // timestep_embedding's max_period^(-i/half) with max_period = 10000^(half/(half - shift)).
  Tensor embed_time(const std::string& embedder, const Tensor& time, DType dtype) const {
    const int64_t C0 = c.block_out_channels.front(), half = C0 / 2;
    const double max_period = std::pow(10000.0, double(half) / (double(half) - c.freq_shift));
    Tensor f = models::time_features(time, c.time_scale, C0, max_period, dtype);  // cos then sin
    if (!c.flip_sin_to_cos) {
      const std::vector<Tensor> halves = split(f, {half, half}, -1);
      f = concat({halves[1], halves[0]}, -1);
    }
    return linear(
        linear(f, w(embedder + ".linear_1.weight"), w(embedder + ".linear_1.bias"), {}, Activation::silu),
        w(embedder + ".linear_2.weight"), w(embedder + ".linear_2.bias"));
  }
};

bool attention_block(const std::string& type) {
  return type.starts_with("Attn");
}

}  // namespace

Unet Unet::init(const UnetConfig& config, DType dtype, uint64_t seed) {
  Unet m;
  m.config_ = config;
  const auto shapes = unet_parameter_shapes(config);
  std::map<std::string, int64_t> fan_in;  // each weight's, which its bias shares
  for (const auto& [name, shape] : shapes)
    if (name.ends_with(".weight") && shape.size() >= 2)
      fan_in[name.substr(0, name.size() - 7)] = numel_of(shape) / shape[0];
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, shape] = shapes[i];
    const std::string module = name.substr(0, name.rfind('.'));
    Tensor t = Tensor::empty(shape, dtype);
    const RandomKey key{seed, uint64_t(i), 0};
    const bool last_of_branch =
        module.ends_with(".conv2") || module.ends_with(".to_out.0") || module == "conv_out";
    if (name == "class_embedding.weight") {
      fill_normal(t, key, 0, 1);
    } else if (shape.size() == 1 && !fan_in.count(module)) {  // GroupNorm: weight 1, bias 0
      t = Tensor::full(shape, name.ends_with(".weight") ? 1.0 : 0.0, dtype);
    } else if (last_of_branch) {  // each block starts as its skip path (DDPM's zero-initialized outputs)
      t = Tensor::zeros(shape, dtype);
    } else {  // torch's Conv2d and Linear: weight and bias uniform within 1/sqrt(fan_in)
      const double bound = 1.0 / std::sqrt(double(fan_in.at(module)));
      fill_uniform(t, key, -bound, bound);
    }
    m.parameters_[name] = t;
  }
  return m;
}

Unet Unet::load(const std::string& directory, std::optional<DType> dtype) {
  const std::string config_path = (std::filesystem::path(directory) / "config.json").string();
  Unet m;
  m.config_ = parse_unet_config(read_text_file(config_path), config_path);
  m.parameters_ = models::load_parameters(directory, unet_parameter_shapes(m.config_), "unet", dtype);
  return m;
}

void Unet::save(const std::string& directory, const RankShards* by_rank) const {
  models::save_parameters(directory, unet_parameter_shapes(config_), parameters_, unet_config_json(config_),
                          by_rank);
}

const Tensor& Unet::parameter(const std::string& name) const {
  return models::parameter_named(parameters_, name, "unet");
}

Unet Unet::to(DType dtype, const ParameterCast& cast) const {
  Unet m = *this;
  models::cast_parameters(m.parameters_, dtype, cast);
  return m;
}

Unet Unet::to(Device device) const {
  Unet m = *this;
  models::move_parameters(m.parameters_, device);
  return m;
}

Tensor Unet::forward(const Tensor& x, const Tensor& t, const Tensor& labels, const Tensor& r) const {
  const UnetConfig& c = config_;
  const DType dtype = models::dtype_of_parameters(parameters_);
  models::check_images("unet", x, c.in_channels, c.sample_size, dtype);
  const int64_t B = x.size(0);
  models::check_times("unet", t, r, B, c.time_inputs);
  UnetPass pass{c, parameters_, Tensor()};
  Tensor emb = pass.embed_time("time_embedding", t, dtype);
  if (r.defined()) {
    emb = add(emb, pass.embed_time("r_embedding", sub(t, cast(r, t.dtype())), dtype));
  }
  if (c.num_classes > 0) {
    const Tensor& table = parameter("class_embedding.weight");
    models::check_labels("unet", labels, B, c.num_classes, table.size(0));
    emb = add(emb, embedding(table, labels));
  }
  pass.emb_act = silu(emb);

  Tensor h = pass.conv("conv_in", x, padded(1));
  std::vector<Tensor> skips{h};
  const size_t levels = c.block_out_channels.size();
  for (size_t i = 0; i < levels; ++i) {
    const std::string block = fmt::format("down_blocks.{}", i);
    for (int64_t j = 0; j < c.layers_per_block; ++j) {
      h = pass.resnet(fmt::format("{}.resnets.{}", block, j), h);
      if (attention_block(c.down_block_types[i]))
        h = pass.attention(fmt::format("{}.attentions.{}", block, j), h);
      skips.push_back(h);
    }
    if (i + 1 < levels) {
      h = pass.conv(block + ".downsamplers.0.conv", h, padded(1, 2));
      skips.push_back(h);
    }
  }
  h = pass.resnet("mid_block.resnets.0", h);
  if (c.add_attention) h = pass.attention("mid_block.attentions.0", h);
  h = pass.resnet("mid_block.resnets.1", h);
  for (size_t i = 0; i < levels; ++i) {
    const std::string block = fmt::format("up_blocks.{}", i);
    for (int64_t j = 0; j <= c.layers_per_block; ++j) {
      h = pass.resnet(fmt::format("{}.resnets.{}", block, j), concat({h, skips.back()}, 1));
      skips.pop_back();
      if (attention_block(c.up_block_types[i]))
        h = pass.attention(fmt::format("{}.attentions.{}", block, j), h);
    }
    if (i + 1 < levels) h = pass.conv(block + ".upsamplers.0.conv", upsample_nearest(h, 2), padded(1));
  }
  return pass.conv("conv_out", silu(pass.norm("conv_norm_out", h)), padded(1));
}

// Multiply-adds per image: each conv's weight once per output position of its level, each attention's
// four projections per position plus its two T x T products, the embeddings once.
double Unet::forward_flops() const {
  const UnetConfig& c = config_;
  const int64_t levels = int64_t(c.block_out_channels.size());
  const auto positions = [&](int64_t level) {
    const double side = double(c.sample_size >> level);
    return side * side;
  };
  const auto level_of = [&](const std::string& name) -> int64_t {  // where the layer's outputs live
    int64_t i = 0;
    if (std::sscanf(name.c_str(), "down_blocks.%ld", &i) == 1)
      return name.find("downsamplers") != std::string::npos ? i + 1 : i;
    if (std::sscanf(name.c_str(), "up_blocks.%ld", &i) == 1)
      return name.find("upsamplers") != std::string::npos ? levels - 2 - i : levels - 1 - i;
    return name.starts_with("mid_block") ? levels - 1 : 0;
  };
  double flops = 0;
  for (const auto& [name, p] : parameters_) {
    if (p.dim() < 2 || name == "class_embedding.weight") continue;
    const bool per_image = name.find("time_emb") != std::string::npos || name.starts_with("r_embedding");
    flops += 2.0 * double(p.numel()) * (per_image ? 1.0 : positions(level_of(name)));
    if (name.ends_with(".to_q.weight")) {
      const double T = positions(level_of(name));
      flops += 4.0 * T * T * double(p.size(0));
    }
  }
  return flops;
}

}  // namespace dew
