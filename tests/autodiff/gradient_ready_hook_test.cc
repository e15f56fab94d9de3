// set_gradient_ready_hook (autodiff.h): once per backward, when the leaf's gradient is whole — after
// every use of the leaf has sent its part — and never for a leaf the graph does not reach.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dew {
namespace {

TEST(GradientReadyHook, RunsOnceWhenEveryUseOfTheLeafHasSentItsPart) {
  Tensor w = Tensor::from_values({1, 2}, {2}, DType::f32), unused = Tensor::zeros({2}, DType::f32);
  w.requires_grad_(), unused.requires_grad_();
  std::vector<std::vector<double>> seen;  // w's gradient at each call
  int unused_calls = 0;
  set_gradient_ready_hook(w, [&] { seen.push_back(w.grad().to_f64_vector()); });
  set_gradient_ready_hook(unused, [&] { ++unused_calls; });
  // w used three times, at both ends of the graph: d/dw sum(w*w + 3w) = 2w + 3.
  const Tensor y = add(mul(w, w), mul(w, Tensor::full({2}, 3.0, DType::f32)));
  backward(sum(y));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{5, 7}));
  EXPECT_EQ(unused_calls, 0);
  // A second backward: one more call, with the accumulated gradient.
  backward(sum(mul(w, Tensor::full({2}, 1.0, DType::f32))));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], (std::vector<double>{6, 8}));
  set_gradient_ready_hook(w, {});
  backward(sum(w));
  EXPECT_EQ(seen.size(), 2u) << "removed";
}

TEST(GradientReadyHook, EachOwnerHasItsOwnHookRunInTheOrderSet) {
  Tensor w = Tensor::from_values({1, 2}, {2}, DType::f32);
  w.requires_grad_();
  std::vector<std::string> calls;
  int first = 0, second = 0;
  set_gradient_ready_hook(
      w, [&] { calls.push_back("second"); }, &second);
  set_gradient_ready_hook(
      w, [&] { calls.push_back("first"); }, &first);
  set_gradient_ready_hook(
      w, [&] { calls.push_back("second again"); }, &second);  // replaces, keeps its place
  backward(sum(w));
  EXPECT_EQ(calls, (std::vector<std::string>{"second again", "first"}));
  set_gradient_ready_hook(w, {}, &second);
  backward(sum(w));
  EXPECT_EQ(calls, (std::vector<std::string>{"second again", "first", "first"}))
      << "only its owner's removed";
}

TEST(GradientReadyHook, RefusesATensorThatIsNotALeaf) {
  Tensor w = Tensor::zeros({2}, DType::f32);
  w.requires_grad_();
  Tensor computed = mul(w, w);
  EXPECT_THROW(set_gradient_ready_hook(computed, [] {}), Error);
}

}  // namespace
}  // namespace dew
