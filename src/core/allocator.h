// The CPU allocator's entry points for Storage; counters and cache control are public in runtime.h.
#pragma once

#include <cstddef>

namespace dew::detail {
// Returns a 64-byte aligned block of at least nbytes; *actual receives its size class.
void* cpu_allocate(size_t nbytes, size_t* actual);
void cpu_free(void* p, size_t actual);
// Asks the system to back the 2 MiB pages that [p, p + nbytes) touches with huge pages now
// (MADV_COLLAPSE), for memory read over and over, as a model's weights are in decode: with 4 KiB pages,
// a weight stream's TLB misses stall its products (docs/perf.md, "Weights in huge pages"). Advice only:
// where the system cannot, nothing changes.
void back_with_huge_pages(const void* p, size_t nbytes);
}  // namespace dew::detail
