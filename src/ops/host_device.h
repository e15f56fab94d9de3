// DEW_HOST_DEVICE marks scalar mathematics that CPU kernels and CUDA kernels share (activation.h,
// each op's scalar.h), so both compute the same expressions; empty outside nvcc.
#pragma once

#if defined(__CUDACC__)
#define DEW_HOST_DEVICE __host__ __device__
#else
#define DEW_HOST_DEVICE
#endif
