// grouped_matmul in bf16 through AVX512-BF16's vdpbf16ps (cpu.avx512.bf16_pairs), weights (G,N,K) or
// (G,K,N): each step multiplies a pair of a row's values, broadcast, by the same pair of 16 columns'
// weights, 32 products an instruction, twice the rate of f32 FMAs and no widening. A work item packs a
// block of its group's weights into pairs interleaved by column (the layout the instruction reads) and
// runs its rows of the group against it, accumulators in registers.
// Items are cut and shared out by work, so a few busy experts and many idle ones keep every core busy.
// Products of values below 2^-126 count as zero, as in matmul's gemv_dpbf16.
#include <dew/runtime.h>
#include <immintrin.h>

#include <algorithm>

#include "ops/cpu_tier.h"
#include "ops/grouped_matmul/grouped_matmul.h"
#include "ops/kernel_types.h"
#include "ops/scratch.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_ISA_CONCAT(DEW_LANES_, DEW_KERNEL_NS) == 16
constexpr int64_t kPairVectors = 3;  // 16 columns each: 48 columns a block
constexpr int64_t kBlockCols = 16 * kPairVectors;
constexpr int64_t kPairRows = 8;                 // 8 x 3 accumulators of 16 lanes
constexpr int64_t kRowsPerItem = 8 * kPairRows;  // a group's rows cut so no item outweighs many

// packed[kp * kBlockCols + j] = the weights of column n0 + j at steps 2 kp and 2 kp + 1 as one 32-bit
// word (the lower half first), zero past N. An expert's weights as nn.Linear stores them (N,K) hold
// that word already; stored (K,N) (gpt-oss's experts, and every input gradient), two rows interleave.
void pack_pairs(const bf16* w, bool rows_are_columns, int64_t N, int64_t K, int64_t n0, uint32_t* packed) {
  const int64_t half_K = K / 2, cols = std::min(kBlockCols, N - n0);
  if (rows_are_columns) {
    const auto* words = reinterpret_cast<const uint32_t*>(w);
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t kp = 0; kp < half_K; ++kp) packed[kp * kBlockCols + j] = words[(n0 + j) * half_K + kp];
  } else {
    const auto* bits = reinterpret_cast<const uint16_t*>(w);
    for (int64_t kp = 0; kp < half_K; ++kp)
      for (int64_t j = 0; j < cols; ++j)
        packed[kp * kBlockCols + j] =
            uint32_t(bits[2 * kp * N + n0 + j]) | uint32_t(bits[(2 * kp + 1) * N + n0 + j]) << 16;
  }
  for (int64_t kp = 0; kp < half_K; ++kp)
    for (int64_t j = cols; j < kBlockCols; ++j) packed[kp * kBlockCols + j] = 0;
}

// R rows (x, rows half_K words apart) against the packed block; y's columns n0.. (cols of them valid).
template <int R>
void pair_tile(const uint32_t* x, int64_t half_K, const uint32_t* packed, bf16* y, int64_t N, int64_t n0,
               int64_t cols) {
  __m512 acc[R][kPairVectors];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kPairVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t kp = 0; kp < half_K; ++kp) {
    const uint32_t* p = packed + kp * kBlockCols;
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(p), w1 = (__m512bh)_mm512_loadu_si512(p + 16),
                   w2 = (__m512bh)_mm512_loadu_si512(p + 32);
    for (int r = 0; r < R; ++r) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(int(x[r * half_K + kp]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, w1);
      acc[r][2] = _mm512_dpbf16_ps(acc[r][2], a, w2);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kPairVectors; ++v) {
      const int64_t c0 = 16 * v;
      if (c0 >= cols) break;
      const __mmask16 keep = cols - c0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (cols - c0)) - 1);
      _mm256_mask_storeu_epi16(y + r * N + n0 + c0, keep, (__m256i)_mm512_cvtneps_pbh(acc[r][v]));
    }
}

void pair_rows(const uint32_t* x, int64_t rows, int64_t half_K, const uint32_t* packed, bf16* y, int64_t N,
               int64_t n0) {
  const int64_t cols = std::min(kBlockCols, N - n0);
  int64_t m = 0;
  for (; m + kPairRows <= rows; m += kPairRows)
    pair_tile<kPairRows>(x + m * half_K, half_K, packed, y + m * N, N, n0, cols);
  const int64_t rest = rows - m;
  const uint32_t* xr = x + m * half_K;
  bf16* yr = y + m * N;
  switch (rest) {  // the group's last rows, as a smaller tile
    case 7:
      return pair_tile<7>(xr, half_K, packed, yr, N, n0, cols);
    case 6:
      return pair_tile<6>(xr, half_K, packed, yr, N, n0, cols);
    case 5:
      return pair_tile<5>(xr, half_K, packed, yr, N, n0, cols);
    case 4:
      return pair_tile<4>(xr, half_K, packed, yr, N, n0, cols);
    case 3:
      return pair_tile<3>(xr, half_K, packed, yr, N, n0, cols);
    case 2:
      return pair_tile<2>(xr, half_K, packed, yr, N, n0, cols);
    case 1:
      return pair_tile<1>(xr, half_K, packed, yr, N, n0, cols);
    default:
      return;
  }
}

void grouped_pairs(const GroupedMatmulArgs& args, Tensor& out) {
  const std::vector<int64_t> offsets = group_offsets(args);
  const int64_t K = args.a.size(1), N = out.size(1), half_K = K / 2;
  const Tensor a = args.a.contiguous(), b = args.b.contiguous();
  const auto* x = reinterpret_cast<const uint32_t*>(a.data<bf16>());
  const bf16* w = b.data<bf16>();
  bf16* y = out.data<bf16>();
  struct Item {
    int64_t group, row0, rows, n0;
    double work;
  };
  std::vector<Item> items;
  double total = 0;
  for (int64_t g = 0; g + 1 < int64_t(offsets.size()); ++g) {
    const int64_t rows = offsets[size_t(g) + 1] - offsets[size_t(g)];
    for (int64_t n0 = 0; n0 < N; n0 += kBlockCols)  // a block's items in a row: packed once
      for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerItem) {
        const int64_t r = std::min(kRowsPerItem, rows - r0);
        items.push_back({g, offsets[size_t(g)] + r0, r, n0, double(r + 2)});  // + the packing
        total += items.back().work;
      }
  }
  // Shares of equal work, each a run of items: a part of the pool takes its share's items.
  const int64_t shares = 4 * int64_t(num_threads());
  std::vector<size_t> first(size_t(shares) + 1, items.size());
  double done = 0;
  for (size_t i = 0, s = 0; i < items.size(); ++i) {
    while (s <= size_t(shares) && done >= total * double(s) / double(shares)) first[s++] = i;
    done += items[i].work;
  }
  parallel_for(shares, 1, [&](int64_t s0, int64_t s1) {
    Scratch<int32_t> words(half_K * kBlockCols);
    auto* packed = reinterpret_cast<uint32_t*>(words.data());
    int64_t packed_group = -1, packed_n0 = -1;
    for (size_t i = first[size_t(s0)]; i < first[size_t(s1)]; ++i) {
      const Item& it = items[i];
      if (it.group != packed_group || it.n0 != packed_n0) {
        pack_pairs(w + it.group * N * K, args.transpose_b, N, K, it.n0, packed);
        packed_group = it.group;
        packed_n0 = it.n0;
      }
      pair_rows(x + it.row0 * half_K, it.rows, half_K, packed, y + it.row0 * N, N, it.n0);
    }
  });
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

void add_grouped_matmul_pairs_cpu(select::Registry<GroupedMatmulArgs>& r) {
#if DEW_ISA_CONCAT(DEW_LANES_, DEW_KERNEL_NS) == 16
  r.add({std::string(kCpuImplName) + ".bf16_pairs",
         {select::on_cpu<GroupedMatmulArgs>(), cpu_has_tier<GroupedMatmulArgs>(),
          select::dtype_in<GroupedMatmulArgs>({DType::bf16}),
          select::requires_that<GroupedMatmulArgs>(
              "cpu_has(avx512bf16)", [](const GroupedMatmulArgs&) { return cpu_features().avx512bf16; },
              [](const GroupedMatmulArgs&) { return std::string("this CPU lacks AVX512-BF16"); }),
          select::requires_that<GroupedMatmulArgs>(
              "grouped_matmul (not its weight gradient), K even",
              [](const GroupedMatmulArgs& a) { return !a.weight_grad && a.a.size(1) % 2 == 0; },
              [](const GroupedMatmulArgs& a) {
                return fmt::format("{}, K {}", a.weight_grad ? "the weight gradient" : "grouped_matmul",
                                   a.a.size(1));
              })},
         [](const GroupedMatmulArgs& a, std::vector<Tensor>& outs) { grouped_pairs(a, outs[0]); }});
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
