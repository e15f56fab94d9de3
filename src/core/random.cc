// The random fills built on Philox-4x32-10 (philox.cc). A value depends on (seed, stream, element index)
// only: each element computes its own counter block, so fills are identical at any thread count.
#include <dew/runtime.h>

#include <algorithm>
#include <bit>
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
        const std::array<double, 4> v = values(block_words(key, uint64_t(b)));
        for (int64_t j = 0; j < 4 && 4 * b + j < n; ++j) p[4 * b + j] = Scalar<T>::from_f64(v[size_t(j)]);
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

// NOTE [normal draws in groups of 16]: a model's initialization is mostly normal draws, and libm's logf
// and sincosf one element at a time made them most of the start-up (docs/perf.md). So the narrower dtypes
// draw 16 counter blocks (64 values) at a time in plain loops over lanes, which the compiler vectorizes in
// each clone of target_clones (AVX-512, AVX2, baseline; the one this CPU runs is chosen at load):
// Philox's products as 64-bit lanes, log and sincos as polynomials (Cephes' single-precision ones,
// within a few ulps of float), sqrt as the instruction. Every group computes all 16 lanes, past the end
// too, and writes the valid ones, so a value never depends on where a thread's chunk begins.
constexpr int kLanes = 16;

// ln(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: Cephes' logf polynomial.
[[gnu::always_inline]] inline float log1p_reduced(float f) {
  float p = 7.0376836292e-2f;
  for (float c : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                  2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
    p = p * f + c;
  const float z = f * f;
  return f + (f * z * p - 0.5f * z);
}

// -ln u for u = (w + 1) 2^-32 in (0, 1], within a few ulps for every w. Near u = 1 the log is taken of
// 1 - u = (2^32 - 1 - w) 2^-32, which float holds to its relative precision (u itself is rounded to
// 2^-25 there, which would leave the radius of a draw near 0 off by up to 3.5e-4); elsewhere u = m 2^e
// with m in [sqrt(1/2), sqrt(2)).
[[gnu::always_inline]] inline float minus_log_unit(uint32_t w) {
  const float one_minus_u = float(0xFFFFFFFFu - w) * 0x1p-32f;
  const float near_one = -log1p_reduced(-one_minus_u);
  const uint32_t bits = std::bit_cast<uint32_t>((float(w) + 1.0f) * 0x1p-32f);
  int32_t e = int32_t(bits >> 23) - 127;
  float m = std::bit_cast<float>((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  const bool high = m > 1.41421356f;
  m = high ? 0.5f * m : m;
  e = high ? e + 1 : e;
  const float ef = float(e);
  // Cephes' split of ln 2 (0.693359375 - 2.12194440e-4): e times the first part is exact.
  const float far = -((log1p_reduced(m - 1.0f) + -2.12194440e-4f * ef) + 0.693359375f * ef);
  return one_minus_u < 0.25f ? near_one : far;
}

// sin and cos of 2 pi u for u in [0, 1): the octant from 8u, then Cephes' sinf and cosf on [-pi/4, pi/4].
[[gnu::always_inline]] inline void sincos_turns(float u, float& sin_out, float& cos_out) {
  const float t = 8.0f * u;
  int32_t j = int32_t(t);
  j += j & 1;  // the nearest even octant boundary: t - j in [-1, 1)
  const float r = (t - float(j)) * 0.785398163397448f, r2 = r * r;
  const float s = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
  const float c =
      1.0f - 0.5f * r2 +
      r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
  const int32_t q = (j >> 1) & 3;  // the angle is q quarter turns plus r
  sin_out = q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c;
  cos_out = q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
}

// The 64 values of counter blocks first .. first + 15 of (seed, stream), Box-Muller on word pairs (0,1)
// and (2,3) as the f64 path (the cosine for the even element, the sine for the odd).
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void normal_group(
    const RandomKey& key, uint64_t first, float mean, float stddev, float* out) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t ctr = key.counter_base + first + uint64_t(l);
    c0[l] = uint32_t(ctr), c1[l] = uint32_t(ctr >> 32), c2[l] = uint32_t(key.stream),
    c3[l] = uint32_t(key.stream >> 32);
  }
  uint32_t k0 = uint32_t(key.seed), k1 = uint32_t(key.seed >> 32);
  for (int round = 0; round < 10; ++round, k0 += W0, k1 += W1)
    for (int l = 0; l < kLanes; ++l) {  // philox4x32_10's round, lane by lane
      const uint64_t p0 = uint64_t(M0) * c0[l], p1 = uint64_t(M1) * c2[l];
      const uint32_t n0 = uint32_t(p1 >> 32) ^ c1[l] ^ k0, n2 = uint32_t(p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = uint32_t(p1), c3[l] = uint32_t(p0), c0[l] = n0, c2[l] = n2;
    }
  for (int pair = 0; pair < 4; pair += 2) {
    const uint32_t* radius_words = pair == 0 ? c0 : c2;
    const uint32_t* angle_words = pair == 0 ? c1 : c3;
    float even[kLanes], odd[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const float r = std::sqrt(2.0f * minus_log_unit(radius_words[l]));
      float sin = 0, cos = 0;
      sincos_turns(float(angle_words[l]) * 0x1p-32f, sin, cos);
      even[l] = mean + stddev * r * cos;
      odd[l] = mean + stddev * r * sin;
    }
    for (int l = 0; l < kLanes; ++l) out[4 * l + pair] = even[l], out[4 * l + pair + 1] = odd[l];
  }
}

// fill_normal for f32, bf16 and f16: groups of 16 blocks, each rounded once to the tensor's dtype.
void fill_normal_floats(Tensor& t, const RandomKey& key, float mean, float stddev) {
  DEW_REQUIRE(t.is_contiguous(), "[random] fill of {} needs a contiguous tensor", t.describe());
  visit_dtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(t.raw_data());
    const int64_t n = t.numel(), groups = (n + 4 * kLanes - 1) / (4 * kLanes);
    parallel_for(groups, 64, [&](int64_t g0, int64_t g1) {
      float values[4 * kLanes];
      for (int64_t g = g0; g < g1; ++g) {
        normal_group(key, uint64_t(g) * kLanes, mean, stddev, values);
        const int64_t begin = g * 4 * kLanes, count = std::min<int64_t>(4 * kLanes, n - begin);
        for (int64_t i = 0; i < count; ++i) {
          if constexpr (std::is_same_v<T, float>)
            p[begin + i] = values[i];
          else
            p[begin + i] = Scalar<T>::from_f64(double(values[i]));
        }
      }
    });
  });
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
  // rounding, 64 values at a time (NOTE [normal draws in groups of 16]).
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
  fill_normal_floats(t, key, float(mean), float(stddev));
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
