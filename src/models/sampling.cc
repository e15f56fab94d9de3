// sample_token: transformers' logits processors and warpers, in generate's order, on one row of
// logits in double, then an inverse-CDF draw with a Philox uniform keyed by (seed, sequence, step).
#include <dew/models.h>
#include <dew/runtime.h>

#include "models/sampling_math.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace dew {

namespace {

// y = exp(x) for x in [-708, 0] (below, 0), within 2 ulp, in a loop the compiler vectorizes on
// AVX-512: x = k ln 2 + r, |r| <= ln(2) / 2 (ln 2 in two parts, so k ln2_hi is exact), exp(r) by its
// Taylor series to r^13 / 13!, times 2^k put into the exponent's bits. Built for AVX2 the same loop was
// no faster than libm, which other CPUs keep (docs/perf.md, "Sampling at 32 requests").
[[gnu::target("avx512f")]] void exp_of_nonpositive_avx512(const double* x, double* y, size_t n) {
  constexpr double kInverseLn2 = 1.4426950408889634, kLn2High = 6.93147180369123816490e-01,
                   kLn2Low = 1.90821492927058770002e-10, kRound = 0x1.8p52;  // adding it rounds to integers
#pragma GCC ivdep  // y[i] from x[i] alone, in place or not
  for (size_t i = 0; i < n; ++i) {
    const double t = x[i] < -708.0 ? -708.0 : x[i];
    const double shifted = t * kInverseLn2 + kRound, k = shifted - kRound;
    const double r = (t - k * kLn2High) - k * kLn2Low;
    double p = 1.0 / 6227020800;  // 1 / 13!
    for (const double c : {1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
                           1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0})
      p = p * r + c;
    uint64_t bits;  // k sits in the low bits of `shifted`, offset by 2^51
    std::memcpy(&bits, &shifted, sizeof bits);
    const uint64_t scale_bits = ((bits & ((uint64_t(1) << 52) - 1)) - (uint64_t(1) << 51) + 1023) << 52;
    double scale;
    std::memcpy(&scale, &scale_bits, sizeof scale);
    y[i] = x[i] < -708.0 ? 0.0 : p * scale;
  }
}

}  // namespace

void detail::exp_of_nonpositive(const double* x, double* y, size_t n) {
  if (!__builtin_cpu_supports("avx512f")) {
    for (size_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
    return;
  }
  std::vector<std::pair<size_t, double>> subnormal;  // libm's exp there, below the vector loop's range
  for (size_t i = 0; i < n; ++i)
    if (x[i] < -708.0 && x[i] > -746.0) subnormal.push_back({i, std::exp(x[i])});
  exp_of_nonpositive_avx512(x, y, n);
  for (const auto& [i, value] : subnormal) y[i] = value;
}

namespace {

constexpr double kRemoved = -std::numeric_limits<double>::infinity();

// The largest of x (no NaN), and the sum of x in 8 interleaved partial sums: loops the compiler
// vectorizes (cloned per instruction set), where one running maximum or sum is a chain of dependent
// operations.
[[gnu::target_clones("avx512f", "avx2", "default")]] double max_of(const double* x, size_t n) {
  constexpr size_t kLanes = 8;
  double lane[kLanes];
  for (size_t j = 0; j < kLanes; ++j) lane[j] = -std::numeric_limits<double>::infinity();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  for (; i < n; ++i) lane[0] = x[i] > lane[0] ? x[i] : lane[0];
  return *std::max_element(lane, lane + kLanes);
}

// y = x / d, element by element (vectorized, cloned per instruction set).
[[gnu::target_clones("avx512f", "avx2", "default")]] void divide(const double* x, double d, double* y,
                                                                 size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] / d;
}

[[gnu::target_clones("avx512f", "avx2", "default")]] double sum_of(const double* x, size_t n) {
  constexpr size_t kLanes = 8;
  double lane[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) lane[j] += x[i + j];
  for (; i < n; ++i) lane[0] += x[i];
  double total = 0;
  for (double l : lane) total += l;
  return total;
}

// The softmax's weights exp(s - top) of the scores still in play (0 for removed ones, -inf), in double;
// probabilities are weight / total() (NOTE [one exp a token]).
struct Weights {
  std::vector<double> weight;
  explicit Weights(const std::vector<double>& s) : weight(s.size()) {
    const double top = max_of(s.data(), s.size());
    for (size_t i = 0; i < s.size(); ++i) weight[i] = s[i] - top;  // -inf for the removed: exp 0
    detail::exp_of_nonpositive(weight.data(), weight.data(), weight.size());
  }
  double total() const { return sum_of(weight.data(), weight.size()); }
  void remove(std::vector<double>& s, size_t i) {
    s[i] = kRemoved;
    weight[i] = 0;
  }
};

// TopPLogitsWarper: in ascending order of score (equal scores in index order, as a stable sort leaves
// them), remove while the cumulative probability is <= 1 - top_p; the largest is always kept. So the
// removed tokens are those before one boundary token in that order. The scores are binned by value
// (2,048 bins, in order, equal scores in one bin); the bins' masses find the bin where the cumulative
// crosses 1 - top_p; only that bin's tokens are sorted. Two passes over the row, where a stable sort of
// it took most of a step of 32 requests (docs/perf.md, "Sampling at 32 requests"). The sums run by bins
// rather than token by token, which moves a decision only where the cumulative lies within rounding of
// 1 - top_p.
void remove_past_top_p(std::vector<double>& s, Weights& w, double top_p) {
  constexpr size_t kBins = 2048;
  const size_t V = s.size();
  const double total = w.total(), limit = 1 - top_p;
  double low = INFINITY, high = -INFINITY;
  size_t largest = 0;  // the last token in the order: the largest score, the last index among equals
  for (size_t i = 0; i < V; ++i) {
    if (s[i] == kRemoved) continue;
    low = std::min(low, s[i]);
    if (s[i] >= high) high = s[i], largest = i;
  }
  const double scale = high > low ? double(kBins - 1) / (high - low) : 0.0;
  std::vector<uint16_t> bin(V);
  std::array<double, kBins> mass{};
  for (size_t i = 0; i < V; ++i) {
    if (s[i] == kRemoved) continue;  // already gone, of probability 0
    bin[i] = uint16_t(std::min(double(kBins - 1), (s[i] - low) * scale));
    mass[bin[i]] += w.weight[i] / total;
  }
  // The crossing bin: the cumulative through it passes the limit (none: all but the largest go).
  double below = 0;
  size_t crossing = kBins;
  for (size_t b = 0; b < kBins; ++b) {
    if (below + mass[b] > limit) {
      crossing = b;
      break;
    }
    below += mass[b];
  }
  const size_t last = crossing == kBins ? kBins - 1 : crossing;  // the bin walked token by token
  std::vector<uint32_t> walked;
  for (size_t i = 0; i < V; ++i) {
    if (s[i] == kRemoved) continue;
    if (bin[i] < last) {
      w.remove(s, i);
    } else if (bin[i] == last) {
      walked.push_back(uint32_t(i));
    }
  }
  if (crossing == kBins) below -= mass[last];  // the last bin's mass, walked again below
  std::sort(walked.begin(), walked.end(),
            [&](uint32_t a, uint32_t b) { return s[a] < s[b] || (s[a] == s[b] && a < b); });
  double cumulative = below;
  for (size_t r = 0; r < walked.size() && walked[r] != largest; ++r) {
    cumulative += w.weight[walked[r]] / total;
    if (cumulative > limit) break;
    w.remove(s, walked[r]);
  }
}

// The first maximum of penalized scores in double: std::max_element's answer, as the row's overload
// below gives it for the logits as they are.
int64_t first_max(const std::vector<double>& scores) {
  return int64_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
}

// The first maximum of a row, std::max_element's answer (a NaN is passed over, unless it comes first),
// in one pass over vectors of kLanes lanes (cloned per instruction set), each lane keeping its maximum
// and where it first came; then the lanes and the tail are compared in index order. Written with
// vector types: as a loop over lanes the compiler kept it scalar with a branch per element, 4 us for a
// row of 8192 (docs/perf.md, "Greedy sampling at 32 requests").
[[gnu::target_clones("avx512f", "avx2", "default")]] int64_t first_max(std::span<const float> row) {
  constexpr size_t kLanes = 16;
  using Floats = float __attribute__((vector_size(kLanes * sizeof(float))));
  using Ints = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));
  const float* x = row.data();
  const size_t n = row.size();
  if (std::isnan(x[0]) || n > size_t(std::numeric_limits<int32_t>::max()))
    return int64_t(std::max_element(row.begin(), row.end()) - row.begin());
  Floats lane;
  Ints at, index;
  for (size_t j = 0; j < kLanes; ++j)
    lane[j] = -std::numeric_limits<float>::infinity(), at[j] = int32_t(j), index[j] = int32_t(j);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Floats v;
    std::memcpy(&v, x + i, sizeof(v));
    const Ints more = v > lane;  // false for a NaN
    lane = more ? v : lane;
    at = more ? index : at;
    index += int32_t(kLanes);
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
  divide(s.data(), o.temperature, s.data(), s.size());
  if (o.top_k > 0 && o.top_k < int64_t(s.size())) {  // TopKLogitsWarper: below the k-th largest removed
    std::vector<double> sorted = s;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[size_t(o.top_k - 1)];
    for (double& x : s)
      if (x < kth) x = kRemoved;
  }
  // NOTE [one exp a token]: every warper keeps the top score, so each softmax below has the same maximum
  // and the same exp(s - top) for the tokens still in play; only the total over them changes as tokens
  // go. The weights are computed once.
  Weights w(s);
  if (o.top_p < 1) remove_past_top_p(s, w, o.top_p);
  if (o.min_p > 0) {  // MinPLogitsWarper: below min_p times the top probability (exp(0) / total) removed
    const double total = w.total(), floor = o.min_p * (1 / total);
    for (size_t i = 0; i < s.size(); ++i)
      if (w.weight[i] / total < floor) w.remove(s, i);
  }
  std::vector<double> p(s.size());
  const double total = w.total();
  divide(w.weight.data(), total, p.data(), p.size());
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
