// Dew's operations: each validates its arguments (errors start with [op]), picks an implementation
// through the selector, records the route and runs it. Outputs are fresh contiguous tensors.
#pragma once

#include <dew/activation.h>
#include <dew/tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace dew {

struct MatmulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
  Tensor bias;  // (N), optional
  Activation activation = Activation::none;
  Tensor residual;  // the output's shape, optional
  double scale = 1.0;
  // f32 operands only: a GPU may multiply them as TF32 (10-bit mantissas, f32 accumulation) on its
  // tensor cores. Off by default: f32 is IEEE f32, as the gate holds it; the CPU always is.
  bool tf32 = false;
  // A gated linear unit after the product: op(b)'s N columns are the gate's N/2 then the up's N/2, and
  // the output's N/2 columns are act(scale g + bias_g) * (scale u + bias_u), the activation silu
  // (SwiGLU), gelu_erf or gelu_tanh (GeGLU); no residual; f32 and f64 (the gate's bound knows one
  // rounding to the output's dtype, not the halves' own in bf16). An MLP's joined gate and up product
  // then writes its hidden units once; with gradients it runs as the product and then the glu op.
  bool glu = false;
};
// act(scale * op(a) @ op(b) + bias) + residual; with glu, the gated unit of the two halves
Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options = {});
// Mixture-of-experts products over rows sorted by group, sizes (G) i64 rows each (ragged, possibly 0):
// out (T,N) = a_g @ b[g] for a (T,K) and b (G,K,N), or (G,N,K) with transpose_b (experts' nn.Linear
// weights); and the weight gradient, out (G,P,Q) = a_g^T @ b_g for a (T,P), b (T,Q).
Tensor grouped_matmul(const Tensor& a, const Tensor& b, const Tensor& sizes, bool transpose_b = false);
Tensor grouped_matmul_weight_grad(const Tensor& a, const Tensor& b, const Tensor& sizes);

// Elementwise, one input.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor relu(const Tensor& x);

// Elementwise, two inputs with numpy broadcasting; same dtype.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// Comparisons give bool tensors; where(cond, a, b) picks per element.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

// Converts to dtype with the rounding rules of dtype.h (floats to integers truncate toward zero).
Tensor cast(const Tensor& x, DType dtype);
// x itself when it is already of `dtype` (no copy), else cast(x, dtype).
Tensor as_dtype(const Tensor& x, DType dtype);

// Reductions over the listed axes (all axes when empty); keepdim keeps them as size 1.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);  // i64, first index of the max
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
Tensor cumsum(const Tensor& x, int64_t axis);

// y = x / sqrt(mean(x^2) + eps) * weight over the last dim; weight (C) optional.
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps);

// Layout. Outputs are fresh contiguous tensors; views (slice, transpose, ...) are on Tensor itself.
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis);
// pads: (before, after) pairs from the last dim backwards, as torch.nn.functional.pad; constant value.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0);
Tensor permute_copy(const Tensor& x, const std::vector<int64_t>& order);  // the transpose copy
Tensor tril(const Tensor& x, int64_t diagonal = 0);  // keeps j <= i + diagonal in the last two dims
Tensor triu(const Tensor& x, int64_t diagonal = 0);  // keeps j >= i + diagonal
Tensor fill(const Shape& shape, double value, DType dtype);
Tensor arange(double start, double end, double step, DType dtype);  // start + i * step, computed in f64

// Indexing. ids and indices are i64; every index is checked against its range before use.
Tensor embedding(const Tensor& weight, const Tensor& ids);  // (V,C) at (...) -> (...,C)
Tensor embedding_backward(const Tensor& d_out, const Tensor& ids,
                          int64_t num_embeddings);                        // -> (V,C), summed
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);  // index (K)
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);        // as torch.gather
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index,
                   const Tensor& src);                   // x + scattered src
Tensor one_hot(const Tensor& ids, int64_t num_classes);  // (...) -> (...,N) i64

// Gated linear units, fused: silu(gate) * up and gelu(gate) * up, with their backward ops.
Tensor swiglu(const Tensor& gate, const Tensor& up);
Tensor geglu(const Tensor& gate, const Tensor& up, bool tanh_approximation = false);
struct GluGradients {
  Tensor d_gate, d_up;
};
GluGradients swiglu_backward(const Tensor& dy, const Tensor& gate, const Tensor& up);
GluGradients geglu_backward(const Tensor& dy, const Tensor& gate, const Tensor& up,
                            bool tanh_approximation = false);

enum class RopeLayout : uint8_t { rotate_half, interleaved };
struct RopeTables {
  Tensor cos, sin;  // (max_positions, rotary_dim / 2)
};
// cos and sin of position * inv_freq, computed in f64 and rounded once to dtype (f32, or f64).
// inv_freq_i = theta^(-2i / rotary_dim) unless given ((rotary_dim / 2) f64, for scaled variants).
// Rows before first_position are left 0: a decode step needs only the positions it rotates.
RopeTables rope_tables(double theta, int64_t rotary_dim, int64_t max_positions, DType dtype = DType::f32,
                       const Tensor& inv_freq = {}, int64_t first_position = 0);
// x (B,T,H,D) rotated at positions (B,T) i64; the first rotary_dim dims rotate, the rest pass through.
Tensor rope(const Tensor& x, const Tensor& positions, const RopeTables& tables,
            RopeLayout layout = RopeLayout::rotate_half);

struct AttentionOptions {
  bool causal = false;
  double scale = 0;    // 0: 1/sqrt(D)
  double softcap = 0;  // 0: none; else scores become softcap * tanh(scores / softcap)
  int64_t window = 0;  // 0: none; else query t sees keys t - window < j <= t
  Tensor q_segments;   // (B,T) i64 document ids of packed rows; with k_segments (B,S)
  Tensor k_segments;
  Tensor sinks;  // (H) f32 (f64 for f64 q) learned logit per head, optional
};
struct AttentionResult {
  Tensor out;  // (B,T,H,D)
  Tensor lse;  // (B,H,T) natural-log normalizer of each query row
};
// q (B,T,H,D), k and v (B,S,Hkv,D); flash-style: never materializes T x S.
AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v,
                          const AttentionOptions& options = {});
struct AttentionGradients {
  Tensor dq, dk, dv, dsinks;  // dsinks only when options.sinks is set
};
AttentionGradients attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionResult& forward, const AttentionOptions& options = {});
// Decode attention through a paged KV cache: q (N,H,D), one query per sequence, after its keys;
// sequence n's key j lives in k_cache and v_cache (blocks, Hkv, block_size, D) at block
// block_tables[n, j / block_size] (i64 (N, max_blocks)), slot j % block_size, for j < lengths[n] (i64
// (N)). Scale, softcap, window and sinks as attention's; segments refused. out (N,H,D), lse (N,H).
AttentionResult paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                const Tensor& block_tables, const Tensor& lengths,
                                const AttentionOptions& options = {});
struct AttentionTangents {
  Tensor out, lse;  // the tangents of attention's outputs
};
// Forward mode through attention, fused: the tangents of out and lse given those of q, k, v (and of
// the sinks, when options.sinks is set), never materializing T x S. lse is the forward's: it keeps the
// exponents in range (the tangents are those of attention at q, k, v whatever rounding it carries).
AttentionTangents attention_jvp(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& tq,
                                const Tensor& tk, const Tensor& tv, const Tensor& lse,
                                const AttentionOptions& options = {}, const Tensor& t_sinks = {});

struct CrossEntropyOptions {
  int64_t ignore_index = -100;
  Tensor weights;  // (N) per-token weights, f32 (f64 for f64 logits); optional
  double z_loss = 0;
};
struct CrossEntropyResult {
  Tensor loss;      // scalar: weighted mean over rows whose target is not ignore_index (0 if none)
  Tensor d_logits;  // d loss / d logits, in logits' dtype
  Tensor lse;       // (N) log-sum-exp of each row
};
// Loss and d_logits in one op; logits (..., V), targets (...) i64.
CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets,
                                 const CrossEntropyOptions& options = {});

struct LayerNormResult {
  Tensor y, mean, rstd;  // mean and rstd per row, for the backward
};
// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dim; weight and bias (C) optional.
LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
struct LayerNormGradients {
  Tensor dx, dweight, dbias;  // dweight and dbias only when weight is given
};
LayerNormGradients layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                       const LayerNormResult& forward);

// Optimizer updates, in place: one step for a parameter and its state (contiguous, of the parameter's
// shape and dtype, f32 or f64; grad may be any layout), in torch.optim's single-tensor order, each
// step rounded to the dtype. Weight decay is decoupled for AdamW and Lion, added to the gradient for SGD.
struct AdamWStep {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  int64_t step = 1;  // 1-based: the bias corrections' exponent
};
void adamw_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const AdamWStep& s);
struct SgdStep {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first = true;  // the momentum buffer starts as the first step's direction (as torch.optim.SGD)
};
// momentum_buffer is undefined when momentum is 0.
void sgd_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdStep& s);
struct LionStep {
  double lr = 1e-4, beta1 = 0.9, beta2 = 0.99, weight_decay = 0;
};
void lion_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, const LionStep& s);
// sum(x^2) as an f64 scalar, accumulated in double over fixed blocks: the same bits at any thread count.
Tensor squared_norm(const Tensor& x);

// The route log (docs/architecture.md).
struct RouteRecord {
  std::string op, implementation, case_label;
  int64_t count = 0;
};
std::vector<RouteRecord> routes();
void reset_routes();
// DEW_IMPL syntax: "op:impl" pins, "op:-impl" excludes, comma-separated. Replaces the environment's.
void set_impl_overrides(const std::string& spec);

}  // namespace dew
