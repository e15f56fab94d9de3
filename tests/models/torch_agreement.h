// Test helper: the agreement with an independent PyTorch implementation that the model tests hold
// (tests/models/torch_reference_test.cc's opening comment says why it has no tolerance of its own).
#pragma once

#include <dew/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace dew::testing {

inline double rms_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_f64_vector(), y = b.to_f64_vector();
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += (x[i] - y[i]) * (x[i] - y[i]);
  return std::sqrt(sum / double(x.size()));
}

// PyTorch and Dew in f64 agree more closely than either f32 result agrees with Dew's f64.
inline void expect_f64_agreement(const std::string& what, const Tensor& dew_f32, const Tensor& torch_f32,
                                 const Tensor& dew_f64, const Tensor& torch_f64) {
  ASSERT_EQ(dew_f64.shape(), torch_f64.shape()) << what;
  const double f32_error = std::min(rms_difference(dew_f32, dew_f64), rms_difference(torch_f32, dew_f64));
  EXPECT_GT(f32_error, 0.0) << what;
  EXPECT_LT(rms_difference(torch_f64, dew_f64), f32_error)
      << what << ": Dew and PyTorch in f64 differ by " << rms_difference(torch_f64, dew_f64)
      << ", more than f32 rounding (" << f32_error << ")";
}

}  // namespace dew::testing
