// grouped_matmul's float64 reference: plain loops, the specification. Magnitude of each output element:
// the sum of its products' absolute values.
#include "ops/grouped_matmul/grouped_matmul.h"

#include <cmath>

namespace dew::ops {

std::vector<Truth> GroupedMatmul::reference(const Args& args) {
  const std::vector<int64_t> offsets = group_offsets(args);
  const int64_t G = int64_t(offsets.size()) - 1;
  const Shape shape = infer(args)[0].shape;
  Tensor out = Tensor::zeros(shape, DType::f64), mag = Tensor::zeros(shape, DType::f64);
  const std::vector<double> a = args.a.to_f64_vector(), b = args.b.to_f64_vector();
  double *y = out.data<double>(), *m = mag.data<double>();
  if (args.weight_grad) {  // out[g] (P,Q) = sum over g's rows t of a[t]^T b[t]
    const int64_t P = args.a.size(1), Q = args.b.size(1);
    for (int64_t g = 0; g < G; ++g)
      for (int64_t t = offsets[size_t(g)]; t < offsets[size_t(g) + 1]; ++t)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q) {
            const double product = a[size_t(t * P + p)] * b[size_t(t * Q + q)];
            y[(g * P + p) * Q + q] += product;
            m[(g * P + p) * Q + q] += std::fabs(product);
          }
    return {{out, mag, args.a.size(0) + 1}};
  }
  const int64_t K = args.a.size(1), N = shape[1];
  for (int64_t g = 0; g < G; ++g)
    for (int64_t t = offsets[size_t(g)]; t < offsets[size_t(g) + 1]; ++t)  // group g's rows
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          // op(b[g])[k][n]: b (G,K,N), or (G,N,K) transposed
          const double w = args.transpose_b ? b[size_t((g * N + n) * K + k)] : b[size_t((g * K + k) * N + n)];
          const double product = a[size_t(t * K + k)] * w;
          y[t * N + n] += product;
          m[t * N + n] += std::fabs(product);
        }
  return {{out, mag, K + 1}};
}

}  // namespace dew::ops
