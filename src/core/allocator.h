// The CPU allocator's entry points for Storage; counters and cache control are public in runtime.h.
#pragma once

#include <cstddef>

namespace dew::detail {
// Returns a 64-byte aligned block of at least nbytes; *actual receives its size class.
void* cpu_allocate(size_t nbytes, size_t* actual);
void cpu_free(void* p, size_t actual);
}  // namespace dew::detail
