// The NCCL communicator on one device (parallel.h nccl_world): the device's fixed-tree sum gives the
// CPU's bits for any part count, and each collective moves and sums exactly with one rank. Several ranks
// need several GPUs and mpirun; on a machine without a device or a build without NCCL, these skip.
#include <dew/parallel.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "cuda/runtime.h"
#include "parallel/nccl_tree_sum.h"

namespace dew::parallel {
namespace {

bool have_nccl_device() {
  return built_with_nccl() && cuda_device_count() > 0;
}

Tensor draws(int64_t n, uint64_t seed) {
  Tensor t = Tensor::empty({n}, DType::f32);
  fill_normal(t, {seed, 0, 0}, 0, 1);
  return t;
}

TEST(NcclTreeSum, TheDevicesSumIsTheCpusBitForBit) {
  if (!have_nccl_device()) GTEST_SKIP() << "no CUDA device, or no NCCL in this build";
  const int64_t n = 4099;
  for (int count = 1; count <= 9; ++count) {
    const Tensor parts = draws(count * n, uint64_t(count));
    std::vector<const float*> pointers;
    for (int p = 0; p < count; ++p) pointers.push_back(parts.data<float>() + p * n);
    std::vector<float> expected(static_cast<size_t>(n));
    fixed_tree_sum(pointers, expected.data(), n);
    const Tensor on_device = parts.to(Device::cuda(0));
    Tensor out = Tensor::empty({n}, DType::f32, Device::cuda(0));
    fixed_tree_sum_on_device(on_device.raw_data(), count, n, out.raw_data(), false, cuda::stream(0));
    cuda::synchronize(0);
    EXPECT_EQ(out.to(Device::cpu()).to_f64_vector(), std::vector<double>(expected.begin(), expected.end()))
        << count << " parts";
  }
}

TEST(NcclWorld, OneRanksCollectivesMoveAndSumExactly) {
  if (!have_nccl_device()) GTEST_SKIP() << "no CUDA device, or no NCCL in this build";
  std::unique_ptr<Communicator> world = nccl_world(0);
  EXPECT_EQ(world->backend(), "nccl");
  const Tensor host = draws(1001, 7);
  Tensor t = host.to(Device::cuda(0));
  world->all_reduce_sum(t);
  EXPECT_EQ(t.to(Device::cpu()).to_f64_vector(), host.to_f64_vector());
  Tensor gathered = Tensor::empty({1001}, DType::f32, Device::cuda(0));
  world->all_gather(t, gathered);
  EXPECT_EQ(gathered.to(Device::cpu()).to_f64_vector(), host.to_f64_vector());
  Tensor reduced = Tensor::empty({1001}, DType::f32, Device::cuda(0));
  world->reduce_sum(t, reduced, 0);
  EXPECT_EQ(reduced.to(Device::cpu()).to_f64_vector(), host.to_f64_vector());
  world->broadcast(t, 0);
  world->barrier();
}

TEST(NcclWorld, RefusesByNameWhereItCannotRun) {
  if (have_nccl_device()) GTEST_SKIP() << "NCCL can run here";
  EXPECT_THROW(nccl_world(0), Error);
}

}  // namespace
}  // namespace dew::parallel
