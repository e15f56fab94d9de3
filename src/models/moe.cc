// The mixture-of-experts MLP (mixtral, qwen3_moe, gpt_oss, glm4_moe): a router picks each token's K
// experts, the tokens are sorted by expert and run through grouped products (one call per matrix,
// whatever the group sizes), and each token's K outputs are summed back with the router's weights.
// Dropless: every token reaches every expert it picked. The choice of experts is integer work on the
// host; the weights and every product are ops, so the layer differentiates. docs/moe.md.
#include <dew/models.h>
#include <dew/ops.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "models/families.h"

namespace dew {
namespace models {
namespace {

Tensor i64_tensor(const std::vector<int64_t>& values, const Shape& shape, Device device) {
  return Tensor::from_values(std::vector<double>(values.begin(), values.end()), shape, DType::i64).to(device);
}

// The K largest of each row of `scores` (N,E, row-major), largest first; equal scores go to the lower
// expert.
std::vector<int64_t> top_k_rows(const std::vector<double>& scores, int64_t E, int64_t K) {
  const int64_t N = int64_t(scores.size()) / E;
  std::vector<int64_t> picked(size_t(N * K));
  std::vector<int64_t> order(static_cast<size_t>(E));
  for (int64_t n = 0; n < N; ++n) {
    const double* row = scores.data() + n * E;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    std::copy(order.begin(), order.begin() + K, picked.begin() + n * K);
  }
  return picked;
}

// glm4_moe's (DeepSeek-V3's) choice: over scores + bias, each group of E/groups experts ranked by the
// sum of its two best, the best `groups_kept` groups kept and the others' scores taken as 0 (as
// transformers masks them), then the K best; ties to the lower index throughout.
std::vector<int64_t> group_limited_top_k(const Tensor& scores, const Tensor& bias, const MoeConfig& c) {
  const int64_t N = scores.size(0), E = scores.size(1), G = c.groups, per = E / G;
  const std::vector<double> s = scores.to_f64_vector(), b = bias.to_f64_vector();
  std::vector<double> choice(size_t(N * E));
  for (int64_t n = 0; n < N; ++n) {
    double* row = choice.data() + n * E;
    for (int64_t e = 0; e < E; ++e) row[e] = s[size_t(n * E + e)] + b[size_t(e)];
    std::vector<double> group_score(static_cast<size_t>(G));
    for (int64_t g = 0; g < G; ++g) {
      std::vector<double> members(row + g * per, row + (g + 1) * per);
      std::partial_sort(members.begin(), members.begin() + 2, members.end(), std::greater<double>());
      group_score[size_t(g)] = members[0] + members[1];
    }
    std::vector<int64_t> order(static_cast<size_t>(G));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return group_score[size_t(x)] > group_score[size_t(y)]; });
    for (int64_t rank = c.groups_kept; rank < G; ++rank)
      std::fill(row + order[size_t(rank)] * per, row + (order[size_t(rank)] + 1) * per, 0.0);
  }
  return top_k_rows(choice, E, c.experts_per_token);
}

// The N·K token-expert slots (slot n·K + k) sorted by expert, stably: `sorted` lists slots in expert
// order, `position` is each slot's place in that list, `sizes` each expert's count.
struct Dispatch {
  std::vector<int64_t> sorted, position, sizes;
};
Dispatch sort_by_expert(const std::vector<int64_t>& experts, int64_t E) {
  Dispatch d;
  d.sizes.assign(size_t(E), 0);
  for (const int64_t e : experts) ++d.sizes[size_t(e)];
  std::vector<int64_t> next(size_t(E), 0);
  for (int64_t e = 1; e < E; ++e) next[size_t(e)] = next[size_t(e - 1)] + d.sizes[size_t(e - 1)];
  d.sorted.resize(experts.size());
  d.position.resize(experts.size());
  for (size_t slot = 0; slot < experts.size(); ++slot) {
    const int64_t at = next[size_t(experts[slot])]++;
    d.sorted[size_t(at)] = int64_t(slot);
    d.position[slot] = at;
  }
  return d;
}

// gpt-oss's expert activation: gate clamped above at the limit, up to [-limit, limit], then
// (up + 1) · gate · sigmoid(alpha · gate).
Tensor clamped_swiglu(const Tensor& gate, const Tensor& up, const MoeConfig& c) {
  const auto scalar = [&](double v) { return Tensor::full({}, v, gate.dtype(), gate.device()); };
  const Tensor g = minimum(gate, scalar(c.swiglu_limit));
  const Tensor u = maximum(minimum(up, scalar(c.swiglu_limit)), scalar(-c.swiglu_limit));
  return mul(add(u, scalar(1)), mul(g, sigmoid(mul(g, scalar(c.swiglu_alpha)))));
}

void record(RouterStats& stats, const Tensor& logits, const Tensor& probs,
            const std::vector<int64_t>& experts, int64_t K, const std::vector<uint8_t>& counted) {
  const int64_t N = logits.size(0), E = logits.size(1);
  Tensor p = probs, z = square(logsumexp(logits, {1}));  // (N,E), (N)
  std::vector<int64_t> tokens(size_t(E), 0);
  int64_t n_counted = 0;
  for (int64_t n = 0; n < N; ++n) {
    if (!counted.empty() && !counted[size_t(n)]) continue;
    ++n_counted;
    for (int64_t k = 0; k < K; ++k) ++tokens[size_t(experts[size_t(n * K + k)])];
  }
  if (!counted.empty()) {
    const Tensor mask =
        Tensor::from_values(std::vector<double>(counted.begin(), counted.end()), {N}, logits.dtype())
            .to(logits.device());
    p = mul(p, mask.reshape({N, 1}));
    z = mul(z, mask);
  }
  stats.probability_sums.push_back(sum(p, {0}));
  stats.z_sums.push_back(sum(z));
  stats.expert_tokens.push_back(std::move(tokens));
  stats.tokens = n_counted;
}

}  // namespace

Tensor stack_experts(const Parameters& p, int64_t E, const std::function<std::string(int64_t)>& name) {
  std::vector<Tensor> parts;
  parts.reserve(size_t(E));
  for (int64_t e = 0; e < E; ++e) parts.push_back(parameter(p, name(e)).unsqueeze(0));
  return concat(parts, 0);
}

Tensor moe_mlp(const Tensor& h, const ExpertWeights& w, const MoeConfig& c,
               const std::vector<uint8_t>& counted, RouterStats* stats) {
  const int64_t N = h.size(0), C = h.size(1), E = c.num_experts, K = c.experts_per_token;
  const Device device = h.device();
  // The router in f32 (f64 in an f64 model) whatever the model's dtype: its choices decide which
  // weights a token meets.
  const DType router_dtype = h.dtype() == DType::f64 ? DType::f64 : DType::f32;
  MatmulOptions linear;
  linear.transpose_b = true;
  if (w.router_bias.defined()) linear.bias = as_dtype(w.router_bias, router_dtype);
  const Tensor logits = matmul(as_dtype(h, router_dtype), as_dtype(w.router, router_dtype), linear);  // (N,E)
  // The softmax chooses (and feeds the balance loss); sigmoid scores choose with their biases. The
  // same experts by logits or by probabilities (softmax keeps the order): gpt_oss weighs its K by the
  // softmax of their logits alone.
  const Tensor probs = !c.sigmoid_scores || stats ? softmax(logits, -1) : Tensor();
  const Tensor scores = c.sigmoid_scores ? sigmoid(logits) : probs;
  const std::vector<int64_t> experts = c.sigmoid_scores ? group_limited_top_k(scores, w.score_bias, c)
                                                        : top_k_rows(probs.to_f64_vector(), E, K);  // (N·K)
  const Tensor picked = i64_tensor(experts, {N, K}, device);
  Tensor weights = c.gpt_oss ? softmax(gather(logits, 1, picked), -1) : gather(scores, 1, picked);  // (N,K)
  const auto scalar = [&](double v) { return Tensor::full({}, v, weights.dtype(), device); };
  if (c.normalize_top_k)
    weights = div(weights,
                  c.sigmoid_scores ? add(sum(weights, {1}, true), scalar(1e-20)) : sum(weights, {1}, true));
  if (c.routed_scaling != 1) weights = mul(weights, scalar(c.routed_scaling));
  if (stats) record(*stats, logits, probs, experts, K, counted);

  const Dispatch d = sort_by_expert(experts, E);
  std::vector<int64_t> token_of(d.sorted.size());
  for (size_t i = 0; i < d.sorted.size(); ++i) token_of[i] = d.sorted[i] / K;
  const Tensor sizes = i64_tensor(d.sizes, {E}, device);
  const Tensor rows = index_select(h, 0, i64_tensor(token_of, {N * K}, device));  // (N·K,C) by expert
  Tensor out;                                                                     // (N·K,C)
  if (c.gpt_oss) {
    std::vector<int64_t> expert_of_row;
    for (int64_t e = 0; e < E; ++e) expert_of_row.insert(expert_of_row.end(), size_t(d.sizes[size_t(e)]), e);
    const Tensor row_experts = i64_tensor(expert_of_row, {N * K}, device);
    const Tensor gate_up =
        add(grouped_matmul(rows, w.gate_up, sizes), index_select(w.gate_up_bias, 0, row_experts));
    const int64_t F2 = gate_up.size(1);
    const Tensor hidden = clamped_swiglu(gate_up.slice(1, 0, F2, 2), gate_up.slice(1, 1, F2, 2), c);
    out = add(grouped_matmul(hidden, w.down, sizes), index_select(w.down_bias, 0, row_experts));
  } else {
    const Tensor hidden =
        swiglu(grouped_matmul(rows, w.gate, sizes, true), grouped_matmul(rows, w.up, sizes, true));
    out = grouped_matmul(hidden, w.down, sizes, true);
  }
  const Tensor slot_weights =
      index_select(weights.reshape({N * K}), 0, i64_tensor(d.sorted, {N * K}, device));
  out = mul(out, as_dtype(slot_weights, h.dtype()).reshape({N * K, 1}));
  // Back to token order, (N,K,C), and each token's K outputs summed in a fixed order.
  out = index_select(out, 0, i64_tensor(d.position, {N * K}, device)).reshape({N, K, C});
  return sum(out, {1});
}

}  // namespace models

Tensor load_balancing_loss(const RouterStats& stats) {
  DEW_REQUIRE(!stats.probability_sums.empty(), "[moe] load_balancing_loss: no router was recorded");
  const int64_t E = stats.probability_sums[0].size(0);
  const double L = double(stats.probability_sums.size()),
               rows = L * double(std::max<int64_t>(1, stats.tokens));
  std::vector<double> share(size_t(E), 0);  // assignments to each expert over all layers, / rows
  for (const auto& layer : stats.expert_tokens)
    for (int64_t e = 0; e < E; ++e) share[size_t(e)] += double(layer[size_t(e)]) / rows;
  Tensor probability = stats.probability_sums[0];
  for (size_t l = 1; l < stats.probability_sums.size(); ++l)
    probability = add(probability, stats.probability_sums[l]);
  const DType t = probability.dtype();
  const Tensor scale = Tensor::from_values(share, {E}, t).to(probability.device());
  return mul(sum(mul(probability, scale)), Tensor::full({}, double(E) / rows, t, probability.device()));
}

Tensor router_z_loss(const RouterStats& stats) {
  DEW_REQUIRE(!stats.z_sums.empty(), "[moe] router_z_loss: no router was recorded");
  Tensor total = stats.z_sums[0];
  for (size_t l = 1; l < stats.z_sums.size(); ++l) total = add(total, stats.z_sums[l]);
  const double rows = double(stats.z_sums.size()) * double(std::max<int64_t>(1, stats.tokens));
  return mul(total, Tensor::full({}, 1.0 / rows, total.dtype(), total.device()));
}

}  // namespace dew
