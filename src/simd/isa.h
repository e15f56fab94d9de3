// Instruction-set regions for kernel code: DEW_ISA_BEGIN / DEW_ISA_END wrap each kernel header's
// DEW_KERNEL_NS namespace, and kLanes is that instruction set's floats per vector register.
// NOTE [instruction-set regions]: every object file is compiled for baseline x86-64; only the code
// between DEW_ISA_BEGIN and DEW_ISA_END is compiled for the translation unit's instruction set (a
// target pragma). Compiling whole files with -mavx2 was wrong twice over: the registration code in
// them ran AVX instructions on CPUs the selector had not yet asked (SIGILL at start-up on a baseline
// CPU), and the inline functions of every header they included (Tensor, std::) were emitted as AVX
// copies the linker could pick for everyone. Inside a region, those functions are still inlined.
#pragma once

#ifndef DEW_KERNEL_NS
#error "define DEW_KERNEL_NS (portable, avx2, avx512, ...) before including a kernel header"
#endif

#define DEW_ISA_CONCAT_(a, b) a##b
#define DEW_ISA_CONCAT(a, b) DEW_ISA_CONCAT_(a, b)
#define DEW_ISA_STR_(x) #x
#define DEW_ISA_STR(x) DEW_ISA_STR_(x)

#if defined(__clang__)
#define DEW_ISA_PUSH_(features) \
  _Pragma(DEW_ISA_STR_(clang attribute push(__attribute__((target(features))), apply_to = function)))
#define DEW_ISA_POP_ _Pragma("clang attribute pop")
#define DEW_ISA_AVX2_ DEW_ISA_PUSH_("avx2,fma,f16c")
#define DEW_ISA_AVX512_ DEW_ISA_PUSH_("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
#else
#define DEW_ISA_AVX2_ _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c\")")
#define DEW_ISA_AVX512_                \
  _Pragma("GCC push_options") _Pragma( \
      "GCC target(\"avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c,prefer-vector-width=512\")")
#define DEW_ISA_POP_ _Pragma("GCC pop_options")
#endif

// Per DEW_KERNEL_NS: the region's pragmas and the lane count.
#define DEW_ISA_BEGIN_portable
#define DEW_ISA_END_portable
#define DEW_LANES_portable 1
#define DEW_ISA_BEGIN_avx2 DEW_ISA_AVX2_
#define DEW_ISA_END_avx2 DEW_ISA_POP_
#define DEW_LANES_avx2 8
#define DEW_ISA_BEGIN_avx512 DEW_ISA_AVX512_
#define DEW_ISA_END_avx512 DEW_ISA_POP_
#define DEW_LANES_avx512 16

// The avx512 region's target also names AVX512-BF16, which a CPU may lack while having the tier's
// AVX-512: its instructions appear only where a kernel calls them by intrinsic, behind a run-time
// check (NOTE [native bf16 narrowing]). Compilers do not emit them on their own: Dew's bf16 is integer
// bits, and the conversion instruction, which flushes subnormals, could not implement its rounding.
#define DEW_NATIVE_BF16_avx512 1
#define DEW_HAS_NATIVE_BF16 DEW_ISA_CONCAT(DEW_NATIVE_BF16_, DEW_KERNEL_NS)  // 0 where undefined

#define DEW_ISA_BEGIN DEW_ISA_CONCAT(DEW_ISA_BEGIN_, DEW_KERNEL_NS)
#define DEW_ISA_END DEW_ISA_CONCAT(DEW_ISA_END_, DEW_KERNEL_NS)

namespace dew::ops::DEW_KERNEL_NS {
inline constexpr int kLanes = DEW_ISA_CONCAT(DEW_LANES_, DEW_KERNEL_NS);
}  // namespace dew::ops::DEW_KERNEL_NS
