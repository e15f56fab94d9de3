// The one-input elementwise ops (neg abs exp log sqrt rsqrt square tanh sigmoid silu gelu gelu_tanh
// relu): one family type, one op name per function, the output in the input's dtype.
#pragma once

#include <cstring>

#include "ops/op.h"
#include "ops/unary/unary_fn.h"

namespace dew::ops {

std::string_view unary_name(UnaryFn f);
UnaryFn unary_from_name(std::string_view name);

struct UnaryArgs : OneInputArgs {
  UnaryFn fn;
};

struct Unary {
  DEW_OP_TYPE_MEMBERS(UnaryArgs);
  static std::string_view name(const Args& a) { return unary_name(a.fn); }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

// g * f'(x) with ops, g a gradient or a tangent of x's shape; y = f(x) (read by exp, sqrt, rsqrt, tanh
// and sigmoid only).
Tensor times_unary_derivative(UnaryFn f, const Tensor& g, const Tensor& x, const Tensor& y);
// The unary function a fused activation (matmul's epilogue, a GLU's gate) applies.
UnaryFn unary_of(Activation act);

// Whether cpu.table computes f on dtype (NOTE [unary maps by table]).
bool unary_by_table(UnaryFn f, DType dtype);
// Whether cpu.avx512 computes f on dtype, one of cpu.table's, on this CPU (NOTE [cheap functions on
// AVX-512 vectors]); cpu.avx512.table takes the rest.
bool unary_computed_on_avx512(UnaryFn f, DType dtype);
// The functions whose rows cpu.avx512 computes and looks up at once (NOTE [maps by vectors and lookups at
// once], unary/kernels.h): those that cost more than their memory and gain by it.
constexpr bool unary_by_vectors_and_lookups(UnaryFn f, DType dtype) {
  if (dtype == DType::bf16) return f == UnaryFn::gelu || f == UnaryFn::gelu_tanh || f == UnaryFn::tanh;
  return dtype == DType::f16 && f == UnaryFn::gelu;
}
// What unary_computed_on_avx512 asks, in words, for the two requirements that name it.
inline constexpr const char* kUnaryComputedOnAvx512 =
    "fn in {exp, log, sqrt, rsqrt, tanh, sigmoid, silu, gelu_tanh, gelu} on f16, or on bf16 with avx512_bf16";

// f(x) rounded once to dtype (bf16 or f16) at each of its 65,536 values x, as bits indexed by x's bits,
// with one entry more (0) past the last so that a 32-bit gather may read it (NOTE [unary maps by table]).
const uint16_t* unary_table_bits(UnaryFn f, DType dtype);
// y[i] = t[x[i]] for n 16-bit values (n a multiple of 4), four to a 64-bit load and store (little-endian,
// as x86 stores them): cpu.table's lookups, cpu.avx512.table's beside its gathers, and cpu.avx512's
// beside its arithmetic (NOTE [maps by vectors and lookups at once]).
inline void lookup4s(const uint16_t* t, const void* x, void* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 4) {
    uint64_t v;
    std::memcpy(&v, static_cast<const uint16_t*>(x) + i, sizeof v);
    v = uint64_t(t[v & 0xFFFF]) | uint64_t(t[(v >> 16) & 0xFFFF]) << 16 |
        uint64_t(t[(v >> 32) & 0xFFFF]) << 32 | uint64_t(t[v >> 48]) << 48;
    std::memcpy(static_cast<uint16_t*>(y) + i, &v, sizeof v);
  }
}
// f(x) rounded once to float at each of the 65,536 inputs x of dtype (bf16 or f16), indexed by x's bits
// (NOTE [unary maps by table]): for kernels that multiply f(x) before they round to dtype, as the GLUs do.
const float* function_values(UnaryFn f, DType dtype);
// f(x) and f'(x) likewise, side by side (entry 2x and 2x + 1), for the GLUs' activations (silu, gelu,
// gelu_tanh), for their backward.
const float* activation_value_derivative_pairs(UnaryFn f, DType dtype);

// What cpu.table and cpu.avx512.table take: bf16 and f16, for the functions unary_by_table names.
select::Requirement<UnaryArgs> unary_table_requirement();
void add_unary_table(select::Registry<UnaryArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_unary_table_cpu(select::Registry<UnaryArgs>& r))
void add_unary_portable(select::Registry<UnaryArgs>& r);
void add_unary_cuda(select::Registry<UnaryArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_unary_cpu(select::Registry<UnaryArgs>& r))

}  // namespace dew::ops
