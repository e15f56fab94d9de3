// The checks every communicator makes of a collective's tensors, so that each backend refuses the same
// calls with the same words.
#pragma once

#include <dew/tensor.h>

namespace dew::parallel {

// Each on the communicator's `device`: the cpu (single process, MPI) or its CUDA device (NCCL).
void check_summed(const char* collective, const Tensor& t, Device device = Device::cpu());  // f32, f64
void check_reduce_scatter(const Tensor& in, const Tensor& out, int ranks, Device device = Device::cpu());
void check_all_gather(const Tensor& in, const Tensor& out, int ranks, Device device = Device::cpu());
void check_broadcast(const Tensor& t, int root, int ranks, Device device = Device::cpu());
void check_reduce(const Tensor& in, const Tensor& out, int root, int rank, int ranks,
                  Device device = Device::cpu());

}  // namespace dew::parallel
