// grouped_matmul in bf16 through AVX512-BF16's vdpbf16ps (cpu.avx512.bf16_pairs), weights (G,N,K) or
// (G,K,N): each step multiplies a pair of a row's values, broadcast, by the same pair of 16 columns'
// weights, 32 products an instruction, twice the rate of f32 FMAs and no widening. A work item packs a
// block of its group's weights into pairs interleaved by column (the layout the instruction reads) and
// runs its rows of the group against it, accumulators in registers. The weight gradient runs the same
// tiles with the pairs along the groups' rows.
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
  const int64_t half_K = (K + 1) / 2, cols = std::min(kBlockCols, N - n0);  // (N,K): K even
  if (rows_are_columns) {
    const auto* words = reinterpret_cast<const uint32_t*>(w);
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t kp = 0; kp < half_K; ++kp) packed[kp * kBlockCols + j] = words[(n0 + j) * half_K + kp];
  } else {
    const auto* bits = reinterpret_cast<const uint16_t*>(w);
    for (int64_t kp = 0; kp < half_K; ++kp) {
      const bool second = 2 * kp + 1 < K;  // an odd K's last pair is half zero
      for (int64_t j = 0; j < cols; ++j)
        packed[kp * kBlockCols + j] = uint32_t(bits[2 * kp * N + n0 + j]) |
                                      (second ? uint32_t(bits[(2 * kp + 1) * N + n0 + j]) << 16 : 0u);
    }
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

// A tile of the R or fewer rows left: pair_tile<rest>.
template <int R>
void last_rows(int64_t rest, const uint32_t* x, int64_t half_K, const uint32_t* packed, bf16* y, int64_t N,
               int64_t n0, int64_t cols) {
  if (rest == R) return pair_tile<R>(x, half_K, packed, y, N, n0, cols);
  if constexpr (R > 1) last_rows<R - 1>(rest, x, half_K, packed, y, N, n0, cols);
}

void pair_rows(const uint32_t* x, int64_t rows, int64_t half_K, const uint32_t* packed, bf16* y, int64_t N,
               int64_t n0) {
  const int64_t cols = std::min(kBlockCols, N - n0);
  int64_t m = 0;
  for (; m + kPairRows <= rows; m += kPairRows)
    pair_tile<kPairRows>(x + m * half_K, half_K, packed, y + m * N, N, n0, cols);
  last_rows<kPairRows - 1>(rows - m, x + m * half_K, half_K, packed, y + m * N, N, n0, cols);
}

// Rows [row0, row0 + rows) of a group's left operand against the block of 48 columns from n0 of its
// right one; `work` weighs the item against the others.
struct PairItem {
  int64_t group, row0, rows, n0;
  double work;
};

// Runs the items in shares of equal work, a run of items each, on the pool: pack(item, packed) fills
// the packed block when an item's group or block differs from the last one's, run(item, packed) the rest.
template <class Pack, class Run>
void run_shares(const std::vector<PairItem>& items, int64_t packed_words, Pack&& pack, Run&& run) {
  double total = 0;
  for (const PairItem& it : items) total += it.work;
  const int64_t shares = 4 * int64_t(num_threads());
  std::vector<size_t> first(size_t(shares) + 1, items.size());
  double done = 0;
  for (size_t i = 0, s = 0; i < items.size(); ++i) {
    while (s <= size_t(shares) && done >= total * double(s) / double(shares)) first[s++] = i;
    done += items[i].work;
  }
  parallel_for(shares, 1, [&](int64_t s0, int64_t s1) {
    Scratch<int32_t> words(std::max<int64_t>(1, packed_words));
    auto* packed = reinterpret_cast<uint32_t*>(words.data());
    int64_t packed_group = -1, packed_n0 = -1;
    for (size_t i = first[size_t(s0)]; i < first[size_t(s1)]; ++i) {
      const PairItem& it = items[i];
      if (it.group != packed_group || it.n0 != packed_n0) {
        pack(it, packed);
        packed_group = it.group;
        packed_n0 = it.n0;
      }
      run(it, packed);
    }
  });
}

// The items of `rows` rows (from row0) against N columns: a block's items in a row, packed once.
void add_items(std::vector<PairItem>& items, int64_t group, int64_t row0, int64_t rows, int64_t N,
               double step_weight) {
  for (int64_t n0 = 0; n0 < N; n0 += kBlockCols)
    for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerItem) {
      const int64_t r = std::min(kRowsPerItem, rows - r0);
      items.push_back({group, row0 + r0, r, n0, double(r + 2) * step_weight});  // + the packing
    }
}

void grouped_pairs(const GroupedMatmulArgs& args, Tensor& out) {
  const std::vector<int64_t> offsets = group_offsets(args);
  const int64_t K = args.a.size(1), N = out.size(1), half_K = K / 2;
  const Tensor a = args.a.contiguous(), b = args.b.contiguous();
  const auto* x = reinterpret_cast<const uint32_t*>(a.data<bf16>());
  const bf16* w = b.data<bf16>();
  bf16* y = out.data<bf16>();
  std::vector<PairItem> items;
  for (int64_t g = 0; g + 1 < int64_t(offsets.size()); ++g)
    add_items(items, g, offsets[size_t(g)], offsets[size_t(g) + 1] - offsets[size_t(g)], N, 1);
  run_shares(
      items, half_K * kBlockCols,
      [&](const PairItem& it, uint32_t* packed) {
        pack_pairs(w + it.group * N * K, args.transpose_b, N, K, it.n0, packed);
      },
      [&](const PairItem& it, const uint32_t* packed) {
        pair_rows(x + it.row0 * half_K, it.rows, half_K, packed, y + it.row0 * N, N, it.n0);
      });
}

// The weight gradient out[g] (P,Q) = a_g^T b_g, the pairs running along the group's rows: a_g packed
// as P rows of pairs (a[t][p], a[t + 1][p]), b_g's blocks as the (K,N) layout; an odd group's last
// pair is half zero, and an empty group's gradient is zero.
void grouped_weight_grad_pairs(const GroupedMatmulArgs& args, Tensor& out) {
  const std::vector<int64_t> offsets = group_offsets(args);
  const int64_t P = args.a.size(1), Q = args.b.size(1), G = out.size(0);
  const Tensor a = args.a.contiguous(), b = args.b.contiguous();
  const auto* a_bits = reinterpret_cast<const uint16_t*>(a.data<bf16>());
  const bf16* B = b.data<bf16>();
  bf16* y = out.data<bf16>();
  std::vector<int64_t> at(size_t(G) + 1, 0),
      halves(static_cast<size_t>(G));  // each group's packed a, in words
  int64_t most = 0;
  for (int64_t g = 0; g < G; ++g) {
    halves[size_t(g)] = (offsets[size_t(g) + 1] - offsets[size_t(g)] + 1) / 2;
    at[size_t(g) + 1] = at[size_t(g)] + P * halves[size_t(g)];
    most = std::max(most, halves[size_t(g)]);
  }
  Scratch<int32_t> a_words(std::max<int64_t>(1, at[size_t(G)]));
  auto* pairs = reinterpret_cast<uint32_t*>(a_words.data());
  parallel_for(G, 1, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t t0 = offsets[size_t(g)], rows = offsets[size_t(g) + 1] - t0, half = halves[size_t(g)];
      if (rows == 0) std::fill(y + g * P * Q, y + (g + 1) * P * Q, bf16{});
      for (int64_t tp = 0; tp < half; ++tp) {
        const uint16_t* first = a_bits + (t0 + 2 * tp) * P;
        const uint16_t* second = 2 * tp + 1 < rows ? first + P : nullptr;
        for (int64_t p = 0; p < P; ++p)
          pairs[at[size_t(g)] + p * half + tp] =
              uint32_t(first[p]) | (second ? uint32_t(second[p]) << 16 : 0u);
      }
    }
  });
  std::vector<PairItem> items;
  for (int64_t g = 0; g < G; ++g)
    if (halves[size_t(g)] > 0) add_items(items, g, 0, P, Q, double(halves[size_t(g)]));
  run_shares(
      items, most * kBlockCols,
      [&](const PairItem& it, uint32_t* packed) {
        const int64_t t0 = offsets[size_t(it.group)];
        pack_pairs(B + t0 * Q, false, Q, offsets[size_t(it.group) + 1] - t0, it.n0, packed);
      },
      [&](const PairItem& it, const uint32_t* packed) {
        const int64_t half = halves[size_t(it.group)];
        pair_rows(pairs + at[size_t(it.group)] + it.row0 * half, it.rows, half, packed,
                  y + it.group * P * Q + it.row0 * Q, Q, it.n0);
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
              "K even (grouped_matmul's rows are read as pairs); any weight gradient",
              [](const GroupedMatmulArgs& a) { return a.weight_grad || a.a.size(1) % 2 == 0; },
              [](const GroupedMatmulArgs& a) { return fmt::format("K is {}", a.a.size(1)); })},
         [](const GroupedMatmulArgs& a, std::vector<Tensor>& outs) {
           a.weight_grad ? grouped_weight_grad_pairs(a, outs[0]) : grouped_pairs(a, outs[0]);
         }});
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
