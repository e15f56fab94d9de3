// Unary ops on bf16 and f16 by table with AVX-512 gathers (cpu.avx512.table): cpu.table's tables
// (unary_table_bits), sixteen entries a gather, for the functions cpu.avx512 does not compute (NOTE
// [cheap functions on AVX-512 vectors]). The avx2 build registers nothing: AVX2's gathers are
// slow on some CPUs (Zen 2), where cpu.table's scalar loads are not (NOTE [unary maps by table]).
#include "ops/cpu_tier.h"
#include "ops/elementwise.h"
#include "ops/f32x16.h"
#include "ops/map_elements.h"
#include "ops/unary/unary.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_HAS_F32X16
// y[i] = t[x[i]] for n 16-bit values: each entry read as the low half of a 32-bit gather (the table
// has an entry past its last for the upper half of the final one), narrowed by truncation.
[[gnu::always_inline]] inline void gather_row(const uint16_t* t, const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const int lanes = int(std::min<int64_t>(16, n - i));
    const __mmask16 k = first_lanes(lanes);
    if (lanes == 16) prefetch_ahead<0>(x + i, 16), prefetch_ahead<1>(y + i, 16);  // NOTE [prefetching maps]
    const __m512i index = _mm512_maskz_cvtepu16_epi32(k, _mm256_maskz_loadu_epi16(k, x + i));
    const __m512i entries = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, index, t, 2);
    _mm512_mask_cvtepi32_storeu_epi16(y + i, k, entries);
  }
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
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

namespace dew::ops::DEW_KERNEL_NS {

void add_unary_table_cpu([[maybe_unused]] select::Registry<UnaryArgs>& r) {
#if DEW_HAS_F32X16
  r.add({std::string(kCpuImplName) + ".table",
         {select::on_cpu<UnaryArgs>(), cpu_has_tier<UnaryArgs>(),
          select::dtype_in<UnaryArgs>({DType::bf16, DType::f16}), unary_table_requirement(),
          select::requires_that<UnaryArgs>(
              "fn not in {exp, sqrt, rsqrt, sigmoid, silu} on f16, or on bf16 with avx512_bf16",
              [](const UnaryArgs& a) { return !unary_computed_on_avx512(a.fn, a.dtype()); },
              [](const UnaryArgs& a) {
                return fmt::format("{} on {} is cpu.avx512's", unary_name(a.fn), dtype_name(a.dtype()));
              })},
         [](const UnaryArgs& a, std::vector<Tensor>& outs) { unary_by_gathers(a, outs[0]); }});
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
