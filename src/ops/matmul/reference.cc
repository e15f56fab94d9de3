// matmul's float64 reference: plain loops, the specification. Also the error magnitude of each output
// element: |scale| * sum_k |a_ik b_kj| + |bias_j|, carried through the activation, plus |residual|.
#include <cmath>

#include "ops/matmul/epilogue.h"
#include "ops/matmul/matmul.h"

namespace dew::ops {
namespace {

// With a gated unit: z = scale op(a) @ op(b) + bias as above, then y = act(z_gate) z_up over the two
// halves; magnitudes as the glu op's reference carries them (activation_lipschitz |g| + |act(g)|) times
// |u|, the products' own magnitudes carried through both factors.
std::vector<Truth> glu_reference(const MatmulArgs& args, const MatmulGeometry& g,
                                 const std::vector<double>& bias) {
  const MatmulOptions& o = args.options;
  const int64_t F = g.N / 2;
  Shape out_shape = Matmul::infer(args)[0].shape;
  Tensor out = Tensor::empty(out_shape, DType::f64), mag = Tensor::empty(out_shape, DType::f64);
  const size_t batch_rank = g.batch.size();
  const auto a_off = batch_offsets(g.a, batch_rank), b_off = batch_offsets(g.b, batch_rank);
  const double* A = g.a.data<double>();
  const double* B = g.b.data<double>();
  const int64_t sam = g.a.strides()[batch_rank], sak = g.a.strides()[batch_rank + 1];
  const int64_t sbk = g.b.strides()[batch_rank], sbn = g.b.strides()[batch_rank + 1];
  double* Y = out.data<double>();
  double* Mag = mag.data<double>();
  const double lip = activation_lipschitz(o.activation);
  for (size_t bi = 0; bi < a_off.size(); ++bi) {  // batch
    for (int64_t m = 0; m < g.M; ++m) {           // rows of op(a)
      double z[2], pre[2];
      for (int64_t n = 0; n < F; ++n) {  // the output's columns: gate column n, up column F + n
        for (int h = 0; h < 2; ++h) {
          const int64_t c = n + h * F;
          double acc = 0, abs_acc = 0;
          for (int64_t k = 0; k < g.K; ++k) {
            const double p = A[a_off[bi] + m * sam + k * sak] * B[b_off[bi] + k * sbk + c * sbn];
            acc += p;
            abs_acc += std::fabs(p);
          }
          z[h] = o.scale * acc + bias[size_t(c)];
          pre[h] = std::fabs(o.scale) * abs_acc + std::fabs(bias[size_t(c)]);
        }
        const double f = apply_activation(o.activation, z[0]);
        const size_t i = (bi * size_t(g.M) + size_t(m)) * size_t(F) + size_t(n);
        Y[i] = f * z[1];
        Mag[i] = (lip * (std::fabs(z[0]) + pre[0]) + std::fabs(f)) * std::fabs(z[1]) + std::fabs(f) * pre[1];
      }
    }
  }
  return {{out, mag, g.K + 3 + 12}};
}

}  // namespace

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
  if (o.glu) return glu_reference(args, g, bias);
  for (size_t bi = 0; bi < a_off.size(); ++bi) {  // batch
    for (int64_t m = 0; m < g.M; ++m) {           // rows of op(a)
      for (int64_t n = 0; n < g.N; ++n) {         // cols of op(b)
        double acc = 0, abs_acc = 0;
        for (int64_t k = 0; k < g.K; ++k) {
          double p = A[a_off[bi] + m * sam + k * sak] * B[b_off[bi] + k * sbk + n * sbn];
          acc += p;
          abs_acc += std::fabs(p);
        }
        size_t i = (bi * size_t(g.M) + size_t(m)) * size_t(g.N) + size_t(n);
        double y = matmul_epilogue(o, acc, bias[size_t(n)], residual[i]);
        Y[i] = y;
        double pre = std::fabs(o.scale) * abs_acc + std::fabs(bias[size_t(n)]);
        Mag[i] = lip * pre + std::fabs(y - residual[i]) + std::fabs(residual[i]);
      }
    }
  }
  return {{out, mag, g.K + 3 + activation_steps(o.activation)}};
}

}  // namespace dew::ops
