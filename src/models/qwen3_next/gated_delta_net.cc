// qwen3_next's Gated DeltaNet layers (GatedDeltaNetConfig) as transformers' Qwen3NextGatedDeltaNet
// computes them: the in-projections, whose rows are grouped by key head, split into q, k, v, z, b and a;
// the short convolution with SiLU over q, k and v; q and k L2-normalized; the gated delta rule
// (linear_recurrence); each head's output RMS-normalized and gated by silu(z). The decoder (llama.cc)
// applies the out-projection and the residual add. Written with ops, so it differentiates.
#include <dew/ops.h>
#include <dew/recurrence_ops.h>

#include <cmath>

#include "models/families.h"
#include "models/linear.h"
#include "models/recurrent_cache.h"

namespace dew::models {
namespace {

std::string mixer(int64_t layer, const std::string& rest) {
  return fmt::format("model.layers.{}.linear_attn.{}", layer, rest);
}

// x / sqrt(sum(x^2) + 1e-6) over the last dim (fla's l2norm, transformers' too): an RMSNorm with eps /
// D and every weight 1 / sqrt(D) is the same function.
Tensor l2_normalize(const Tensor& x) {
  const int64_t D = x.size(-1);
  return rms_norm(x, Tensor::full({D}, 1 / std::sqrt(double(D)), x.dtype(), x.device()), 1e-6 / double(D));
}

}  // namespace

void gated_delta_net_parameter_shapes(const ModelConfig& c, int64_t layer, ParameterShapes& shapes) {
  const GatedDeltaNetConfig& g = c.delta_net;
  const int64_t C = c.hidden_size, Hv = g.num_value_heads;
  shapes.push_back({mixer(layer, "conv1d.weight"), {g.conv_dim(), 1, g.conv_kernel}});
  shapes.push_back({mixer(layer, "in_proj_qkvz.weight"), {2 * g.key_dim() + 2 * g.value_dim(), C}});
  shapes.push_back({mixer(layer, "in_proj_ba.weight"), {2 * Hv, C}});
  shapes.push_back({mixer(layer, "dt_bias"), {Hv}});
  shapes.push_back({mixer(layer, "A_log"), {Hv}});
  shapes.push_back({mixer(layer, "norm.weight"), {g.value_head_dim}});
  shapes.push_back({mixer(layer, "out_proj.weight"), {C, g.value_dim()}});
}

std::optional<Tensor> gated_delta_net_initial_value(const std::string& name, const Shape& shape, DType dtype,
                                                    RandomKey key) {
  if (name.ends_with("linear_attn.dt_bias") || name.ends_with("linear_attn.norm.weight"))
    return Tensor::full(shape, 1.0, dtype);   // the gated norm scales by w itself, not 1 + w
  if (name.ends_with("linear_attn.A_log")) {  // A ~ U(0, 16)
    Tensor u = Tensor::empty(shape, DType::f64);
    fill_uniform(u, key, 0, 16);
    std::vector<double> v = u.to_f64_vector();
    for (double& a : v) a = std::log(a);
    return Tensor::from_values(v, shape, dtype);
  }
  return std::nullopt;
}

Tensor gated_delta_net(const ModelConfig& c, const Parameters& p, int64_t layer, const Tensor& h,
                       const Tensor& segments, KvCache* cache) {
  const GatedDeltaNetConfig& g = c.delta_net;
  const int64_t B = h.size(0), T = h.size(1), Hk = g.num_key_heads, Hv = g.num_value_heads,
                Dk = g.key_head_dim, Dv = g.value_head_dim, r = Hv / Hk, W = g.conv_kernel;
  const DType dtype = h.dtype(), wide = dtype == DType::f64 ? DType::f64 : DType::f32;
  const Device device = h.device();
  const auto w = [&](const std::string& rest) -> const Tensor& { return parameter(p, mixer(layer, rest)); };
  // Each key head's rows: its q (Dk), k (Dk), then its r value heads' v (r Dv) and z (r Dv); b and a
  // likewise, r each.
  const std::vector<Tensor> qkvz =
      split(linear(h, w("in_proj_qkvz.weight")).reshape({B, T, Hk, 2 * Dk + 2 * r * Dv}),
            {Dk, Dk, r * Dv, r * Dv}, -1);
  const std::vector<Tensor> ba =
      split(linear(h, w("in_proj_ba.weight")).reshape({B, T, Hk, 2 * r}), {r, r}, -1);
  // q, k and v convolved together, from the cached inputs before this call.
  const Tensor mixed = concat(
      {qkvz[0].reshape({B, T, Hk * Dk}), qkvz[1].reshape({B, T, Hk * Dk}), qkvz[2].reshape({B, T, Hv * Dv})},
      -1);
  if (cache) hold_layer(*cache, layer);
  const Tensor before = cache ? cache->conv_inputs[size_t(layer)] : Tensor();
  const Tensor convolved = short_conv(mixed, w("conv1d.weight").reshape({g.conv_dim(), W}), {}, before,
                                      segments, Activation::silu);
  if (cache)
    cache->conv_inputs[size_t(layer)] =
        kept_conv_inputs(before, mixed, last_document_window(segments, W, dtype, device), W);
  const std::vector<Tensor> qkv = split(as_dtype(convolved, wide), {Hk * Dk, Hk * Dk, Hv * Dv}, -1);
  const Tensor key_heads = shared_heads(Hv, Hk, device);  // a key head's q and k, its r value heads'
  const Tensor q = index_select(l2_normalize(qkv[0].reshape({B, T, Hk, Dk})), 2, key_heads);
  const Tensor k = index_select(l2_normalize(qkv[1].reshape({B, T, Hk, Dk})), 2, key_heads);
  const Tensor v = qkv[2].reshape({B, T, Hv, Dv});
  const Tensor beta = sigmoid(as_dtype(ba[0].reshape({B, T, Hv}), wide));
  const Tensor decay =  // (B,T,Hv) log-decays, -exp(A_log) softplus(a + dt_bias)
      mul(neg(exp(as_dtype(w("A_log"), wide))),
          softplus(add(as_dtype(ba[1].reshape({B, T, Hv}), wide), as_dtype(w("dt_bias"), wide))));
  RecurrenceOptions o;  // scale 1 / sqrt(Dk)
  o.segments = segments;
  const RecurrenceResult rec =
      linear_recurrence(q, k, v, decay, beta, cache ? cache->states[size_t(layer)] : Tensor(), o);
  if (cache) cache->states[size_t(layer)] = rec.state;
  const Tensor z = as_dtype(qkvz[3].reshape({B, T, Hv, Dv}), wide);
  const Tensor gated = mul(rms_norm(rec.out, as_dtype(w("norm.weight"), wide), c.norm_eps), silu(z));
  return as_dtype(gated, dtype).reshape({B, T, Hv * Dv});
}

}  // namespace dew::models
