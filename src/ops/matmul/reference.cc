// matmul's float64 reference: plain loops, the specification. Also the error magnitude of each output
// element: |scale| * sum_k |a_ik b_kj| + |bias_j|, carried through the activation, plus |residual|; with
// a gated unit, through both of its factors.
#include <cmath>

#include "ops/activation.h"
#include "ops/matmul/matmul.h"

namespace dew::ops {

std::vector<Truth> Matmul::reference(const Args& args) {
  const MatmulOptions& o = args.options;
  MatmulGeometry g = matmul_geometry(args);
  Shape out_shape = infer(args)[0].shape;
  Tensor out = Tensor::empty(out_shape, DType::f64), mag = Tensor::empty(out_shape, DType::f64);
  std::vector<double> bias =
      o.bias.defined() ? o.bias.to_f64_vector() : std::vector<double>(size_t(g.N), 0.0);
  std::vector<double> residual =
      o.residual.defined() ? o.residual.to_f64_vector() : std::vector<double>(size_t(out.numel()), 0.0);
  size_t batch_rank = g.batch.size();
  auto a_off = batch_offsets(g.a, batch_rank), b_off = batch_offsets(g.b, batch_rank);
  const double* A = g.a.data<double>();
  const double* B = g.b.data<double>();
  int64_t sam = g.a.strides()[batch_rank], sak = g.a.strides()[batch_rank + 1];
  int64_t sbk = g.b.strides()[batch_rank], sbn = g.b.strides()[batch_rank + 1];
  double* Y = out.data<double>();
  double* Mag = mag.data<double>();
  double lip = activation_lipschitz(o.activation);
  // z = scale (op(a) @ op(b))[m, n] + bias[n], and its terms' magnitude |scale| sum |a b| + |bias|.
  const auto pre_activation = [&](size_t bi, int64_t m, int64_t n, double& magnitude) {
    double acc = 0, abs_acc = 0;
    for (int64_t k = 0; k < g.K; ++k) {
      double p = A[a_off[bi] + m * sam + k * sak] * B[b_off[bi] + k * sbk + n * sbn];
      acc += p;
      abs_acc += std::fabs(p);
    }
    magnitude = std::fabs(o.scale) * abs_acc + std::fabs(bias[size_t(n)]);
    return o.scale * acc + bias[size_t(n)];
  };
  const int64_t N = out_shape.back();  // with a gated unit, g.N / 2: gate column n, up column N + n
  for (size_t bi = 0; bi < a_off.size(); ++bi) {  // batch
    for (int64_t m = 0; m < g.M; ++m) {           // rows of op(a)
      for (int64_t n = 0; n < N; ++n) {           // cols of the output
        size_t i = (bi * size_t(g.M) + size_t(m)) * size_t(N) + size_t(n);
        double pre = 0;
        const double z = pre_activation(bi, m, n, pre);
        if (o.glu) {  // act(z) u, its magnitude as the glu op's reference carries it, times |u|
          double up_pre = 0;
          const double u = pre_activation(bi, m, N + n, up_pre);
          const double f = apply_activation(o.activation, z);
          Y[i] = f * u;
          Mag[i] = (lip * (std::fabs(z) + pre) + std::fabs(f)) * std::fabs(u) + std::fabs(f) * up_pre;
          continue;
        }
        double y = apply_activation(o.activation, z) + residual[i];
        Y[i] = y;
        Mag[i] = lip * pre + std::fabs(y - residual[i]) + std::fabs(residual[i]);
      }
    }
  }
  return {{out, mag, g.K + 3 + (o.glu ? 12 : activation_steps(o.activation))}};
}

}  // namespace dew::ops
