// The CPU allocator: 64-byte aligned blocks, cached by exact size class for reuse, with counters.
// Why cache: a fresh page costs about 7x a warm one on our machines (BENCHMARKS.md), every step.
// Size classes round up to 64 bytes below 1 MiB and to 1/8 of the power of two above, so that
// cached blocks match again without wasting more than 12.5%.
#include "core/allocator.h"

#include <dew/runtime.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace dew::detail {
namespace {

struct CpuAllocator {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> cache;  // size class -> free blocks
  MemoryStats stats;

  static size_t size_class(size_t nbytes) {
    if (nbytes <= (size_t(1) << 20)) return (nbytes + 63) & ~size_t(63);
    size_t top = size_t(1) << (63 - __builtin_clzll(nbytes));
    size_t step = top / 8;
    return (nbytes + step - 1) / step * step;
  }
};

CpuAllocator& allocator() {
  static CpuAllocator* a = new CpuAllocator;  // never destroyed: tensors may outlive static teardown
  return *a;
}

}  // namespace

void* cpu_allocate(size_t nbytes, size_t* actual) {
  CpuAllocator& a = allocator();
  size_t cls = CpuAllocator::size_class(nbytes == 0 ? 64 : nbytes);
  *actual = cls;
  {
    std::lock_guard lock(a.mutex);
    a.stats.bytes_in_use += int64_t(cls);
    if (a.stats.bytes_in_use > a.stats.peak_bytes) a.stats.peak_bytes = a.stats.bytes_in_use;
    auto it = a.cache.find(cls);
    if (it != a.cache.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      a.stats.bytes_cached -= int64_t(cls);
      return p;
    }
  }
  void* p = std::aligned_alloc(64, cls);
  if (!p) {
    std::lock_guard lock(a.mutex);
    a.stats.bytes_in_use -= int64_t(cls);
    fail("[allocator] out of memory allocating {} bytes on cpu ({} bytes in use)", cls, a.stats.bytes_in_use);
  }
  return p;
}

void cpu_free(void* p, size_t actual) {
  CpuAllocator& a = allocator();
  std::lock_guard lock(a.mutex);
  a.stats.bytes_in_use -= int64_t(actual);
  a.stats.bytes_cached += int64_t(actual);
  a.cache[actual].push_back(p);
}

}  // namespace dew::detail

namespace dew {

MemoryStats cpu_memory_stats() {
  auto& a = detail::allocator();
  std::lock_guard lock(a.mutex);
  return a.stats;
}

void reset_peak_memory() {
  auto& a = detail::allocator();
  std::lock_guard lock(a.mutex);
  a.stats.peak_bytes = a.stats.bytes_in_use;
}

void release_cached_memory() {
  auto& a = detail::allocator();
  std::lock_guard lock(a.mutex);
  for (auto& [cls, blocks] : a.cache)
    for (void* p : blocks) std::free(p);
  a.cache.clear();
  a.stats.bytes_cached = 0;
}

}  // namespace dew
