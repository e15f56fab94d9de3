// The checks every communicator makes of a collective's tensors, so that each backend refuses the same
// calls with the same words.
#pragma once

#include <dew/tensor.h>

namespace dew::parallel {

void check_summed(const char* collective, const Tensor& t);  // contiguous f32 or f64 on the cpu
void check_reduce_scatter(const Tensor& in, const Tensor& out, int ranks);
void check_all_gather(const Tensor& in, const Tensor& out, int ranks);
void check_broadcast(const Tensor& t, int root, int ranks);
void check_reduce(const Tensor& in, const Tensor& out, int root, int rank, int ranks);
// The CollectiveTimeout of rank `rank` after `waited` seconds in `what` (NOTE [bounded waits], mpi.cc).
[[noreturn]] void timed_out(int rank, double waited, const char* what, double timeout_s);

}  // namespace dew::parallel
