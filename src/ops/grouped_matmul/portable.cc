// grouped_matmul's portable implementation: any floating dtype, accumulating in f32 (f64 for f64); the
// gate's reference arm. Parallel over output rows (grouped_matmul) or over (group, row of the output)
// (the weight gradient), so the work spreads whatever the group sizes.
#include <algorithm>

#include "ops/grouped_matmul/grouped_matmul.h"
#include "ops/kernel_types.h"

namespace dew::ops {
namespace {

template <class T>
void grouped_rows(const GroupedMatmulArgs& args, const std::vector<int64_t>& offsets, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const Tensor a_c = args.a.contiguous(), b_c = args.b.contiguous();
  const T *A = a_c.data<T>(), *B = b_c.data<T>();
  T* Y = out.data<T>();
  const int64_t T_rows = args.a.size(0), K = args.a.size(1), N = out.size(1);
  parallel_for(
      T_rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, N * K)), [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t g = std::upper_bound(offsets.begin(), offsets.end(), t) - offsets.begin() - 1;
          const T* w = B + g * K * N;
          for (int64_t n = 0; n < N; ++n) {
            Acc acc = 0;
            for (int64_t k = 0; k < K; ++k)
              acc += widen<Acc>(A[t * K + k]) * widen<Acc>(args.transpose_b ? w[n * K + k] : w[k * N + n]);
            Y[t * N + n] = narrow<T>(acc);
          }
        }
      });
}

template <class T>
void grouped_weight_grad(const GroupedMatmulArgs& args, const std::vector<int64_t>& offsets, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const Tensor a_c = args.a.contiguous(), b_c = args.b.contiguous();
  const T *A = a_c.data<T>(), *B = b_c.data<T>();
  T* Y = out.data<T>();
  const int64_t G = out.size(0), P = out.size(1), Q = out.size(2);
  parallel_for(G * P, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, Q)), [&](int64_t r0, int64_t r1) {
    std::vector<Acc> acc(static_cast<size_t>(Q));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t g = r / P, p = r % P;
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t t = offsets[size_t(g)]; t < offsets[size_t(g) + 1]; ++t)
        for (int64_t q = 0; q < Q; ++q) acc[size_t(q)] += widen<Acc>(A[t * P + p]) * widen<Acc>(B[t * Q + q]);
      for (int64_t q = 0; q < Q; ++q) Y[r * Q + q] = narrow<T>(acc[size_t(q)]);
    }
  });
}

}  // namespace

void add_grouped_matmul_portable(select::Registry<GroupedMatmulArgs>& r) {
  r.add({"portable",
         {select::on_cpu<GroupedMatmulArgs>()},
         [](const GroupedMatmulArgs& args, std::vector<Tensor>& outs) {
           const std::vector<int64_t> offsets = group_offsets(args);
           visit_floating(args.dtype(), [&](auto zero) {
             if (args.weight_grad)
               grouped_weight_grad<decltype(zero)>(args, offsets, outs[0]);
             else
               grouped_rows<decltype(zero)>(args, offsets, outs[0]);
           });
         }});
}

}  // namespace dew::ops
