// AdamW written with ops (the update parameters on a GPU take) against the host's fused loop: the same
// bits, step after step, with weight decay and bias correction; and an update rule that runs on the
// host only refuses a parameter elsewhere by name (checked where a CUDA device exists).
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include "train/updates.h"

namespace dew::train {
namespace {

Tensor draw(const Shape& shape, uint64_t stream, double scale) {
  Tensor t = Tensor::empty(shape, DType::f32);
  fill_normal(t, {11, stream, 0}, 0.0, scale);
  return t;
}

TEST(AdamWByOps, GivesTheHostLoopsBitsStepAfterStep) {
  const int64_t n = 4099;  // not a multiple of any vector width
  const AdamWOptions o;
  Tensor p_loop = draw({n}, 1, 1.0), m_loop = Tensor::zeros({n}, DType::f32),
         v_loop = Tensor::zeros({n}, DType::f32);
  Tensor p_ops = p_loop.clone(), m_ops = m_loop.clone(), v_ops = v_loop.clone();
  for (int64_t step = 1; step <= 5; ++step) {
    const Tensor g = draw({n}, 10 + uint64_t(step), step == 3 ? 1e-6 : 0.5);  // one step of tiny gradients
    const double lr = 1e-3 * double(step), decay = 0.1;
    detail::adamw_update(p_loop.data<float>(), g.data<float>(), m_loop.data<float>(), v_loop.data<float>(), n,
                         o, step, lr, decay);
    detail::adamw_update_by_ops(p_ops, g, m_ops, v_ops, o, step, lr, decay);
    EXPECT_EQ(p_ops.to_f64_vector(), p_loop.to_f64_vector()) << "step " << step;
    EXPECT_EQ(m_ops.to_f64_vector(), m_loop.to_f64_vector()) << "step " << step;
    EXPECT_EQ(v_ops.to_f64_vector(), v_loop.to_f64_vector()) << "step " << step;
  }
}

TEST(AdamWByOps, HostOnlyRulesRefuseAParameterOnAGpuByName) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  Tensor w = Tensor::full({4}, 1.0, DType::f32, Device::cuda(0));
  w.requires_grad_();
  backward(sum(mul(w, w)));
  std::vector<Param> params{{"w", w, 1.0, 0.0}};
  auto sgd = make_sgd(params);
  try {
    sgd->step(0.1);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter w is on cuda:0"), std::string::npos) << e.what();
  }
  auto adamw = make_adamw(params);
  adamw->step(0.1);  // runs there
  EXPECT_EQ(w.device(), Device::cuda(0));
}

}  // namespace
}  // namespace dew::train
