// sample_token: transformers' logits processors and warpers, in generate's order, on one row of
// logits in double, then an inverse-CDF draw with a Philox uniform keyed by (seed, sequence, step).
#include <dew/models.h>
#include <dew/runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew {
namespace {

constexpr double kRemoved = -std::numeric_limits<double>::infinity();

// Softmax of the scores still in play (removed ones are -inf), in double.
std::vector<double> probabilities(const std::vector<double>& scores) {
  const double top = *std::max_element(scores.begin(), scores.end());
  std::vector<double> p(scores.size());
  double total = 0;
  for (size_t i = 0; i < scores.size(); ++i)
    total += p[i] = scores[i] == kRemoved ? 0.0 : std::exp(scores[i] - top);
  for (double& x : p) x /= total;
  return p;
}

// The first maximum of penalized scores in double: std::max_element's answer, as the row's overload
// below gives it for the logits as they are.
int64_t first_max(const std::vector<double>& scores) {
  return int64_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
}

// The first maximum of a row, std::max_element's answer (a NaN is passed over, unless it comes first),
// in one pass the compiler vectorizes (cloned per instruction set): kLanes interleaved lanes each keep
// their maximum and where it first came, then the lanes and the tail are compared in index order.
// max_element's one running comparison per element took 6 us for a row of 8192.
[[gnu::target_clones("avx512f", "avx2", "default")]] int64_t first_max(std::span<const float> row) {
  constexpr size_t kLanes = 16;
  const float* x = row.data();
  const size_t n = row.size();
  if (std::isnan(x[0]) || n > size_t(std::numeric_limits<int32_t>::max()))
    return int64_t(std::max_element(row.begin(), row.end()) - row.begin());
  float lane[kLanes];
  int32_t at[kLanes];
  for (size_t j = 0; j < kLanes; ++j) lane[j] = -std::numeric_limits<float>::infinity(), at[j] = int32_t(j);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      const bool more = x[i + j] > lane[j];  // false for a NaN
      lane[j] = more ? x[i + j] : lane[j];
      at[j] = more ? int32_t(i + j) : at[j];
    }
  // Lane 0 starts at index 0: a row of -inf (and NaN past its first element) answers 0.
  float top = lane[0];
  int32_t best = at[0];
  for (size_t j = 1; j < kLanes; ++j)
    if (lane[j] > top || (lane[j] == top && at[j] < best)) top = lane[j], best = at[j];
  for (; i < n; ++i)
    if (x[i] > top) top = x[i], best = int32_t(i);
  return best;
}

}  // namespace

int64_t sample_token(std::span<const float> logits, const SamplingOptions& o,
                     const std::vector<int64_t>& history, uint64_t sequence, uint64_t step) {
  DEW_REQUIRE(!logits.empty(), "[sample] no logits; expected one row of the vocabulary's size");
  DEW_REQUIRE(
      o.temperature >= 0 && o.top_k >= 0 && o.top_p > 0 && o.top_p <= 1 && o.min_p >= 0 && o.min_p <= 1 &&
          o.repetition_penalty > 0 && std::fabs(o.presence_penalty) <= 2 &&
          std::fabs(o.frequency_penalty) <= 2,
      "[sample] temperature {}, top_k {}, top_p {}, min_p {}, repetition_penalty {}, presence_penalty {}, "
      "frequency_penalty {}; expected temperature >= 0, top_k >= 0, 0 < top_p <= 1, 0 <= min_p <= 1, a "
      "positive repetition penalty and presence and frequency penalties from -2 to 2",
      o.temperature, o.top_k, o.top_p, o.min_p, o.repetition_penalty, o.presence_penalty,
      o.frequency_penalty);
  const bool penalties = o.repetition_penalty != 1 || o.presence_penalty != 0 || o.frequency_penalty != 0;
  if (o.temperature == 0 && !penalties)  // greedy: the first maximum of the row as it is (no copy)
    return first_max(logits);
  std::vector<double> s(logits.begin(), logits.end());
  // Repetition penalty (RepetitionPenaltyLogitsProcessor): each token seen, once, made less likely.
  if (o.repetition_penalty != 1) {
    std::vector<int64_t> seen = history;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int64_t id : seen) {
      DEW_REQUIRE(id >= 0 && id < int64_t(s.size()), "[sample] history holds id {}; expected ids in [0, {})",
                  id, s.size());
      double& x = s[size_t(id)];
      x = x < 0 ? x * o.repetition_penalty : x / o.repetition_penalty;
    }
  }
  // Presence and frequency penalties (OpenAI's definition): over the generated tokens only.
  if (o.presence_penalty != 0 || o.frequency_penalty != 0) {
    DEW_REQUIRE(step <= history.size(),
                "[sample] step {} with a history of {} tokens; expected the generated "
                "tokens to be the history's last `step`",
                step, history.size());
    std::vector<int64_t> generated(history.end() - long(step), history.end());
    std::sort(generated.begin(), generated.end());
    for (size_t i = 0; i < generated.size();) {
      size_t j = i;
      while (j < generated.size() && generated[j] == generated[i]) ++j;
      const int64_t id = generated[i];
      DEW_REQUIRE(id >= 0 && id < int64_t(s.size()), "[sample] history holds id {}; expected ids in [0, {})",
                  id, s.size());
      s[size_t(id)] -= o.presence_penalty + double(j - i) * o.frequency_penalty;
      i = j;
    }
  }
  if (o.temperature == 0) return first_max(s);
  for (double& x : s) x /= o.temperature;
  if (o.top_k > 0 && o.top_k < int64_t(s.size())) {  // TopKLogitsWarper: below the k-th largest removed
    std::vector<double> sorted = s;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[size_t(o.top_k - 1)];
    for (double& x : s)
      if (x < kth) x = kRemoved;
  }
  if (o.top_p < 1) {  // TopPLogitsWarper: ascending, remove while the cumulative mass is <= 1 - top_p
    const std::vector<double> p = probabilities(s);
    std::vector<size_t> order(s.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
    double cumulative = 0;
    for (size_t r = 0; r + 1 < order.size(); ++r) {  // the largest is always kept
      cumulative += p[order[r]];
      if (cumulative <= 1 - o.top_p) s[order[r]] = kRemoved;
    }
  }
  if (o.min_p > 0) {  // MinPLogitsWarper: below min_p times the top probability removed
    const std::vector<double> p = probabilities(s);
    const double floor = o.min_p * *std::max_element(p.begin(), p.end());
    for (size_t i = 0; i < s.size(); ++i)
      if (p[i] < floor) s[i] = kRemoved;
  }
  const std::vector<double> p = probabilities(s);
  // One uniform in [0, 1) from Philox: counter (step, 0, 0, 0), key from the seed and the sequence.
  const std::array<uint32_t, 4> bits =
      philox4x32_10({uint32_t(step), uint32_t(step >> 32), uint32_t(sequence), uint32_t(sequence >> 32)},
                    {uint32_t(o.seed), uint32_t(o.seed >> 32)});
  const double u = double((uint64_t(bits[0]) << 21) | (bits[1] >> 11)) * 0x1p-53;  // 53 random bits
  double cumulative = 0;
  int64_t last = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    cumulative += p[i];
    last = int64_t(i);
    if (u < cumulative) return last;
  }
  return last;  // u beyond the rounded total: the last token in play
}

}  // namespace dew
