// The tape entries parameter sharding needs (autodiff.h): backward_hook runs when backward reaches it —
// after every use of its tensor downstream, before anything upstream — and passes gradients and
// tangents unchanged; deferred_cast stands for cast() on the tape, its bytes filled later.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dew {
namespace {

TEST(BackwardHook, RunsAfterEveryUseDownstreamAndBeforeAnythingUpstream) {
  Tensor w = Tensor::from_values({1, 2}, {2}, DType::f32);
  w.requires_grad_();
  std::vector<std::string> events;
  set_gradient_ready_hook(w, [&] { events.push_back("w whole"); });
  const Tensor upstream = mul(w, w);  // d/dw = 2w, reached only through the hook
  const Tensor x = backward_hook(upstream, [&] { events.push_back("hook"); });
  // x used twice downstream: the hook waits for both.
  backward(sum(add(mul(x, Tensor::full({2}, 3.0, DType::f32)), x)));
  EXPECT_EQ(events, (std::vector<std::string>{"hook", "w whole"}));
  EXPECT_EQ(w.grad().to_f64_vector(), (std::vector<double>{8, 16}));  // (3 + 1) * 2w
  set_gradient_ready_hook(w, {});
}

TEST(BackwardHook, IsXItselfWhereNothingIsTapedAndPassesTangents) {
  int calls = 0;
  const Tensor plain = Tensor::from_values({1, 2}, {2}, DType::f32);
  EXPECT_TRUE(backward_hook(plain, [&] { ++calls; }).shares_storage_with(plain));
  const JvpResult r = jvp(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{mul(backward_hook(in[0], [&] { ++calls; }), in[0])};
      },
      {plain}, {Tensor::from_values({1, 1}, {2}, DType::f32)});
  EXPECT_EQ(r.tangents[0].to_f64_vector(), (std::vector<double>{2, 4}));  // d(x * x) = 2x
  EXPECT_EQ(calls, 0);
}

TEST(DeferredCast, HasCastsGradientAndReleasedBytesUntilFilled) {
  Tensor w = Tensor::from_values({1.5, -2.25, 3}, {3}, DType::f32);
  w.requires_grad_();
  const Tensor deferred = deferred_cast(w, DType::bf16);
  EXPECT_EQ(deferred.dtype(), DType::bf16);
  EXPECT_EQ(deferred.shape(), w.shape());
  EXPECT_TRUE(deferred.storage_released());
  deferred.acquire_storage();  // as a gather does, with the owner's cast
  Tensor(deferred).copy_from(cast(w.detach(), DType::bf16));
  const Tensor cotangent = Tensor::from_values({0.1, 0.2, 0.3}, {3}, DType::bf16);
  backward({mul(deferred, deferred)}, {cotangent});
  const std::vector<double> via_deferred = w.grad().to_f64_vector();
  w.zero_grad();
  const Tensor cast_ = cast(w, DType::bf16);
  backward({mul(cast_, cast_)}, {cotangent});
  EXPECT_EQ(via_deferred, w.grad().to_f64_vector());
}

}  // namespace
}  // namespace dew
