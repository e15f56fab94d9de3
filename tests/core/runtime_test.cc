// Philox known answers, thread-count independence of fills, the allocator's counters and the pool.
#include <dew/error.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "core/pacing.h"

#include <chrono>
#include <thread>

#include <atomic>
#include <cmath>

namespace dew {
namespace {

// Random123's published known-answer vectors (kat_vectors) for Philox-4x32-10.
TEST(Philox, MatchesThePublishedKnownAnswers) {
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

std::vector<double> fills_at(int threads) {
  set_num_threads(threads);
  std::vector<double> all;
  for (DType t : {DType::f32, DType::bf16, DType::f64}) {
    Tensor a = Tensor::empty({100003}, t), b = Tensor::empty({100003}, t), c = Tensor::empty({100003}, t);
    Tensor d = Tensor::empty({100003}, DType::i64);
    fill_normal(a, {42, 1, 0}, 0, 1);
    fill_uniform(b, {42, 2, 0}, -1, 1);
    fill_bernoulli(c, {42, 3, 0}, 0.3);
    fill_randint(d, {42, 4, 0}, -5, 17);
    for (const Tensor& x : {a, b, c, d}) {
      auto v = x.to_f64_vector();
      all.insert(all.end(), v.begin(), v.end());
    }
  }
  return all;
}

TEST(Random, FillsAreIdenticalAtOneAndTwoThreads) {
  int before = num_threads();
  auto one = fills_at(1), two = fills_at(2);
  set_num_threads(before);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_TRUE(std::equal(one.begin(), one.end(), two.begin()));
}

TEST(Random, StreamsAndCounterBaseSelectDifferentAndContinuingSequences) {
  Tensor a = Tensor::empty({8}, DType::f64), b = Tensor::empty({8}, DType::f64),
         c = Tensor::empty({4}, DType::f64);
  fill_uniform(a, {1, 0, 0}, 0, 1);
  fill_uniform(b, {1, 1, 0}, 0, 1);
  fill_uniform(c, {1, 0, 1}, 0, 1);  // starts one block (4 elements) later
  EXPECT_NE(a.to_f64_vector(), b.to_f64_vector());
  auto av = a.to_f64_vector(), cv = c.to_f64_vector();
  EXPECT_TRUE(std::equal(cv.begin(), cv.end(), av.begin() + 4));
}

// The narrower dtypes draw normals in float, 64 at a time (NOTE [normal draws in groups of 16]): each
// within its float roundings of the f64 draw of the same key — the angle's (2^-25 of a turn, times the
// largest radius, 6.7) and a few ulps of the value — at every position, the tail and a chunk's start
// included; so a model initialized at f32 is its f64 initialization rounded.
TEST(Random, FloatNormalDrawsAreTheDoubleDrawsToWithinTheirRounding) {
  for (const int64_t n : {int64_t(1), int64_t(67), int64_t(1000003)}) {
    Tensor single = Tensor::empty({n}, DType::f32), wide = Tensor::empty({n}, DType::f64);
    fill_normal(single, {3, 5, 7}, 0.5, 2.0);
    fill_normal(wide, {3, 5, 7}, 0.5, 2.0);
    const std::vector<double> x = single.to_f64_vector(), y = wide.to_f64_vector();
    for (int64_t i = 0; i < n; ++i) {
      const double bound = 2.0 * (6.7 * 2 * M_PI * 0x1p-25 + 8 * 0x1p-24 * std::fabs(y[size_t(i)]));
      ASSERT_LE(std::fabs(x[size_t(i)] - y[size_t(i)]), bound) << "element " << i << " of " << n;
    }
  }
}

// Moments within 6 standard errors: a real deviation fails, chance essentially never does.
TEST(Random, DistributionsHaveTheirMoments) {
  const int64_t n = 400000;
  Tensor x = Tensor::empty({n}, DType::f64), u = Tensor::empty({n}, DType::f64),
         k = Tensor::empty({n}, DType::i32);
  fill_normal(x, {9, 0, 0}, 2.0, 3.0);
  fill_uniform(u, {9, 1, 0}, -1.0, 3.0);
  fill_randint(k, {9, 2, 0}, 0, 10);
  double sx = 0, sxx = 0, su = 0;
  std::vector<int64_t> counts(10, 0);
  for (double v : x.to_f64_vector()) sx += v, sxx += v * v;
  for (double v : u.to_f64_vector()) {
    su += v;
    ASSERT_TRUE(v >= -1.0 && v < 3.0);
  }
  for (double v : k.to_f64_vector()) counts[size_t(v)]++;
  double mean = sx / double(n), var = sxx / double(n) - mean * mean;
  EXPECT_LT(std::fabs(mean - 2.0), 6 * 3.0 / std::sqrt(double(n)));
  EXPECT_LT(std::fabs(var - 9.0), 6 * 9.0 * std::sqrt(2.0 / double(n)));
  EXPECT_LT(std::fabs(su / double(n) - 1.0), 6 * (4.0 / std::sqrt(12.0)) / std::sqrt(double(n)));
  for (int64_t c : counts) EXPECT_LT(std::fabs(double(c) - double(n) / 10), 6 * std::sqrt(double(n) * 0.09));
}

TEST(Allocator, CountsBytesInUseAndPeakAndAlignsTo64) {
  MemoryStats before = cpu_memory_stats();
  reset_peak_memory();
  {
    Tensor a = Tensor::empty({1000}, DType::f32);
    Tensor b = Tensor::empty({3}, DType::f64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw_data()) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.raw_data()) % 64, 0u);
    EXPECT_EQ(cpu_memory_stats().bytes_in_use - before.bytes_in_use, 4032 + 64);
  }
  MemoryStats after = cpu_memory_stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.peak_bytes, before.bytes_in_use + 4032 + 64);
}

TEST(Allocator, ReusesACachedBlockOfTheSameSize) {
  void* first;
  {
    Tensor a = Tensor::empty({123457}, DType::f32);
    first = a.raw_data();
  }
  Tensor b = Tensor::empty({123457}, DType::f32);
  EXPECT_EQ(b.raw_data(), first);
}

TEST(Allocator, RefusesPastTheMemoryLimitWithOutOfMemory) {
  const int64_t in_use = cpu_memory_stats().bytes_in_use;
  set_memory_limit(in_use + (1 << 20));
  Tensor fits = Tensor::empty({1 << 17}, DType::f32);  // 512 KiB
  std::string message;
  try {
    Tensor too_much = Tensor::empty({1 << 18}, DType::f32);  // 1 MiB more
  } catch (const OutOfMemory& e) {
    message = e.what();
  }
  set_memory_limit(0);
  EXPECT_NE(message.find("would pass the limit of " + std::to_string(in_use + (1 << 20))), std::string::npos)
      << message;
  EXPECT_EQ(cpu_memory_stats().bytes_in_use, in_use + (1 << 19)) << "the refused bytes are not counted";
  Tensor now_fits = Tensor::empty({1 << 18}, DType::f32);
  EXPECT_NE(now_fits.raw_data(), nullptr);
}

TEST(Threads, ParallelForCoversEveryIndexOnceAndPropagatesErrors) {
  set_num_threads(2);
  std::vector<std::atomic<int>> hits(10007);
  parallel_for(10007, 100, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    parallel_for(10, 1, [](int64_t, int64_t) {});  // nested: runs inline
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_THROW(parallel_for(100, 1,
                            [](int64_t b, int64_t) {
                              if (b > 0) fail("boom");
                            }),
               Error);
}

// NOTE [paced ranges]: the ranges cover [0, n) once, in order, and a caller that finishes its range
// sooner than the worker takes a larger share at the next calls (the worker's items cost ten times more).
TEST(Threads, PacedRangesCoverEveryIndexOnceAndShiftTowardTheFasterThread) {
  const int threads = num_threads();
  set_num_threads(2);
  Pacing pacing;
  const auto busy = [](std::chrono::microseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  int64_t caller_items = 0;
  for (int call = 0; call < 12; ++call) {
    std::vector<std::atomic<int>> hits(100);
    std::atomic<int64_t> first_end = -1;
    parallel_for_paced(pacing, 100, 1, [&](int chunk, int64_t b, int64_t e) {
      if (chunk == 0) {
        EXPECT_EQ(b, 0);
        first_end = e;
      }
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      busy(std::chrono::microseconds((chunk == 0 ? 5 : 50) * (e - b)));
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    caller_items = first_end.load();
  }
  EXPECT_EQ(paced_chunks(100, 1), 2);  // what a body keeping something per chunk sizes it by
  EXPECT_EQ(paced_chunks(3, 2), 2);
  EXPECT_EQ(paced_chunks(1, 4), 1);
  EXPECT_GT(caller_items, 70) << "the caller's share after the worker was ten times slower";
  set_num_threads(threads);
}

TEST(Threads, APoolResizedAfterJobsRanWaitsForTheNextJob) {
  // A worker started by a resize once took the last job it never saw (a dangling pointer): a crash.
  const int threads = num_threads();
  std::atomic<int64_t> total = 0;
  for (int round = 0; round < 3; ++round) {
    set_num_threads(2);
    parallel_for(1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
    set_num_threads(1);
    parallel_for(1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
  }
  set_num_threads(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the new worker looks before any job comes
  parallel_for(1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 7000);
  set_num_threads(threads);
}

TEST(Threads, JobsRunOnceEachWhetherWorkersSpinSleepOrSitOut) {
  // Back-to-back jobs find the workers polling, jobs after a pause find them asleep (and the caller
  // taking their chunks, NOTE [unstarted chunks]); with four threads a two-chunk job leaves two workers
  // out, and none of them may run a chunk twice, or not at all.
  const int threads = num_threads();
  set_num_threads(4);
  for (int round = 0; round < 200; ++round) {
    const int64_t n = round % 3 == 0 ? 2 : 1000;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "round " << round;
    if (round % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  set_num_threads(threads);
}

}  // namespace
}  // namespace dew
