// The random fills built on Philox-4x32-10 (philox.cc). A value depends on (seed, stream, element index)
// only: each element computes its own counter block, so fills are identical at any thread count.
#include <dew/runtime.h>

#include <cmath>
#include <numbers>
#include <type_traits>

namespace dew {

namespace {

// The 4 words of counter block `block` of (seed, stream).
std::array<uint32_t, 4> block_words(const RandomKey& key, uint64_t block) {
  uint64_t ctr = key.counter_base + block;
  return philox4x32_10({uint32_t(ctr), uint32_t(ctr >> 32), uint32_t(key.stream), uint32_t(key.stream >> 32)},
                       {uint32_t(key.seed), uint32_t(key.seed >> 32)});
}

// (0, 1]: never 0, so log() in Box-Muller is finite.
double open_unit(uint32_t w) {
  return (double(w) + 1.0) * 0x1p-32;
}

// Fills t with values(words) of each counter block: the 4 values of elements 4b .. 4b+3 from block b's
// words, so Philox runs once per 4 elements and a Box-Muller pair shares its logarithm. Chunks of the
// pool start on block boundaries; a value depends on its index alone.
template <class Values>
void fill_with(Tensor& t, const RandomKey& key, Values values) {
  DEW_REQUIRE(t.is_contiguous(), "[random] fill of {} needs a contiguous tensor", t.describe());
  visit_dtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(t.raw_data());
    const int64_t n = t.numel(), blocks = (n + 3) / 4;
    parallel_for(blocks, 1024, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const auto v = values(block_words(key, uint64_t(b)));  // 4 doubles, or 4 floats for float draws
        for (int64_t j = 0; j < 4 && 4 * b + j < n; ++j) {
          if constexpr (std::is_same_v<T, float> && std::is_same_v<decltype(v), const std::array<float, 4>>)
            p[4 * b + j] = v[size_t(j)];
          else
            p[4 * b + j] = Scalar<T>::from_f64(double(v[size_t(j)]));
        }
      }
    });
  });
}

// The same value function applied to each of a block's 4 words.
template <class Value>
auto each_word(Value value) {
  return [value](const std::array<uint32_t, 4>& w) {
    return std::array<double, 4>{value(w[0]), value(w[1]), value(w[2]), value(w[3])};
  };
}

}  // namespace

void fill_uniform(Tensor& t, RandomKey key, double low, double high) {
  DEW_REQUIRE(low < high, "[random] uniform range [{}, {}) is empty; expected low < high", low, high);
  fill_with(t, key, each_word([&](uint32_t w) { return low + (high - low) * (double(w) * 0x1p-32); }));
}

void fill_normal(Tensor& t, RandomKey key, double mean, double stddev) {
  DEW_REQUIRE(stddev >= 0, "[random] normal stddev {} is negative; expected >= 0", stddev);
  // Box-Muller on the word pairs (0,1) and (2,3): the cosine for the even element, the sine for the odd.
  // In double for f64; for the narrower floats in float, whose few ulps of error vanish in their own
  // rounding and which costs half as much (a model's initialization is mostly these draws).
  if (t.dtype() == DType::f64) {
    fill_with(t, key, [&](const std::array<uint32_t, 4>& w) {
      std::array<double, 4> v;
      for (size_t pair = 0; pair < 4; pair += 2) {
        const double r = std::sqrt(-2.0 * std::log(open_unit(w[pair])));
        double sin = 0, cos = 0;
        ::sincos(2.0 * std::numbers::pi * (double(w[pair + 1]) * 0x1p-32), &sin, &cos);
        v[pair] = mean + stddev * r * cos;
        v[pair + 1] = mean + stddev * r * sin;
      }
      return v;
    });
    return;
  }
  const float mean_f = float(mean), stddev_f = float(stddev);
  fill_with(t, key, [&](const std::array<uint32_t, 4>& w) {
    std::array<float, 4> v;
    for (size_t pair = 0; pair < 4; pair += 2) {
      // (0, 1]: the sum rounds to at most 2^32, never to 0
      const float r = std::sqrt(-2.0f * std::log((float(w[pair]) + 1.0f) * 0x1p-32f));
      float sin = 0, cos = 0;
      ::sincosf(2.0f * std::numbers::pi_v<float> * (float(w[pair + 1]) * 0x1p-32f), &sin, &cos);
      v[pair] = mean_f + stddev_f * r * cos;
      v[pair + 1] = mean_f + stddev_f * r * sin;
    }
    return v;
  });
}

void fill_bernoulli(Tensor& t, RandomKey key, double p) {
  DEW_REQUIRE(p >= 0 && p <= 1, "[random] bernoulli p={} is not a probability; expected 0 <= p <= 1", p);
  fill_with(t, key, each_word([&](uint32_t w) { return double(w) * 0x1p-32 < p ? 1.0 : 0.0; }));
}

void fill_randint(Tensor& t, RandomKey key, int64_t low, int64_t high) {
  DEW_REQUIRE(low < high && uint64_t(high - low) <= (uint64_t(1) << 32),
              "[random] randint range [{}, {}) must be non-empty and at most 2^32 wide", low, high);
  uint64_t range = uint64_t(high - low);
  fill_with(t, key,
            each_word([&](uint32_t w) { return double(low + int64_t((uint64_t(w) * range) >> 32)); }));
}

}  // namespace dew
