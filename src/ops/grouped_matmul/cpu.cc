// grouped_matmul per CPU tier (cpu.<tier>.dot_tiles; NOTE [instruction-set regions]) for experts'
// nn.Linear weights (G,N,K): one pool of work for every group's column tiles, so a few busy experts and
// many idle ones keep both cores as busy as one large product would, with no serial loop over experts.
// Each group's rows run through matmul's dot tiles (dot_tiles.h).
#include <dew/runtime.h>

#include "ops/cpu_tier.h"
#include "ops/grouped_matmul/grouped_matmul.h"
#include "ops/kernel_types.h"
#include "ops/matmul/dot_tiles.h"
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
        grouped_dot_tiles<decltype(t)>(a, outs[0]);
      },
      {select::requires_that<GroupedMatmulArgs>(
          "grouped_matmul with experts' nn.Linear weights (G,N,K), transpose_b",
          [](const GroupedMatmulArgs& a) { return !a.weight_grad && a.transpose_b; },
          [](const GroupedMatmulArgs& a) {
            return a.weight_grad ? std::string("the weight gradient")
                                 : std::string("b is (G,K,N), not transposed");
          })},
      "dot_tiles");
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
