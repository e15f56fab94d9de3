// sample_token: greedy, the warpers' cuts as transformers defines them, the repetition penalty,
// reproducibility per (seed, sequence, step), and the draws' frequencies against the probabilities
// (binomial bounds of 5 standard deviations).
#include <dew/models.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "error_of.h"
#include "models/sampling_math.h"

namespace dew {
namespace {

// Logits whose softmax is exactly these probabilities (up to rounding).
std::vector<float> logits_of(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(float(std::log(x)));
  return l;
}

// Frequencies of each token over n draws (steps 0..n-1 of one sequence).
std::vector<double> frequencies(const std::vector<float>& logits, const SamplingOptions& o, int n) {
  std::vector<double> f(logits.size(), 0.0);
  for (int step = 0; step < n; ++step) f[size_t(sample_token(logits, o, {}, 3, uint64_t(step)))] += 1.0 / n;
  return f;
}

void expect_frequencies(const std::vector<double>& f, const std::vector<double>& p, int n) {
  for (size_t i = 0; i < p.size(); ++i) {
    const double sigma = std::sqrt(p[i] * (1 - p[i]) / n);
    if (p[i] == 0)
      EXPECT_EQ(f[i], 0.0) << "token " << i;
    else
      EXPECT_LE(std::fabs(f[i] - p[i]), 5 * sigma) << "token " << i << ": " << f[i] << " vs " << p[i];
  }
}

const std::vector<double> kProbs = {0.5, 0.3, 0.15, 0.05};

TEST(Sampling, TemperatureZeroIsTheFirstMaximum) {
  SamplingOptions greedy;
  greedy.temperature = 0;
  EXPECT_EQ(sample_token(std::vector<float>{0.5f, 2.0f, 2.0f, -1.0f}, greedy, {}, 0, 0), 1);
  SamplingOptions top1;
  top1.top_k = 1;
  for (uint64_t step = 0; step < 50; ++step) EXPECT_EQ(sample_token(logits_of(kProbs), top1, {}, 0, step), 0);
}

TEST(Sampling, GreedyAnswersAsMaxElementOnLongRowsTiesNaNsAndZeros) {
  // Rows past the vector lanes with ties, NaNs (passed over unless first), signed zeros and -inf:
  // greedy's index is std::max_element's on each.
  SamplingOptions greedy;
  greedy.temperature = 0;
  const float nan = std::nanf(""), inf = INFINITY;
  std::vector<std::vector<float>> rows = {{nan, 1, 2},       {1, nan, 2, 3, nan}, {-inf, nan, -inf},
                                          {-1, -0.0f, 0.0f}, {-1, 0.0f, -0.0f},   {-inf, -inf}};
  for (int n : {15, 16, 17, 100, 8193}) {
    std::vector<float> row;
    for (int i = 0; i < n; ++i) row.push_back(float((i * 37) % 101) - 50);  // ties at 50 from i 19 on
    rows.push_back(row);
    row[size_t(n / 3)] = nan;
    row[size_t(n - 1)] = 1000;
    rows.push_back(row);
    std::vector<float> zeros(size_t(n), -0.0f);
    zeros[size_t(n / 2)] = 0.0f;
    rows.push_back(zeros);
  }
  for (const auto& row : rows)
    EXPECT_EQ(sample_token(row, greedy, {}, 0, 0), std::max_element(row.begin(), row.end()) - row.begin())
        << "a row of " << row.size();
}

TEST(Sampling, DrawsFollowTheProbabilitiesAndRepeatForTheSameKey) {
  const int n = 4000;
  SamplingOptions o;
  o.seed = 11;
  expect_frequencies(frequencies(logits_of(kProbs), o, n), kProbs, n);
  for (uint64_t step = 0; step < 20; ++step)
    EXPECT_EQ(sample_token(logits_of(kProbs), o, {}, 5, step),
              sample_token(logits_of(kProbs), o, {}, 5, step));
  // Another sequence (or seed) draws differently.
  int same = 0;
  for (uint64_t step = 0; step < 200; ++step)
    same +=
        sample_token(logits_of(kProbs), o, {}, 5, step) == sample_token(logits_of(kProbs), o, {}, 6, step);
  EXPECT_LT(same, 200);
  // Temperature 2 flattens: p_i^(1/2), renormalized.
  o.temperature = 2;
  std::vector<double> flat;
  double total = 0;
  for (double p : kProbs) total += std::sqrt(p);
  for (double p : kProbs) flat.push_back(std::sqrt(p) / total);
  expect_frequencies(frequencies(logits_of(kProbs), o, n), flat, n);
}

TEST(Sampling, TopKTopPAndMinPCutAsTransformersDoes) {
  const int n = 4000;
  const std::vector<double> kept = {0.5 / 0.8, 0.3 / 0.8, 0, 0};  // the two largest, renormalized
  SamplingOptions k;
  k.top_k = 2;
  expect_frequencies(frequencies(logits_of(kProbs), k, n), kept, n);
  SamplingOptions p;
  p.top_p = 0.75;  // ascending cumulative 0.05, 0.20, 0.50: the first two are <= 0.25 and go
  expect_frequencies(frequencies(logits_of(kProbs), p, n), kept, n);
  SamplingOptions m;
  m.min_p = 0.35;  // below 0.35 x 0.5 = 0.175 goes
  expect_frequencies(frequencies(logits_of(kProbs), m, n), kept, n);
}

// top-p over a wide vocabulary, the cut inside runs of ties: the tokens kept
// are those transformers' TopPLogitsWarper keeps (ascending stable sort of the whole row, removed while
// the cumulative probability is <= 1 - top_p), written out here in full; a removed token is never drawn.
TEST(Sampling, TopPKeepsWhatAWholeAscendingSortKeepsOnWideRowsWithTies) {
  const int n = 4000;
  for (const auto& [top_p, slope] : {std::pair{0.5, 0.05f}, {0.9, 0.05f}, {0.99, 0.05f}, {0.9, 0.6f}}) {
    std::vector<float> logits;
    // Runs of 40 equal logits, in turn higher and lower: the cut falls inside a run, whose tokens of
    // lower index go first. The steeper slope leaves a few runs only, as a trained model's would.
    for (int i = 0; i < 3000; ++i)
      logits.push_back(-slope * float((i / 40) % 30) - ((i / 40) % 2 ? 0.7f : 0.0f));
    std::vector<double> p(logits.size());
    double total = 0;
    for (size_t i = 0; i < p.size(); ++i) total += p[i] = std::exp(double(logits[i]) - double(logits[0]));
    for (double& x : p) x /= total;
    std::vector<size_t> order(p.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] < logits[b]; });
    std::vector<double> kept = p;
    double cumulative = 0, mass = 1;
    for (size_t r = 0; r + 1 < order.size(); ++r) {
      cumulative += p[order[r]];
      if (cumulative <= 1 - top_p) mass -= kept[order[r]], kept[order[r]] = 0;
    }
    for (double& x : kept) x /= mass;
    SamplingOptions o;
    o.top_p = top_p;
    o.seed = 21;
    const std::vector<double> f = frequencies(logits, o, n);
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i] == 0) {
        EXPECT_EQ(f[i], 0.0) << "token " << i << " at top_p " << top_p;
      }
    // The kept mass by logit value (tokens of one value drawn together), against its frequency.
    std::map<float, std::pair<double, double>> by_value;  // value -> (probability, frequency)
    for (size_t i = 0; i < kept.size(); ++i)
      by_value[logits[i]].first += kept[i], by_value[logits[i]].second += f[i];
    for (const auto& [value, pf] : by_value) {
      const double sigma = std::sqrt(pf.first * (1 - pf.first) / n);
      EXPECT_LE(std::fabs(pf.second - pf.first), 5 * sigma + 1e-12)
          << "logit " << value << " at top_p " << top_p;
    }
  }
}

// The softmax's vectorized exp: within 2 ulp of libm's over its whole range (libm's own subnormals and
// zeros below it), exactly 1 at 0.
TEST(Sampling, ExpOfNonpositiveIsWithinTwoUlp) {
  std::vector<double> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-708.0 * i / 200000);
  for (double v : {-0.0, -1e-300, -1e-17, -0.5 * std::log(2.0), -std::log(2.0), -707.9999, -708.5, -744.0,
                   -745.2, -800.0, -double(INFINITY)})
    x.push_back(v);
  std::vector<double> y(x.size()), in_place = x;
  detail::exp_of_nonpositive(x.data(), y.data(), x.size());
  detail::exp_of_nonpositive(in_place.data(), in_place.data(), in_place.size());
  EXPECT_EQ(in_place, y);
  EXPECT_EQ(y[0], 1.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::exp(x[i]), ulp = std::nextafter(e, INFINITY) - e;
    EXPECT_LE(std::fabs(y[i] - e), 2 * ulp) << "exp(" << x[i] << ") = " << e << ", got " << y[i];
  }
}

TEST(Sampling, RepetitionPenaltyDividesPositiveAndMultipliesNegativeScores) {
  SamplingOptions o;
  o.temperature = 0;
  o.repetition_penalty = 2;
  EXPECT_EQ(sample_token(std::vector<float>{2.0f, 1.5f, -0.5f}, o, {0, 0}, 0, 0), 1);  // 2 / 2 = 1 < 1.5
  EXPECT_EQ(sample_token(std::vector<float>{-0.2f, -0.3f, -1.0f}, o, {0}, 0, 0),
            1);  // -0.2 x 2 = -0.4 < -0.3
  EXPECT_EQ(sample_token(std::vector<float>{-0.2f, -0.3f, -1.0f}, o, {}, 0, 0), 0);
}

TEST(Sampling, BadOptionsAreRefusedByName) {
  SamplingOptions o;
  o.top_p = 0;
  EXPECT_NE(
      testing::error_of([&] { sample_token(std::vector<float>{1.0f}, o, {}, 0, 0); }).find("0 < top_p <= 1"),
      std::string::npos);
  SamplingOptions h;
  h.repetition_penalty = 1.2;
  EXPECT_NE(testing::error_of([&] {
              sample_token(std::vector<float>{1.0f, 2.0f}, h, {7}, 0, 0);
            }).find("history holds id 7"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
