// mamba2: Mamba-2's state space language model as transformers' Mamba2ForCausalLM computes it (its
// torch_forward): embeddings; per layer an RMSNorm, the mixer, and the residual add; a final RMSNorm and
// the head. The mixer's recurrence is linear_recurrence with one decay per head (docs/recurrence.md) and
// its convolution short_conv, both restarting at packed documents' starts; with a cache, each layer's
// last convolution inputs and state carry the sequence from one call to the next (generation).
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/recurrence_ops.h>

#include <cmath>

#include "models/families.h"
#include "models/linear.h"
#include "models/recurrent_cache.h"

namespace dew::models {
namespace {

std::string block(int64_t i, const std::string& rest) {
  return fmt::format("backbone.layers.{}.{}", i, rest);
}

Tensor scalar(double v, DType dtype, Device device) {
  return Tensor::full({}, v, dtype, device);
}

}  // namespace

ParameterShapes mamba2_parameter_shapes(const ModelConfig& c) {
  const SsmConfig& s = c.ssm;
  const int64_t C = c.hidden_size, I = c.intermediate_size, H = s.num_heads, conv = s.conv_dim();
  ParameterShapes shapes = {{"backbone.embeddings.weight", {c.vocab_size, C}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    shapes.push_back({block(i, "norm.weight"), {C}});
    shapes.push_back({block(i, "mixer.in_proj.weight"), {I + conv + H, C}});  // z, x B C, dt
    if (s.use_bias) shapes.push_back({block(i, "mixer.in_proj.bias"), {I + conv + H}});
    shapes.push_back({block(i, "mixer.conv1d.weight"), {conv, 1, s.conv_kernel}});
    if (s.use_conv_bias) shapes.push_back({block(i, "mixer.conv1d.bias"), {conv}});
    shapes.push_back({block(i, "mixer.dt_bias"), {H}});
    shapes.push_back({block(i, "mixer.A_log"), {H}});
    shapes.push_back({block(i, "mixer.D"), {H}});
    shapes.push_back({block(i, "mixer.norm.weight"), {I}});
    shapes.push_back({block(i, "mixer.out_proj.weight"), {C, I}});
    if (s.use_bias) shapes.push_back({block(i, "mixer.out_proj.bias"), {C}});
  }
  shapes.push_back({"backbone.norm_f.weight", {C}});
  if (!c.tie_word_embeddings) shapes.push_back({"lm_head.weight", {c.vocab_size, C}});
  return shapes;
}

std::optional<Tensor> mamba2_initial_value(const ModelConfig& c, const std::string& name, const Shape& shape,
                                           DType dtype, RandomKey key) {
  const SsmConfig& s = c.ssm;
  const int64_t H = s.num_heads;
  if (name.ends_with("mixer.A_log")) {  // A = -(1, 2, ..., H)
    std::vector<double> v;
    for (int64_t h = 1; h <= H; ++h) v.push_back(std::log(double(h)));
    return Tensor::from_values(v, shape, dtype);
  }
  if (name.ends_with("mixer.D")) return Tensor::full(shape, 1.0, dtype);
  if (name.ends_with("mixer.dt_bias")) {  // softplus^-1 of dt log-uniform in [time_step_min, time_step_max]
    Tensor u = Tensor::empty(shape, DType::f64);
    fill_uniform(u, key, 0, 1);
    std::vector<double> v = u.to_f64_vector();
    for (double& x : v) {
      const double lo = std::log(s.time_step_min), hi = std::log(s.time_step_max);
      const double dt = std::max(std::exp(lo + x * (hi - lo)), s.time_step_floor);
      x = dt + std::log(-std::expm1(-dt));
    }
    return Tensor::from_values(v, shape, dtype);
  }
  if (name.ends_with("mixer.conv1d.weight")) {  // nn.Conv1d's default: U(-1/sqrt(W), 1/sqrt(W))
    Tensor w = Tensor::empty(shape, dtype);
    const double bound = 1 / std::sqrt(double(s.conv_kernel));
    fill_uniform(w, key, -bound, bound);
    return w;
  }
  return std::nullopt;
}

namespace {

// Layer i's mixer over h (B,T,C), its normed input -> out_proj's output (B,T,C) in h's dtype. With a
// cache, its convolution inputs and state at i are continued and replaced (grown to hold layer i).
Tensor mamba2_mixer(const ModelConfig& c, const Parameters& p, int64_t i, const Tensor& h,
                    const Tensor& segments, KvCache* cache) {
  const SsmConfig& s = c.ssm;
  const int64_t B = h.size(0), T = h.size(1), I = c.intermediate_size, H = s.num_heads, P = s.head_dim,
                N = s.state_size, G = s.n_groups, W = s.conv_kernel, conv = s.conv_dim();
  const DType dtype = h.dtype();
  const Device device = h.device();
  // The state space part runs in f32 for 16-bit weights, as transformers' .float() has it.
  const DType wide = dtype == DType::f64 ? DType::f64 : DType::f32;
  const auto w = [&](const std::string& rest) -> const Tensor& { return parameter(p, block(i, rest)); };
  const auto optional_w = [&](const std::string& rest) {
    const auto it = p.find(block(i, rest));
    return it == p.end() ? Tensor() : it->second;
  };
  const Tensor head_groups = shared_heads(H, G, device);  // B and C shared by the H / G heads of a group
  if (cache) hold_layer(*cache, i);
  const std::vector<Tensor> zxd =
      split(linear(h, w("mixer.in_proj.weight"), optional_w("mixer.in_proj.bias")), {I, conv, H}, -1);
  // The short convolution over x, B and C, from the cached inputs before this call.
  const Tensor before = cache ? cache->conv_inputs[size_t(i)] : Tensor();
  const Tensor xbc_in = zxd[1].contiguous();
  const Tensor xbc = short_conv(xbc_in, w("mixer.conv1d.weight").reshape({conv, W}),
                                optional_w("mixer.conv1d.bias"), before, segments, Activation::silu);
  if (cache)
    cache->conv_inputs[size_t(i)] =
        kept_conv_inputs(before, xbc_in, last_document_window(segments, W, dtype, device), W);
  const std::vector<Tensor> xs_b_c = split(xbc, {I, G * N, G * N}, -1);
  const Tensor xs = as_dtype(xs_b_c[0], wide).reshape({B, T, H, P});
  const Tensor k = index_select(as_dtype(xs_b_c[1], wide).reshape({B, T, G, N}), 2, head_groups);
  const Tensor q = index_select(as_dtype(xs_b_c[2], wide).reshape({B, T, G, N}), 2, head_groups);
  Tensor dt = softplus(add(as_dtype(zxd[2], wide), as_dtype(w("mixer.dt_bias"), wide)));  // (B,T,H)
  if (s.time_step_limit_high > 0)
    dt = minimum(maximum(dt, scalar(s.time_step_limit_low, wide, device)),
                 scalar(s.time_step_limit_high, wide, device));
  const Tensor A = neg(exp(as_dtype(w("mixer.A_log"), wide)));  // (H), negative: decays below 1
  RecurrenceOptions o;
  o.scale = 1;
  o.segments = segments;
  // The SSD recurrence: state (N, P) per head, decayed by exp(dt A), updated by B (x dt)^T, read by C.
  const RecurrenceResult r = linear_recurrence(q, k, mul(xs, dt.reshape({B, T, H, 1})), mul(dt, A), {},
                                               cache ? cache->states[size_t(i)] : Tensor(), o);
  if (cache) cache->states[size_t(i)] = r.state;
  const Tensor y = add(r.out, mul(xs, as_dtype(w("mixer.D"), wide).reshape({H, 1}))).reshape({B, T, I});
  // The gated RMSNorm: y silu(z), normalized over the whole width.
  const Tensor gated =
      rms_norm(mul(y, silu(as_dtype(zxd[0], wide))), as_dtype(w("mixer.norm.weight"), wide), c.norm_eps);
  return linear(as_dtype(gated, dtype), w("mixer.out_proj.weight"), optional_w("mixer.out_proj.bias"));
}

}  // namespace

Tensor mamba2_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, LayerAttention& attend,
                      const Tensor& logit_rows, LayerBoundaries* boundaries) {
  const int64_t L = c.num_hidden_layers;
  const Tensor& embed = parameter(p, "backbone.embeddings.weight");
  const DType dtype = embed.dtype();
  // The residual stream in f32 for 16-bit weights with residual_in_fp32, as transformers has it.
  const DType stream = c.ssm.residual_in_fp32 ? (dtype == DType::f64 ? DType::f64 : DType::f32) : dtype;
  Tensor x = as_dtype(embedding(embed, ids), stream);  // (B,T,C)
  for (int64_t i = 0; i < L; ++i) {
    x = enter_layer(boundaries, i, x);
    const Tensor h = rms_norm(as_dtype(x, dtype), parameter(p, block(i, "norm.weight")), c.norm_eps);
    const Tensor out = attend.mix(i, h, [&](const Tensor& rows, KvCache* cache, const Tensor& segments) {
      return mamba2_mixer(c, p, i, rows, segments, cache);
    });
    x = add(x, as_dtype(out, stream));
  }
  x = enter_layer(boundaries, L, x);
  x = rms_norm(logit_positions(x, logit_rows), as_dtype(parameter(p, "backbone.norm_f.weight"), stream),
               c.norm_eps);
  return linear(as_dtype(x, dtype), c.tie_word_embeddings ? embed : parameter(p, "lm_head.weight"));
}

}  // namespace dew::models
