// Unary ops on bf16 and f16 by table with AVX-512 gathers (cpu.avx512.table): cpu.table's tables
// (unary_table_bits), sixteen entries a gather, for the functions cpu.avx512 does not compute (NOTE
// [cheap functions on AVX-512 vectors]). The avx2 build registers nothing: AVX2's gathers are
// slow on some CPUs, where cpu.table's scalar loads are not (NOTE [unary maps by table]).
#include <cstring>

#include "ops/cpu_tier.h"
#include "ops/elementwise.h"
#include "ops/map_elements.h"
#include "ops/unary/unary.h"
#include "simd/f32x16.h"

// The kernels exist on the avx512 tier only: an instruction-set region with no function in it (the
// avx2 build) is an error to clang.
#if DEW_HAS_F32X16
DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

// t[x[i]] for the first lanes of sixteen 16-bit values x (k), stored to y: each entry the low half of a
// 32-bit element (the table has an entry past its last for the upper half of the final one), narrowed by
// truncation.
[[gnu::always_inline]] inline void gather16(const uint16_t* t, const uint16_t* x, uint16_t* y, __mmask16 k) {
  const __m512i index = _mm512_maskz_cvtepu16_epi32(k, _mm256_maskz_loadu_epi16(k, x));
  _mm512_mask_cvtepi32_storeu_epi16(y, k,
                                    _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, index, t, 2));
}

// y[i] = t[x[i]] for n 16-bit values, 32 a step: sixteen by a gather, sixteen by scalar loads, four to a
// 64-bit store (lookup4s). A gather runs at about one entry a cycle, its loads one at a time; the scalar
// loads go beside it on the other load ports.
[[gnu::always_inline]] inline void gather_row(const uint16_t* t, const uint16_t* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead<0>(x + i, 32), prefetch_ahead<1>(y + i, 32);  // NOTE [prefetching maps]
    gather16(t, x + i, y + i, kAllLanes);
    lookup4s(t, x + i + 16, y + i + 16, 16);
  }
  for (; i < n; i += 16) gather16(t, x + i, y + i, first_lanes(int(std::min<int64_t>(16, n - i))));
}

void unary_by_gathers(const UnaryArgs& a, Tensor& out) {
  const uint16_t* t = unary_table_bits(a.fn, a.dtype());
  uint16_t* y = static_cast<uint16_t*>(out.raw_data());
  for_each_row<1>(out.shape(), {a.x}, [&](const RowView<1>& v, int64_t o) {
    const uint16_t* x = static_cast<const uint16_t*>(v.in[0]);
    if (v.stride[0] == 1) return gather_row(t, x, y + o, v.length);
    for (int64_t i = 0; i < v.length; ++i) y[o + i] = t[x[i * v.stride[0]]];
  });
}

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
#endif

namespace dew::ops::DEW_KERNEL_NS {

void add_unary_table_cpu([[maybe_unused]] select::Registry<UnaryArgs>& r) {
#if DEW_HAS_F32X16
  r.add({std::string(kCpuImplName) + ".table",
         {select::on_cpu<UnaryArgs>(), cpu_has_tier<UnaryArgs>(),
          select::dtype_in<UnaryArgs>({DType::bf16, DType::f16}), unary_table_requirement(),
          select::requires_that<UnaryArgs>(
              std::string("not: ") + kUnaryComputedOnAvx512,
              [](const UnaryArgs& a) { return !unary_computed_on_avx512(a.fn, a.dtype()); },
              [](const UnaryArgs& a) {
                return fmt::format("{} on {} is cpu.avx512's", unary_name(a.fn), dtype_name(a.dtype()));
              })},
         [](const UnaryArgs& a, std::vector<Tensor>& outs) { unary_by_gathers(a, outs[0]); }});
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
