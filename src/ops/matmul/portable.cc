// matmul's portable implementation: any floating dtype, any strides, accumulating in f32 (f64 for f64).
// The gate's reference arm: straightforward loops, parallel over output rows.
#include "ops/kernel_types.h"
#include "ops/matmul/epilogue.h"
#include "ops/matmul/matmul.h"

namespace dew::ops {
namespace {

template <class T>
void matmul_portable(const MatmulArgs& args, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const MatmulOptions& o = args.options;
  MatmulGeometry g = matmul_geometry(args);
  size_t batch_rank = g.batch.size();
  auto a_off = batch_offsets(g.a, batch_rank), b_off = batch_offsets(g.b, batch_rank);
  const T* A = g.a.data<T>();
  const T* B = g.b.data<T>();
  const T* bias = o.bias.defined() ? o.bias.contiguous().data<T>() : nullptr;
  Tensor residual_c = o.residual.defined() ? o.residual.contiguous() : Tensor();
  const T* residual = residual_c.defined() ? residual_c.data<T>() : nullptr;
  int64_t sam = g.a.strides()[batch_rank], sak = g.a.strides()[batch_rank + 1];
  int64_t sbk = g.b.strides()[batch_rank], sbn = g.b.strides()[batch_rank + 1];
  T* Y = out.data<T>();
  int64_t rows = int64_t(a_off.size()) * g.M;
  parallel_for(rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, g.N * g.K)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   int64_t bi = r / g.M, m = r % g.M;
                   for (int64_t n = 0; n < g.N; ++n) {
                     Acc acc = 0;
                     for (int64_t k = 0; k < g.K; ++k)
                       acc += widen<Acc>(A[a_off[size_t(bi)] + m * sam + k * sak]) *
                              widen<Acc>(B[b_off[size_t(bi)] + k * sbk + n * sbn]);
                     int64_t i = r * g.N + n;
                     Acc y = matmul_epilogue<Acc>(o, acc, bias ? widen<Acc>(bias[n]) : Acc(0),
                                                  residual ? widen<Acc>(residual[i]) : Acc(0));
                     Y[i] = narrow<T>(y);
                   }
                 }
               });
}

}  // namespace

void add_matmul_portable(select::Registry<MatmulArgs>& r) {
  r.add({"portable", {select::on_cpu<MatmulArgs>()}, [](const MatmulArgs& args, std::vector<Tensor>& outs) {
           with_glu_after(args, outs[0], [](const MatmulArgs& a, Tensor& y) {
             visit_floating(a.dtype(), [&](auto zero) { matmul_portable<decltype(zero)>(a, y); });
           });
         }});
}

}  // namespace dew::ops
