// Process-wide runtime services: allocator counters, the thread pool, and counter-based randomness.
// Contract: parallel_for splits [0, n) into the same contiguous ranges for a given (n, grain, threads);
// random fills depend on (seed, stream, element index) only, never on thread count or call order.
#pragma once

#include <dew/tensor.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dew {

struct MemoryStats {
  int64_t bytes_in_use = 0;  // live tensor bytes
  int64_t peak_bytes = 0;    // max of bytes_in_use since the last reset_peak_memory()
  int64_t bytes_cached = 0;  // freed blocks kept for reuse
};
MemoryStats cpu_memory_stats();
void reset_peak_memory();
void release_cached_memory();  // returns cached blocks to the system
// A cap on cpu bytes in use (0: none, the default; DEW_MEMORY_LIMIT=BYTES sets it at start): an
// allocation past it, or one the system refuses even after the cache is released, throws OutOfMemory.
void set_memory_limit(int64_t bytes);

// CUDA devices (absent from a build without the toolkit, and on a machine without a driver or GPU:
// then 0 devices). The allocator's counters of device `index`, and waiting for its queued work.
int cuda_device_count();
MemoryStats cuda_memory_stats(int index = 0);
void cuda_synchronize(int index = 0);

// The op profile: while on, each op call's kernel time is summed by (phase, op, label), the phase
// being the innermost ProfilePhase open on the calling thread ("" outside any). Off by default;
// `dew train --profile` and `dew bench train` turn it on and classify the rows (train.h StepProfile).
struct OpTime {
  std::string phase, op, label;  // label: the call's case ("f32 tb"); a GEMM's also has its M x N x K
  int64_t calls = 0;
  double seconds = 0;  // host wall time of the kernels
  double flops = 0;    // where the op counts them (matmul, attention)
};
void set_op_profiling(bool on);
std::vector<OpTime> op_profile();
void reset_op_profile();
// The profile's own time since the last reset (each call's label, FLOP count and record): a profiled
// step's wall time less this is the step as it runs unprofiled, near enough.
double op_profile_bookkeeping_seconds();
class ProfilePhase {  // names the phase of the ops run in its scope on this thread
 public:
  explicit ProfilePhase(const char* name);  // a string literal: it is kept, not copied
  ~ProfilePhase();
  ProfilePhase(const ProfilePhase&) = delete;
  ProfilePhase& operator=(const ProfilePhase&) = delete;

 private:
  const char* previous_;
};

// Threads: sized to the machine; DEW_THREADS overrides. set_num_threads is for tests and benchmarks.
int num_threads();
void set_num_threads(int n);
// Runs body(begin, end) over contiguous chunks of [0, n) of at least `grain` items, on the pool.
// Nested calls from inside a body run inline.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// Philox-4x32-10 (Salmon et al., SC'11): 4 output words per (counter, key).
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// Named streams keep initialization, data order, dropout, noise and sampling independent.
// Element i of a fill uses counter block i/4 (word i%4) keyed by seed, with the stream in the high
// counter words; `counter_base` lets a caller continue a sequence from a saved position.
struct RandomKey {
  uint64_t seed = 0;
  uint64_t stream = 0;
  uint64_t counter_base = 0;  // in blocks of 4 words
};
void fill_uniform(Tensor& t, RandomKey key, double low, double high);  // [low, high)
void fill_normal(Tensor& t, RandomKey key, double mean, double stddev);
void fill_bernoulli(Tensor& t, RandomKey key, double p);                 // 1 with probability p
void fill_randint(Tensor& t, RandomKey key, int64_t low, int64_t high);  // [low, high)

// Which instruction sets this CPU offers (cpuid), for the selector's cpu_has requirement. The
// environment's DEW_MAX_CPU_ISA (baseline, avx2, avx512, avx512_bf16) treats the sets above that level as
// absent, so the routes and speed of a lesser CPU can be seen on this one (with oneDNN's own
// DNNL_MAX_CPU_ISA for its kernels); another value is an error naming the levels.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;  // vcvtph2ps and vcvtps2ph on 128/256-bit registers
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512bf16 = false;  // vcvtneps2bf16 and friends (NOTE [native bf16 narrowing])
};
const CpuFeatures& cpu_features();

}  // namespace dew
