// runtime.h's view of CUDA devices: their count, their allocator's counters, waiting for their work.
// The devices themselves are src/cuda's (runtime.h there); this is the public face core gives them.
#include <dew/runtime.h>

#include "cuda/runtime.h"

namespace dew {

int cuda_device_count() {
  return cuda::device_count();
}

MemoryStats cuda_memory_stats(int index) {
  const cuda::AllocatorStats s = cuda::allocator_stats(index);
  return {s.bytes_in_use, s.peak_bytes, s.bytes_cached};
}

void cuda_synchronize(int index) {
  cuda::synchronize(index);
}

}  // namespace dew
