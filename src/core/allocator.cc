// The CPU allocator: 64-byte aligned blocks, cached by exact size class for reuse, with counters.
// Why cache: a fresh page costs several times a warm one (the kernel clears it), every step.
// Size classes round up to 64 bytes below 1 MiB and to 1/8 of the power of two above, so that
// cached blocks match again without wasting more than 12.5%.
#include "core/allocator.h"

#include <dew/error.h>
#include <dew/runtime.h>

#include <malloc.h>
#include <sys/mman.h>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace dew::detail {
namespace {

int64_t limit_from_environment() {
  const char* env = std::getenv("DEW_MEMORY_LIMIT");
  if (!env) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(env, &end, 10);
  DEW_REQUIRE(end != env && *end == '\0' && n >= 0,
              "DEW_MEMORY_LIMIT='{}' is not a byte count; expected an integer >= 0 (0: no limit)", env);
  return n;
}

struct CpuAllocator {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> cache;  // size class -> free blocks
  MemoryStats stats;
  int64_t limit = limit_from_environment();  // bytes in use allowed; 0: none

  static size_t size_class(size_t nbytes) {
    if (nbytes <= (size_t(1) << 20)) return (nbytes + 63) & ~size_t(63);
    size_t top = size_t(1) << (63 - __builtin_clzll(nbytes));
    size_t step = top / 8;
    return (nbytes + step - 1) / step * step;
  }
};

// NOTE [freed memory kept]: glibc gives blocks above its mmap threshold (128 KiB at first) back to the
// system when they are freed, and trims the heap's top, so the buffers libraries allocate per call
// (oneDNN's GEMM packing) are fresh pages, cleared by the kernel, every step. Dew's own blocks are
// cached here; for the rest, malloc keeps freed memory up to these thresholds (as PyTorch is run
// with jemalloc's decay off), and a steady training step maps no new pages.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: blocks up to 32 MiB come from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);   // the heap's top is returned past 1 GiB free only
#endif
}

// NOTE [large blocks in huge pages]: a block from the system. Large ones are asked for in transparent
// huge pages (2 MiB aligned): the first touch of fresh memory is what a new block costs (the kernel
// clears it), and one fault per 2 MiB is cheaper than 512 faults of 4 KiB.
void* system_allocate(size_t bytes) {
  constexpr size_t kHugePage = size_t(2) << 20;
  if (bytes < 2 * kHugePage) return std::aligned_alloc(64, bytes);
  void* p = std::aligned_alloc(kHugePage, (bytes + kHugePage - 1) / kHugePage * kHugePage);
#if defined(MADV_HUGEPAGE)
  if (p) ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP it changes nothing
#endif
  return p;
}

}  // namespace

void back_with_huge_pages(const void* p, size_t nbytes) {
#if defined(__linux__)
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  constexpr int kCollapse = 25;  // MADV_COLLAPSE (Linux 6.1), which glibc 2.36's headers do not name yet
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + nbytes + kHugePage - 1) & ~(kHugePage - 1);
  // One huge page at a time: one the kernel refuses (not mapped, or not anonymous) leaves the others.
  for (uintptr_t page = begin; page < end; page += kHugePage)
    (void)::madvise(reinterpret_cast<void*>(page), kHugePage, kCollapse);
#else
  (void)p, (void)nbytes;
#endif
}

namespace {

CpuAllocator& allocator() {
  static CpuAllocator* a = [] {
    keep_freed_memory();
    return new CpuAllocator;  // never destroyed: tensors may outlive static teardown
  }();
  return *a;
}

// Frees every cached block; the caller holds the mutex.
void release_cache_locked(CpuAllocator& a) {
  for (auto& [cls, blocks] : a.cache)
    for (void* p : blocks) std::free(p);
  a.cache.clear();
  a.stats.bytes_cached = 0;
}

}  // namespace

void* cpu_allocate(size_t nbytes, size_t* actual) {
  CpuAllocator& a = allocator();
  size_t cls = CpuAllocator::size_class(nbytes == 0 ? 64 : nbytes);
  *actual = cls;
  {
    std::lock_guard lock(a.mutex);
    if (a.limit > 0 && a.stats.bytes_in_use + int64_t(cls) > a.limit)
      throw OutOfMemory(fmt::format(
          "[allocator] out of memory: {} more bytes on cpu would pass the limit of {} ({} in use); raise "
          "DEW_MEMORY_LIMIT or need less",
          cls, a.limit, a.stats.bytes_in_use));
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
  void* p = system_allocate(cls);
  if (!p) {  // blocks cached in other size classes may be what the system lacks
    std::lock_guard lock(a.mutex);
    release_cache_locked(a);
    p = system_allocate(cls);
    if (!p) {
      a.stats.bytes_in_use -= int64_t(cls);
      throw OutOfMemory(
          fmt::format("[allocator] out of memory: the system refused {} bytes on cpu ({} in use)", cls,
                      a.stats.bytes_in_use));
    }
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
  detail::release_cache_locked(a);
}

void set_memory_limit(int64_t bytes) {
  DEW_REQUIRE(bytes >= 0, "set_memory_limit({}): expected bytes >= 0 (0: no limit)", bytes);
  auto& a = detail::allocator();
  std::lock_guard lock(a.mutex);
  a.limit = bytes;
}

}  // namespace dew
