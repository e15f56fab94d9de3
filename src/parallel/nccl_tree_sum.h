// The fixed tree's sum on a CUDA device, for the NCCL communicator (nccl.cc): P parts of n values
// laid end to end in `parts`, added element by element in fixed_tree_sum's order (NOTE [the fixed
// tree], communicator.cc) into `out`, each addition rounded alone, so the bits equal the CPU's.
#pragma once

#include <cstdint>

namespace dew::parallel {

inline constexpr int kMaxDeviceTreeParts = 64;  // ranks a device sum takes (its per-thread level array)

// f32 or f64 (`f64`), on `stream` (a cudaStream_t) of the current device.
void fixed_tree_sum_on_device(const void* parts, int count, int64_t n, void* out, bool f64, void* stream);

}  // namespace dew::parallel
