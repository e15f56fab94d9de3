// The CUDA runtime glue (runtime.h): device discovery, the per-device compute stream, the caching
// allocator over cudaMalloc (never managed memory), pinned staging for host transfers, and the error
// messages of launch.h's checks.
#include <dew/error.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/launch.h"

namespace dew::cuda {

void fail_call(cudaError_t error, const char* what, const char* file, int line) {
  const std::string message = fmt::format("[cuda] {} failed at {}:{}: {} ({})", what, file, line,
                                          cudaGetErrorString(error), cudaGetErrorName(error));
  if (error == cudaErrorMemoryAllocation) throw OutOfMemory(message);
  throw Error(message);
}

int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // no driver or no device: clear the sticky error, report none
      return 0;
    }
    return n;
  }();
  return count;
}

namespace {

void require_device(int device) {
  DEW_REQUIRE(device >= 0 && device < device_count(),
              "[cuda] device cuda:{} does not exist; this machine has {} CUDA device(s){}", device,
              device_count(), device_count() == 0 ? " (no driver or no GPU)" : "");
}

// Everything held per device. Never destroyed: tensors may outlive static teardown.
struct DeviceState {
  std::once_flag stream_once;
  cudaStream_t stream = nullptr;
  std::mutex mutex;  // the allocator's cache and counters, and the staging buffer
  std::map<size_t, std::vector<void*>> cache;
  AllocatorStats stats;
  void* staging = nullptr;  // pinned host memory for transfers
  size_t staging_bytes = 0;
  std::once_flag properties_once;
  DeviceProperties properties;
};

DeviceState& state(int device) {
  require_device(device);
  static std::vector<DeviceState*>* states = [] {
    auto* v = new std::vector<DeviceState*>;
    for (int i = 0; i < device_count(); ++i) v->push_back(new DeviceState);
    return v;
  }();
  return *(*states)[size_t(device)];
}

// Size classes as the CPU allocator's (512-byte granules below 1 MiB, then eighths of the power of
// two), so freed blocks match again without wasting more than 12.5%.
size_t size_class(size_t nbytes) {
  if (nbytes <= (size_t(1) << 20)) return (nbytes + 511) & ~size_t(511);
  const size_t top = size_t(1) << (63 - __builtin_clzll(nbytes));
  const size_t step = top / 8;
  return (nbytes + step - 1) / step * step;
}

void release_cache_locked(int device, DeviceState& s) {
  use_device(device);
  DEW_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream(device))));
  for (auto& [cls, blocks] : s.cache)
    for (void* p : blocks) DEW_CUDA_CHECK(cudaFree(p));
  s.cache.clear();
  s.stats.bytes_cached = 0;
}

}  // namespace

void use_device(int device) {
  thread_local int current = -1;
  if (current == device) return;
  DEW_CUDA_CHECK(cudaSetDevice(device));
  current = device;
}

const DeviceProperties& properties(int device) {
  DeviceState& s = state(device);
  std::call_once(s.properties_once, [&] {
    cudaDeviceProp p{};
    DEW_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    s.properties.name = p.name;
    s.properties.sm = p.major * 10 + p.minor;
    s.properties.multiprocessors = p.multiProcessorCount;
    s.properties.memory_bytes = int64_t(p.totalGlobalMem);
    s.properties.l2_bytes = p.l2CacheSize;
    s.properties.shared_per_block_optin = int64_t(p.sharedMemPerBlockOptin);
  });
  return s.properties;
}

void* stream(int device) {
  DeviceState& s = state(device);
  std::call_once(s.stream_once, [&] {
    use_device(device);
    DEW_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  });
  return s.stream;
}

void synchronize(int device) {
  use_device(device);
  DEW_CUDA_CHECK(cudaStreamSynchronize(stream_of(device)));
}

void* allocate(int device, size_t nbytes, size_t* actual) {
  DeviceState& s = state(device);
  const size_t cls = size_class(nbytes == 0 ? 512 : nbytes);
  *actual = cls;
  std::lock_guard lock(s.mutex);
  auto it = s.cache.find(cls);
  if (it != s.cache.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    s.stats.bytes_cached -= int64_t(cls);
    s.stats.bytes_in_use += int64_t(cls);
    s.stats.peak_bytes = std::max(s.stats.peak_bytes, s.stats.bytes_in_use);
    return p;
  }
  use_device(device);
  void* p = nullptr;
  if (cudaMalloc(&p, cls) != cudaSuccess) {
    (void)cudaGetLastError();
    release_cache_locked(device, s);  // blocks of other sizes may be what the device lacks
    if (cudaMalloc(&p, cls) != cudaSuccess) {
      (void)cudaGetLastError();
      throw OutOfMemory(
          fmt::format("[cuda] out of memory: cuda:{} refused {} bytes with {} in use by tensors; free "
                      "tensors or need less",
                      device, cls, s.stats.bytes_in_use));
    }
  }
  s.stats.bytes_in_use += int64_t(cls);
  s.stats.peak_bytes = std::max(s.stats.peak_bytes, s.stats.bytes_in_use);
  return p;
}

void deallocate(int device, void* p, size_t actual) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  s.stats.bytes_in_use -= int64_t(actual);
  s.stats.bytes_cached += int64_t(actual);
  s.cache[actual].push_back(p);
}

AllocatorStats allocator_stats(int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  return s.stats;
}

void reset_peak(int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  s.stats.peak_bytes = s.stats.bytes_in_use;
}

void release_cached(int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  release_cache_locked(device, s);
}

namespace {

constexpr size_t kStagingChunk = size_t(32) << 20;

// The device's pinned buffer, allocated on first transfer; the caller holds the mutex.
void* staging_locked(DeviceState& s) {
  if (!s.staging) {
    DEW_CUDA_CHECK(cudaMallocHost(&s.staging, kStagingChunk));
    s.staging_bytes = kStagingChunk;
  }
  return s.staging;
}

// Host <-> device through pinned staging, chunk by chunk: pageable memory would make CUDA stage it
// anyway, one synchronous copy at a time.
void transfer_host(int device, void* dst, const void* src, size_t nbytes, bool to_device) {
  DeviceState& s = state(device);
  use_device(device);
  cudaStream_t st = stream_of(device);
  std::lock_guard lock(s.mutex);
  char* pinned = static_cast<char*>(staging_locked(s));
  for (size_t done = 0; done < nbytes; done += kStagingChunk) {
    const size_t n = std::min(kStagingChunk, nbytes - done);
    if (to_device) {
      std::memcpy(pinned, static_cast<const char*>(src) + done, n);
      DEW_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + done, pinned, n, cudaMemcpyHostToDevice, st));
      DEW_CUDA_CHECK(cudaStreamSynchronize(st));  // the buffer is reused by the next chunk
    } else {
      DEW_CUDA_CHECK(
          cudaMemcpyAsync(pinned, static_cast<const char*>(src) + done, n, cudaMemcpyDeviceToHost, st));
      DEW_CUDA_CHECK(cudaStreamSynchronize(st));
      std::memcpy(static_cast<char*>(dst) + done, pinned, n);
    }
  }
}

}  // namespace

void copy_bytes(void* dst, int dst_device, const void* src, int src_device, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device < 0 && src_device < 0) {
    std::memcpy(dst, src, nbytes);
  } else if (src_device < 0) {
    transfer_host(dst_device, dst, src, nbytes, true);
  } else if (dst_device < 0) {
    transfer_host(src_device, dst, src, nbytes, false);
  } else if (src_device == dst_device) {
    use_device(dst_device);
    DEW_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream_of(dst_device)));
  } else {
    // Across devices: order after the source's work, and make the destination's later work wait.
    synchronize(src_device);
    use_device(dst_device);
    DEW_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes, stream_of(dst_device)));
    synchronize(dst_device);
  }
}

Timer::Timer(int device) : device_(device) {
  use_device(device);
  cudaEvent_t a = nullptr, b = nullptr;
  DEW_CUDA_CHECK(cudaEventCreate(&a));
  DEW_CUDA_CHECK(cudaEventCreate(&b));
  start_ = a;
  stop_ = b;
}

Timer::~Timer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

void Timer::start() {
  DEW_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_), stream_of(device_)));
}

double Timer::stop_ms() {
  DEW_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_), stream_of(device_)));
  DEW_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  float ms = 0;
  DEW_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  return double(ms);
}

}  // namespace dew::cuda
