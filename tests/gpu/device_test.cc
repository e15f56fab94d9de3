// Tensors on cuda:0: copies both ways for every dtype, fills, strided copies, the allocator's
// counters and its out-of-memory error, refusals across devices, and the route an op takes there
// (attention's two implementations, each giving the same bits at every launch).
// Each test is reported skipped on a machine without a CUDA device.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "cuda/runtime.h"
#include "routes.h"
#include "select/overrides.h"

namespace dew {
namespace {

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
  const Device gpu = Device::cuda(0);
};

Tensor random_tensor(const Shape& shape, DType t, uint64_t seed) {
  Tensor x = Tensor::empty(shape, t);
  if (is_floating(t))
    fill_normal(x, {seed, 1, 0}, 0, 3);
  else
    fill_randint(x, {seed, 1, 0}, t == DType::boolean ? 0 : -100,
                 t == DType::u8 || t == DType::boolean ? 2 : 100);
  return x;
}

TEST_F(CudaDevice, CopiesBothWaysKeepEveryDtypeExactly) {
  for (DType t :
       {DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64, DType::i32, DType::u8, DType::boolean}) {
    const Tensor x = random_tensor({37, 129}, t, 7);
    const Tensor on_gpu = x.to(gpu);
    EXPECT_EQ(on_gpu.device(), gpu);
    EXPECT_EQ(on_gpu.to(Device::cpu()).to_f64_vector(), x.to_f64_vector()) << dtype_name(t);
  }
}

TEST_F(CudaDevice, ALargeCopyCrossesTheStagingChunksIntact) {
  const Tensor x = random_tensor({int64_t(3) << 22}, DType::f32, 11);  // 48 MiB: two staging chunks
  EXPECT_EQ(x.to(gpu).to(Device::cpu()).to_f64_vector(), x.to_f64_vector());
}

TEST_F(CudaDevice, FillWritesEveryElement) {
  const std::vector<double> v = Tensor::full({1000, 3}, 2.5, DType::bf16, gpu).to_f64_vector();
  EXPECT_EQ(v, std::vector<double>(3000, 2.5));
}

TEST_F(CudaDevice, ContiguousCopiesOfStridedViewsMatchTheHost) {
  const Tensor x = random_tensor({7, 5, 3, 4}, DType::f32, 3);
  const Tensor host = x.permute({2, 0, 3, 1}).slice(1, 1, 7, 2).contiguous();
  const Tensor device = x.to(gpu).permute({2, 0, 3, 1}).slice(1, 1, 7, 2).contiguous();
  EXPECT_TRUE(device.is_contiguous());
  EXPECT_EQ(device.to_f64_vector(), host.to_f64_vector());
}

TEST_F(CudaDevice, TheAllocatorCountsBytesInUseAndThePeak) {
  const MemoryStats before = cuda_memory_stats(0);
  {
    Tensor t = Tensor::empty({int64_t(1) << 20}, DType::f32, gpu);
    const MemoryStats during = cuda_memory_stats(0);
    EXPECT_GE(during.bytes_in_use - before.bytes_in_use, int64_t(4) << 20);
    EXPECT_GE(during.peak_bytes, during.bytes_in_use);
  }
  EXPECT_EQ(cuda_memory_stats(0).bytes_in_use, before.bytes_in_use);
  EXPECT_GE(cuda_memory_stats(0).bytes_cached, int64_t(4) << 20);  // kept for reuse
}

TEST_F(CudaDevice, MoreThanTheDeviceHoldsIsOutOfMemoryNamingTheDevice) {
  const int64_t too_many = 2 * cuda::properties(0).memory_bytes / 4;
  try {
    Tensor::empty({too_many}, DType::f32, gpu);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Tensor::full({4}, 1.0, DType::f32, gpu).to_f64_vector(),
            std::vector<double>(4, 1.0));  // usable after
}

TEST_F(CudaDevice, AnOpGivenTwoDevicesRefusesNamingBoth) {
  const Tensor a = random_tensor({4}, DType::f32, 1), b = a.to(gpu);
  try {
    add(a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cpu"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
  }
}

TEST_F(CudaDevice, ElementwiseOpsRunTheCudaKernels) {
  const Tensor x = random_tensor({64, 33}, DType::f32, 5).to(gpu);
  EXPECT_ROUTE("exp", "cuda.elementwise", exp(x));
  EXPECT_ROUTE("mul", "cuda.elementwise", mul(x, x));
  EXPECT_EQ(exp(x).device(), gpu);
}

// The SIMT kernels stay attention's default until the tensor-core ones have been timed on a GPU
// (docs/architecture.md); pinned, those run, and neither adds anything atomically: two launches, the same
// bits.
TEST_F(CudaDevice, AttentionRunsEitherKernelFamilyAndRepeatsItsBits) {
  const Tensor q = random_tensor({2, 70, 4, 128}, DType::bf16, 6).to(gpu),
               k = random_tensor({2, 100, 2, 128}, DType::bf16, 7).to(gpu),
               v = random_tensor({2, 100, 2, 128}, DType::bf16, 8).to(gpu),
               dout = random_tensor({2, 70, 4, 128}, DType::bf16, 9).to(gpu);
  AttentionOptions o;
  o.causal = true;
  EXPECT_ROUTE("attention", "cuda.flash_simt", attention(q, k, v, o));
  for (const char* impl : {"cuda.flash_simt", "cuda.flash_mma"}) {
    select::set_impl_overrides(std::string("attention:") + impl + ",attention_backward:" + impl);
    const AttentionResult a = attention(q, k, v, o), b = attention(q, k, v, o);
    EXPECT_ROUTE("attention_backward", impl, attention_backward(dout, q, k, v, a, o));
    const AttentionGradients ga = attention_backward(dout, q, k, v, a, o),
                             gb = attention_backward(dout, q, k, v, b, o);
    select::set_impl_overrides("");
    EXPECT_EQ(a.out.to_f64_vector(), b.out.to_f64_vector()) << impl;
    EXPECT_EQ(a.lse.to_f64_vector(), b.lse.to_f64_vector()) << impl;
    for (const auto& [x, y] : {std::pair{ga.dq, gb.dq}, std::pair{ga.dk, gb.dk}, std::pair{ga.dv, gb.dv}})
      EXPECT_EQ(x.to_f64_vector(), y.to_f64_vector()) << impl;
  }
}

}  // namespace
}  // namespace dew
