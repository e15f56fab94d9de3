// Differentiation in a few lines: a least-squares fit by gradient descent (reverse mode), a
// directional derivative (forward mode), and a Hessian-vector product (the jvp of a gradient).
// Run: build/examples/gradients
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cstdio>

using namespace dew;

int main() {
  // Data: y = x w_true + 0.5, 64 points, 3 features.
  Tensor x = Tensor::empty({64, 3}, DType::f32);
  fill_normal(x, {7, 0, 0}, 0.0, 1.0);
  const Tensor w_true = Tensor::from_values({2.0, -1.0, 0.5}, {3, 1}, DType::f32);
  const Tensor y = add(matmul(x, w_true), Tensor::full({}, 0.5, DType::f32));

  Tensor w = Tensor::zeros({3, 1}, DType::f32).requires_grad_();
  Tensor b = Tensor::zeros({1}, DType::f32).requires_grad_();
  const Tensor lr = Tensor::full({}, 0.1, DType::f32);
  for (int step = 0; step <= 100; ++step) {
    MatmulOptions o;
    o.bias = b;
    const Tensor loss = mean(square(sub(matmul(x, w, o), y)));
    backward(loss);
    if (step % 25 == 0) std::printf("step %3d  loss %.6f\n", step, loss.to_f64_vector()[0]);
    NoGrad no_grad;  // the update is not part of the model
    w = sub(w, mul(lr, w.grad())).detach().requires_grad_();
    b = sub(b, mul(lr, b.grad())).detach().requires_grad_();
  }
  const std::vector<double> fitted = w.to_f64_vector();
  std::printf("w = [%.4f, %.4f, %.4f] (true [2, -1, 0.5]), b = %.4f (true 0.5)\n", fitted[0], fitted[1],
              fitted[2], b.to_f64_vector()[0]);

  // Forward mode: d/dt tanh(x0 + t v) at t = 0.
  const Tensor x0 = Tensor::from_values({0.1, 0.2, 0.3}, {3}, DType::f64);
  const Tensor v = Tensor::from_values({1.0, 0.0, -1.0}, {3}, DType::f64);
  const JvpResult r = jvp([](const std::vector<Tensor>& p) { return std::vector<Tensor>{tanh(p[0])}; }, {x0}, {v});
  const std::vector<double> t = r.tangents[0].to_f64_vector();
  std::printf("jvp of tanh: [%.6f, %.6f, %.6f]\n", t[0], t[1], t[2]);

  // Forward over reverse: H v for f(x) = sum(x^3) is 6 x v.
  Tensor leaf = x0.detach().requires_grad_();
  const JvpResult hvp = jvp(
      [&](const std::vector<Tensor>& p) {
        backward(sum(mul(square(p[0]), p[0])));
        return std::vector<Tensor>{leaf.grad()};
      },
      {leaf}, {v});
  const std::vector<double> h = hvp.tangents[0].to_f64_vector();
  std::printf("Hessian-vector product: [%.6f, %.6f, %.6f] (6 x v = [0.6, 0, -1.8])\n", h[0], h[1], h[2]);
  return 0;
}
