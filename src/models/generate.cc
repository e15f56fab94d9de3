// generate: prefill, then token by token through the KV cache, each row sampled on its own key.
#include <dew/autodiff.h>
#include <dew/models.h>
#include <dew/ops.h>

#include <algorithm>

namespace dew {

std::vector<std::vector<int64_t>> generate(const CausalLM& model,
                                           const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerationOptions& o) {
  DEW_REQUIRE(!prompts.empty(), "[generate] no prompt; expected at least one non-empty prompt");
  DEW_REQUIRE(o.max_new_tokens >= 1 && o.max_new_tokens <= kMaxNewTokens,
              "[generate] max_new_tokens {}; expected 1 to {}", o.max_new_tokens, kMaxNewTokens);
  const int64_t B = int64_t(prompts.size()), V = model.config().vocab_size;
  int64_t T = 0;
  for (const auto& p : prompts) {
    DEW_REQUIRE(!p.empty(), "[generate] an empty prompt; expected at least one token per prompt");
    T = std::max(T, int64_t(p.size()));
  }
  DEW_REQUIRE(o.sequence_ids.empty() || int64_t(o.sequence_ids.size()) == B,
              "[generate] {} sequence ids for {} prompts; expected one per prompt or none",
              o.sequence_ids.size(), B);
  NoGrad inference;
  // Shorter prompts are left-padded (NOTE [padding], causal_lm.cc): id 0, segment 0, position 0.
  std::vector<double> ids, positions, segments;
  bool padded = false;
  for (const auto& p : prompts) {
    const int64_t pad = T - int64_t(p.size());
    padded = padded || pad > 0;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t id = t < pad ? 0 : p[size_t(t - pad)];
      DEW_REQUIRE(id >= 0 && id < V, "[generate] prompt id {} is outside the vocabulary [0, {})", id, V);
      ids.push_back(double(id));
      positions.push_back(double(std::max<int64_t>(t - pad, 0)));
      segments.push_back(t < pad ? 0 : 1);
    }
  }
  KvCache cache;
  Tensor logits = model.forward(Tensor::from_values(ids, {B, T}, DType::i64),
                                Tensor::from_values(positions, {B, T}, DType::i64), &cache,
                                padded ? Tensor::from_values(segments, {B, T}, DType::i64) : Tensor());
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(B)), history(prompts.begin(), prompts.end());
  std::vector<bool> done(static_cast<size_t>(B), false);
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    // The last position of each row, in f32.
    const std::vector<double> last =
        cast(logits.slice(1, logits.size(1) - 1, logits.size(1)), DType::f32).to_f64_vector();
    std::vector<double> next(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      const std::vector<float> row(last.begin() + b * V, last.begin() + (b + 1) * V);
      const uint64_t sequence = o.sequence_ids.empty() ? 0 : o.sequence_ids[size_t(b)];
      const int64_t token = sample_token(row, o.sampling, history[size_t(b)], sequence, uint64_t(step));
      next[size_t(b)] = double(token);
      if (done[size_t(b)]) continue;
      out[size_t(b)].push_back(token);
      history[size_t(b)].push_back(token);
      done[size_t(b)] = std::find(o.eos_ids.begin(), o.eos_ids.end(), token) != o.eos_ids.end();
      if (o.on_token && !o.on_token(b, token)) done[size_t(b)] = true;
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; }) || step + 1 == o.max_new_tokens)
      break;
    std::vector<double> next_positions;
    for (const auto& p : prompts) next_positions.push_back(double(int64_t(p.size()) + step));
    logits = model.forward(Tensor::from_values(next, {B, 1}, DType::i64),
                           Tensor::from_values(next_positions, {B, 1}, DType::i64), &cache);
  }
  return out;
}

}  // namespace dew
