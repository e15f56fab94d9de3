// grouped_matmul and its weight gradient per CPU tier (cpu.<tier>.tiles; NOTE [instruction-set
// regions]): one pool of work items over every group's columns, so a few busy experts and many idle ones
// keep both cores as busy as one large product would, with no serial loop over experts. Experts'
// nn.Linear weights (G,N,K) run through matmul's dot tiles (dot_tiles.h); weights (G,K,N) and the
// weight gradient, whose operands lie contiguous along the output's columns, through outer-product
// tiles (a broadcast times a vector of columns, accumulators in registers).
#include <dew/runtime.h>

#include "ops/cpu_tier.h"
#include "ops/grouped_matmul/grouped_matmul.h"
#include "ops/kernel_types.h"
#include "ops/matmul/dot_tiles.h"
#include "ops/matmul/outer_tiles.h"
#include "ops/scratch.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_HAS_FLOAT_VEC
template <class T>
void grouped_dot_tiles(const GroupedMatmulArgs& args, Tensor& out) {
  const std::vector<int64_t> offsets = group_offsets(args);
  const int64_t T_rows = args.a.size(0), K = args.a.size(1), N = args.b.size(1);
  const Tensor a = args.a.contiguous(), b = args.b.contiguous();
  Scratch<float> x_values = widening_buffer<float, T>(T_rows * K);
  const float* x = row_as<float>(a.data<T>(), T_rows * K, x_values.data());
  const T* w = b.data<T>();
  T* y = out.data<T>();
  // Work items: runs of column tiles of one group, of about equal work whatever the group's rows (the
  // pool splits items by count): 64 KiB of weights for a group of 4 rows, fewer tiles for more rows.
  const int64_t tiles = (N + kTileCols - 1) / kTileCols;
  const int64_t passes =
      std::max<int64_t>(1, (64 << 10) / std::max<int64_t>(1, kTileCols * K * int64_t(sizeof(T))));
  struct Item {
    int64_t group, t0, t1;
  };
  std::vector<Item> items;
  for (int64_t g = 0; g + 1 < int64_t(offsets.size()); ++g) {
    const int64_t rows = offsets[size_t(g) + 1] - offsets[size_t(g)];
    if (rows == 0) continue;
    const int64_t span = std::max<int64_t>(1, passes * kTileRows / (rows + kTileRows - 1));
    for (int64_t t0 = 0; t0 < tiles; t0 += span) items.push_back({g, t0, std::min(tiles, t0 + span)});
  }
  parallel_for(int64_t(items.size()), 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const Item& it = items[size_t(i)];
      const int64_t first = offsets[size_t(it.group)], rows = offsets[size_t(it.group) + 1] - first;
      dot_tile_columns(x + first * K, rows, w + it.group * N * K, K, N, it.t0, it.t1,
                       [&](int64_t m, int64_t n, float value) { y[(first + m) * N + n] = narrow<T>(value); });
    }
  });
}

// f(g, q0) for every group g and block of kOuterColumns columns (from q0) of a Q-wide output, as one pool
// of items: a block's values of the right operand (the group's steps by kOuterColumns) stay in L1/L2
// while every row of the output passes over them, where items of a few rows each would read them again.
template <class F>
void over_group_column_blocks(int64_t G, int64_t Q, F&& f) {
  const int64_t blocks = (Q + kOuterColumns - 1) / kOuterColumns;
  parallel_for(G * blocks, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) f(i / blocks, (i % blocks) * kOuterColumns);
  });
}

// grouped_matmul with weights (G,K,N): out[g's rows] = a_g @ b[g], outer products over K with a's rows
// as the tile's rows.
template <class T>
void grouped_outer(const GroupedMatmulArgs& args, Tensor& out) {
  const std::vector<int64_t> offsets = group_offsets(args);
  const int64_t K = args.a.size(1), N = out.size(1), G = args.b.size(0);
  const Tensor a = args.a.contiguous(), b = args.b.contiguous();
  const T *A = a.data<T>(), *B = b.data<T>();
  T* y = out.data<T>();
  over_group_column_blocks(G, N, [&](int64_t g, int64_t n0) {
    const int64_t first = offsets[size_t(g)], rows = offsets[size_t(g) + 1] - first;
    T* yg = y + first * N;
    if (rows > 0)
      outer_block(A + first * K, 1, K, rows, B + g * K * N, N, K, n0,
                  [&](int64_t m, int64_t n, float value) { yg[m * N + n] = narrow<T>(value); });
  });
}

// The weight gradient, out[g] (P,Q) = a_g^T b_g: outer products over the group's rows (step t a row of
// a, p a column); an empty group's blocks write its zeros.
template <class T>
void grouped_weight_grad_tiles(const GroupedMatmulArgs& args, Tensor& out) {
  const std::vector<int64_t> offsets = group_offsets(args);
  const int64_t P = args.a.size(1), Q = args.b.size(1), G = out.size(0);
  const Tensor a = args.a.contiguous(), b = args.b.contiguous();
  const T *A = a.data<T>(), *B = b.data<T>();
  T* y = out.data<T>();
  over_group_column_blocks(G, Q, [&](int64_t g, int64_t q0) {
    const int64_t first = offsets[size_t(g)], rows = offsets[size_t(g) + 1] - first;
    T* yg = y + g * P * Q;
    outer_block(A + first * P, P, 1, P, B + first * Q, Q, rows, q0,
                [&](int64_t p, int64_t q, float value) { yg[p * Q + q] = narrow<T>(value); });
  });
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

void add_grouped_matmul_cpu(select::Registry<GroupedMatmulArgs>& r) {
#if DEW_HAS_FLOAT_VEC
  add_cpu_f32_bf16<GroupedMatmulArgs>(
      r,
      [](auto t, const GroupedMatmulArgs& a, std::vector<Tensor>& outs) {
        if (a.weight_grad)
          grouped_weight_grad_tiles<decltype(t)>(a, outs[0]);
        else if (a.transpose_b)
          grouped_dot_tiles<decltype(t)>(a, outs[0]);
        else
          grouped_outer<decltype(t)>(a, outs[0]);
      },
      {}, "tiles");
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
