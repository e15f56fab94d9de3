// The indexing ops on CUDA: the launchers cuda.cu defines and cuda.cc registers as cuda.indexed.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

#include "cuda/view.h"

namespace dew::ops::cuda_kernels {

// out (outer, K, inner) = x (outer, length, inner) at rows idx (K): embedding and index_select.
void select_rows(int device, size_t element_size, const void* x, int64_t outer, int64_t length, int64_t inner,
                 const int64_t* idx, int64_t K, void* out);

// gather: out[i] = x at index i's coordinates with the axis coordinate replaced by index[i]; index is
// contiguous with the shape `index_shape` (rank <= kMaxRank); x is contiguous.
void gather(int device, size_t element_size, const void* x, const cuda::View& x_shape, const int64_t* index,
            const cuda::View& index_shape, int axis, void* out);

// scatter_add: out = x, then out[at index i] += src[i], each line along the axis summed in order (one
// thread per line: deterministic). x, index, src contiguous; floating dtype.
void scatter_add(int device, DType dtype, const void* x, const cuda::View& x_shape, const int64_t* index,
                 const void* src, const cuda::View& index_shape, int axis, void* out);

// embedding_backward: out (count, C) = the rows d (rows, C) summed at ids, each column in id order.
void embedding_backward(int device, DType dtype, const void* d, const int64_t* ids, int64_t rows, int64_t C,
                        int64_t count, void* out);

// one_hot: out (n, count) i64.
void one_hot(int device, const int64_t* idx, int64_t n, int64_t count, int64_t* out);

}  // namespace dew::ops::cuda_kernels
