// DEW_HOST_DEVICE marks scalar mathematics that CPU kernels and CUDA kernels share (activation.h,
// each op's scalar.h), so both compute the same expressions; on the CPU it also forces inlining. These
// templates sit outside the instruction-set regions, so an out-of-line copy (say unary_apply over the
// avx512 tier's F32x16) is compiled for baseline x86-64 and takes its vector arguments by another
// calling convention than its AVX-512 caller passes them: square f32 on cpu.avx512 multiplied each
// vector by the previous one (NOTE [instruction-set regions]). Inlined, they compile in the caller's.
#pragma once

#if defined(__CUDACC__)
#define DEW_HOST_DEVICE __host__ __device__
#else
#define DEW_HOST_DEVICE [[gnu::always_inline]] inline
#endif
