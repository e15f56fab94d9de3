// Devices without a GPU: a CUDA tensor on a machine (or build) without one is an error that names the
// device and says what is missing; moving to the device a tensor is on is no copy.
#include <dew/error.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

namespace dew {
namespace {

TEST(Devices, ACudaTensorWithoutADeviceIsAnErrorNamingIt) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  try {
    Tensor::empty({4}, DType::f32, Device::cuda(0));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
    EXPECT_TRUE(m.find("no CUDA backend") != std::string::npos ||
                m.find("0 CUDA device") != std::string::npos)
        << m;
  }
  EXPECT_THROW(Tensor::full({4}, 1.0, DType::f32).to(Device::cuda(1)), Error);
}

TEST(Devices, ToTheTensorsOwnDeviceIsTheSameTensor) {
  const Tensor x = Tensor::full({3}, 2.0, DType::f32);
  EXPECT_TRUE(x.to(Device::cpu()).shares_storage_with(x));
}

}  // namespace
}  // namespace dew
