// What the recurrent token mixers (mamba2's, qwen3_next's Gated DeltaNet) share: the softplus of their
// step sizes, and the short convolution's inputs a KvCache keeps from one call to the next. Internal
// to src/models.
#pragma once

#include <dew/models.h>
#include <dew/tensor.h>

namespace dew::models {

// softplus(x) = max(x, 0) + log(1 + exp(-|x|)), evaluated in f64 (there is no log1p op: in f32 the
// 1 + exp(-|x|) would round away most of a small step) and rounded once to x's dtype.
Tensor softplus(const Tensor& x);

// With a cache and segments (left padding, or packed documents), which convolution inputs the cache
// keeps: (B, W-1+T, 1) of `dtype`, 1 from each row's last document's first token on (and before the
// call too when that document began there), 0 before — the zeros that row's last document would have
// had alone. Undefined without segments (every input is kept).
Tensor last_document_window(const Tensor& segments, int64_t W, DType dtype, Device device);

// The W-1 inputs (B, W-1, C) a cache keeps for the next call: the last of the cached ones `before`
// (undefined: zeros) followed by this call's `inputs` (B,T,C), masked by last_document_window.
Tensor kept_conv_inputs(const Tensor& before, const Tensor& inputs, const Tensor& last_document, int64_t W);

// The cache's convolution inputs and states grown to hold layer `layer` (a mixer's first call on it).
void hold_layer(KvCache& cache, int64_t layer);

// (heads) i64: the source head each of `heads` reads, `heads / sources` consecutive heads a source (as
// repeat_interleave gives them): mamba2's B and C shared by a group, qwen3_next's q and k by a key head.
Tensor shared_heads(int64_t heads, int64_t sources, Device device);

}  // namespace dew::models
