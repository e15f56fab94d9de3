// checkpoint(f): gradients bit-identical to the plain run, and a lower peak of live tensor bytes.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "check_derivatives.h"

namespace dew {
namespace {

struct Stack {
  std::vector<Tensor> w1, w2;
};

Stack make_stack() {
  Stack s;
  for (uint64_t b = 0; b < 4; ++b) {
    Tensor w1 = Tensor::empty({64, 256}, DType::f32), w2 = Tensor::empty({256, 64}, DType::f32);
    fill_normal(w1, {7, 10 + b, 0}, 0.0, 0.1);
    fill_normal(w2, {7, 20 + b, 0}, 0.0, 0.1);
    s.w1.push_back(w1.requires_grad_());
    s.w2.push_back(w2.requires_grad_());
  }
  return s;
}

// A residual MLP block, h + gelu(h w1) w2: two (512, 256) activations per block.
Tensor block(const Tensor& h, const Tensor& w1, const Tensor& w2) {
  return add(h, matmul(gelu(matmul(h, w1), true), w2));
}

struct StackRun {
  std::vector<std::vector<double>> grads;
  int64_t peak = 0;
};

StackRun run_stack(bool checkpointed) {
  Stack s = make_stack();
  Tensor x = Tensor::empty({512, 64}, DType::f32);
  fill_normal(x, {7, 1, 0}, 0.0, 1.0);
  reset_peak_memory();
  const int64_t before = cpu_memory_stats().bytes_in_use;
  Tensor h = x;
  for (size_t b = 0; b < 4; ++b) {
    const Tensor &w1 = s.w1[b], &w2 = s.w2[b];
    if (checkpointed)
      h = checkpoint([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{block(in[0], w1, w2)}; },
                     {h})[0];
    else
      h = block(h, w1, w2);
  }
  backward(mean(square(h)));
  StackRun r;
  r.peak = cpu_memory_stats().peak_bytes - before;
  for (size_t b = 0; b < 4; ++b) {
    r.grads.push_back(s.w1[b].grad().to_f64_vector());
    r.grads.push_back(s.w2[b].grad().to_f64_vector());
  }
  return r;
}

TEST(Checkpoint, SameGradientsBitForBitAndALowerPeak) {
  const StackRun plain = run_stack(false), checkpointed = run_stack(true);
  ASSERT_EQ(plain.grads.size(), checkpointed.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i)
    EXPECT_EQ(plain.grads[i], checkpointed.grads[i]) << "grad " << i;
  // Plain keeps each block's two (512, 256) activations until backward; checkpointed keeps one block's.
  EXPECT_LT(checkpointed.peak, plain.peak * 3 / 4) << "peak " << checkpointed.peak << " vs " << plain.peak;
}

TEST(Checkpoint, InputsGetGradientsToo) {
  const Tensor w = testing::draw({3}, 40);
  testing::check_derivatives(
      "checkpointed tanh(x * w)",
      [&](const std::vector<Tensor>& in) {
        return checkpoint(
            [&](const std::vector<Tensor>& p) { return std::vector<Tensor>{tanh(mul(p[0], w))}; },
            {in[0]})[0];
      },
      {testing::draw({3}, 41)});
}

}  // namespace
}  // namespace dew
