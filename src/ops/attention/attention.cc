// attention and attention_backward: validation, output rules, registries, cases and the public
// functions. The float64 references are in reference.cc.
#include "ops/attention/attention.h"
#include "ops/attention/dense.h"

#include <cmath>

namespace dew::ops {
namespace {

DType stat_dtype(DType q) {
  return q == DType::f64 ? DType::f64 : DType::f32;
}

std::vector<const Tensor*> with_options(std::vector<const Tensor*> v, const AttentionOptions& o) {
  for (const Tensor* t : {&o.q_segments, &o.k_segments, &o.sinks})
    if (t->defined()) v.push_back(t);
  return v;
}

// The floating tensors the gate widens: q, k, v (and the others given), plus sinks.
std::vector<Tensor*> with_options(std::vector<Tensor*> v, AttentionOptions& o) {
  if (o.sinks.defined()) v.push_back(&o.sinks);
  return v;
}

void validate(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  DEW_REQUIRE(is_floating(q.dtype()) && q.dim() == 4, "[{}] q is {}; expected a floating (B,T,H,D) tensor",
              op, q.describe());
  DEW_REQUIRE(k.dim() == 4 && k.dtype() == q.dtype() && k.size(0) == q.size(0) && k.size(3) == q.size(3),
              "[{}] k is {}; expected {}(B={},S,Hkv,D={})", op, k.describe(), dtype_name(q.dtype()),
              q.size(0), q.size(3));
  DEW_REQUIRE(v.shape() == k.shape() && v.dtype() == k.dtype(),
              "[{}] v is {}; expected k's shape and dtype {}", op, v.describe(), k.describe());
  DEW_REQUIRE(k.size(2) > 0 && q.size(2) % k.size(2) == 0,
              "[{}] q has {} heads and k has {}; expected the KV heads to divide the query heads", op,
              q.size(2), k.size(2));
  DEW_REQUIRE(
      o.window >= 0 && o.softcap >= 0 && o.scale >= 0 && std::isfinite(o.scale) && std::isfinite(o.softcap),
      "[{}] window {}, softcap {}, scale {}; expected each >= 0 and finite", op, o.window, o.softcap,
      o.scale);
  DEW_REQUIRE(o.q_segments.defined() == o.k_segments.defined(),
              "[{}] only one of q_segments and k_segments is given; expected both or neither", op);
  if (o.q_segments.defined()) {
    DEW_REQUIRE(o.q_segments.dtype() == DType::i64 && o.q_segments.shape() == Shape({q.size(0), q.size(1)}),
                "[{}] q_segments is {}; expected i64[{},{}]", op, o.q_segments.describe(), q.size(0),
                q.size(1));
    DEW_REQUIRE(o.k_segments.dtype() == DType::i64 && o.k_segments.shape() == Shape({k.size(0), k.size(1)}),
                "[{}] k_segments is {}; expected i64[{},{}]", op, o.k_segments.describe(), k.size(0),
                k.size(1));
  }
  if (o.sinks.defined())
    DEW_REQUIRE(o.sinks.shape() == Shape({q.size(2)}) && o.sinks.dtype() == stat_dtype(q.dtype()),
                "[{}] sinks is {}; expected {}[{}], one logit per query head", op, o.sinks.describe(),
                dtype_name(stat_dtype(q.dtype())), q.size(2));
}

std::string label(const Tensor& q, const AttentionOptions& o) {
  std::string s(dtype_name(q.dtype()));
  if (o.causal) s += " causal";
  if (o.window) s += " window";
  if (o.softcap > 0) s += " softcap";
  if (o.q_segments.defined()) s += " segments";
  if (o.sinks.defined()) s += " sinks";
  return s;
}

}  // namespace

AttentionGeometry::AttentionGeometry(const Tensor& q, const Tensor& k, const AttentionOptions& o)
    : B(q.size(0)),
      T(q.size(1)),
      S(k.size(1)),
      H(q.size(2)),
      Hkv(k.size(2)),
      D(q.size(3)),
      group(H / Hkv),
      scale(o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(D))),
      cap(o.softcap) {}

AttentionMask attention_mask(const AttentionOptions& o, int64_t T, int64_t S, int64_t b, const Tensor& q_seg,
                             const Tensor& k_seg) {
  AttentionMask m{T, S, o.window, o.causal, nullptr, nullptr};
  if (q_seg.defined()) {
    m.q_segments = q_seg.data<int64_t>() + b * T;
    m.k_segments = k_seg.data<int64_t>() + b * S;
  }
  return m;
}

std::vector<const Tensor*> AttentionArgs::inputs() const {
  return with_options({&q, &k, &v}, options);
}
std::vector<Tensor*> AttentionArgs::mutable_inputs() {
  return with_options({&q, &k, &v}, options);
}
std::vector<const Tensor*> AttentionBackwardArgs::inputs() const {
  return with_options({&dout, &q, &k, &v, &out, &lse}, options);
}
std::vector<Tensor*> AttentionBackwardArgs::mutable_inputs() {
  return with_options({&dout, &q, &k, &v, &out, &lse}, options);
}

std::vector<const Tensor*> AttentionJvpArgs::inputs() const {
  std::vector<const Tensor*> all = with_options({&q, &k, &v, &tq, &tk, &tv, &lse}, options);
  if (t_sinks.defined()) all.push_back(&t_sinks);
  return all;
}
std::vector<Tensor*> AttentionJvpArgs::mutable_inputs() {
  std::vector<Tensor*> all = with_options({&q, &k, &v, &tq, &tk, &tv, &lse}, options);
  if (t_sinks.defined()) all.push_back(&t_sinks);
  return all;
}

std::string Attention::case_label(const Args& a) {
  return label(a.q, a.options);
}
std::string AttentionBackward::case_label(const Args& a) {
  return label(a.q, a.options);
}

std::string AttentionJvp::case_label(const Args& a) {
  return label(a.q, a.options);
}

std::vector<OutputSpec> Attention::infer(const Args& a) {
  require_same_device("attention", a.inputs());
  validate("attention", a.q, a.k, a.v, a.options);
  return {{a.q.shape(), a.dtype()}, {{a.q.size(0), a.q.size(2), a.q.size(1)}, stat_dtype(a.dtype())}};
}

double Attention::flops(const Args& a) {
  double f = 4.0 * double(a.q.size(0) * a.q.size(2) * a.q.size(1)) * double(a.k.size(1) * a.q.size(3));
  return a.options.causal ? f / 2 : f;
}

std::vector<OutputSpec> AttentionBackward::infer(const Args& a) {
  require_same_device("attention_backward", a.inputs());
  validate("attention_backward", a.q, a.k, a.v, a.options);
  DEW_REQUIRE(a.dout.shape() == a.q.shape() && a.out.shape() == a.q.shape() && a.dout.dtype() == a.dtype() &&
                  a.out.dtype() == a.dtype(),
              "[attention_backward] dout is {} and out is {}; expected q's shape and dtype {}",
              a.dout.describe(), a.out.describe(), a.q.describe());
  DEW_REQUIRE(a.lse.shape() == Shape({a.q.size(0), a.q.size(2), a.q.size(1)}) &&
                  a.lse.dtype() == stat_dtype(a.dtype()),
              "[attention_backward] lse is {}; expected {}[{},{},{}] from attention", a.lse.describe(),
              dtype_name(stat_dtype(a.dtype())), a.q.size(0), a.q.size(2), a.q.size(1));
  std::vector<OutputSpec> out{{a.q.shape(), a.dtype()}, {a.k.shape(), a.dtype()}, {a.v.shape(), a.dtype()}};
  if (a.options.sinks.defined()) out.push_back({a.options.sinks.shape(), a.options.sinks.dtype()});
  return out;
}

std::vector<OutputSpec> AttentionJvp::infer(const Args& a) {
  require_same_device("attention_jvp", a.inputs());
  validate("attention_jvp", a.q, a.k, a.v, a.options);
  DEW_REQUIRE(a.tq.shape() == a.q.shape() && a.tk.shape() == a.k.shape() && a.tv.shape() == a.v.shape() &&
                  a.tq.dtype() == a.dtype() && a.tk.dtype() == a.dtype() && a.tv.dtype() == a.dtype(),
              "[attention_jvp] the tangents are {}, {}, {}; expected q's, k's and v's shapes and dtype {}",
              a.tq.describe(), a.tk.describe(), a.tv.describe(), dtype_name(a.dtype()));
  DEW_REQUIRE(a.lse.shape() == Shape({a.q.size(0), a.q.size(2), a.q.size(1)}) &&
                  a.lse.dtype() == stat_dtype(a.dtype()),
              "[attention_jvp] lse is {}; expected {}[{},{},{}] from attention", a.lse.describe(),
              dtype_name(stat_dtype(a.dtype())), a.q.size(0), a.q.size(2), a.q.size(1));
  DEW_REQUIRE(a.t_sinks.defined() == a.options.sinks.defined() &&
                  (!a.t_sinks.defined() || (a.t_sinks.shape() == a.options.sinks.shape() &&
                                            a.t_sinks.dtype() == a.options.sinks.dtype())),
              "[attention_jvp] t_sinks is {}; expected the sinks' tangent exactly when sinks are given ({})",
              a.t_sinks.defined() ? a.t_sinks.describe() : "undefined",
              a.options.sinks.defined() ? a.options.sinks.describe() : "none");
  return {{a.q.shape(), a.dtype()}, {a.lse.shape(), a.lse.dtype()}};
}

double AttentionJvp::flops(const Args& a) {
  return 1.5 * Attention::flops(AttentionArgs{a.q, a.k, a.v, a.options});
}

double AttentionBackward::flops(const Args& a) {
  return 2.5 * Attention::flops(AttentionArgs{a.q, a.k, a.v, a.options});
}

const select::Registry<AttentionArgs>& Attention::registry() {
  static const select::Registry<AttentionArgs> r = [] {
    select::Registry<AttentionArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_attention_cuda, reg);
    avx512::add_attention_flash_gemm(reg);
    avx2::add_attention_flash_gemm(reg);
    avx512::add_attention_cpu(reg);
    avx2::add_attention_cpu(reg);
    add_attention_portable(reg);
    return reg;
  }();
  return r;
}

const select::Registry<AttentionBackwardArgs>& AttentionBackward::registry() {
  static const select::Registry<AttentionBackwardArgs> r = [] {
    select::Registry<AttentionBackwardArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_attention_backward_cuda, reg);
    avx512::add_attention_backward_flash_gemm(reg);
    avx2::add_attention_backward_flash_gemm(reg);
    avx512::add_attention_backward_cpu(reg);
    avx2::add_attention_backward_cpu(reg);
    add_attention_backward_portable(reg);
    return reg;
  }();
  return r;
}

const select::Registry<AttentionJvpArgs>& AttentionJvp::registry() {
  static const select::Registry<AttentionJvpArgs> r = [] {
    select::Registry<AttentionJvpArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_attention_jvp_cuda, reg);
    avx512::add_attention_jvp_cpu(reg);
    avx2::add_attention_jvp_cpu(reg);
    add_attention_jvp_portable(reg);
    return reg;
  }();
  return r;
}

namespace {

struct AttentionCaseShape {
  int64_t B, T, S, H, Hkv, D;
};

// Random q, k, v and the options of a case; segments are 3 documents per row at random cut points.
AttentionArgs make_attention(const AttentionCaseShape& c, DType t, RandomKey k, AttentionOptions o,
                             bool segments, bool sinks) {
  AttentionArgs a{random_input({c.B, c.T, c.H, c.D}, t, k),
                  random_input({c.B, c.S, c.Hkv, c.D}, t, {k.seed, k.stream + 1}),
                  random_input({c.B, c.S, c.Hkv, c.D}, t, {k.seed, k.stream + 2}), o};
  if (segments) {
    a.options.q_segments = Tensor::empty({c.B, c.T}, DType::i64);
    a.options.k_segments = Tensor::empty({c.B, c.S}, DType::i64);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.S; ++j) {
        int64_t doc = j * 3 / c.S + (b == 1 && j > c.S / 2 ? 1 : 0);
        a.options.k_segments.data<int64_t>()[b * c.S + j] = doc;
        if (j >= c.S - c.T) a.options.q_segments.data<int64_t>()[b * c.T + j - (c.S - c.T)] = doc;
      }
  }
  if (sinks) a.options.sinks = random_input({c.H}, stat_dtype(t), {k.seed, k.stream + 3});
  return a;
}

struct NamedAttentionCase {
  std::string name;
  std::vector<std::string> tags;
  AttentionCaseShape shape;
  AttentionOptions options;
  bool segments, sinks;
};

std::vector<NamedAttentionCase> attention_case_table() {
  AttentionOptions causal;
  causal.causal = true;
  AttentionOptions window_cap = causal;
  window_cap.window = 9;
  window_cap.softcap = 5;
  AttentionOptions scaled;
  scaled.scale = 0.3;
  AttentionOptions long_window_cap = window_cap;
  long_window_cap.window = 45;
  AttentionOptions decode_window = window_cap;
  decode_window.window = 40;
  return {{"causal_gqa", {"ci"}, {2, 40, 40, 4, 2, 16}, causal, false, false},
          {"cross_bidirectional", {"ci"}, {2, 48, 33, 4, 2, 16}, scaled, false, false},
          {"window_softcap", {"ci", "edge"}, {1, 50, 50, 2, 2, 8}, window_cap, false, false},
          {"packed_segments", {"ci", "edge"}, {2, 48, 48, 2, 1, 8}, causal, true, false},
          {"sinks", {"ci"}, {1, 24, 24, 3, 1, 8}, causal, false, true},
          {"decode_one_token", {"ci", "edge"}, {2, 1, 300, 16, 1, 16}, causal, false, false},
          // a decode step with every score hook: window, softcap, packed segments, sinks, 3 heads per KV head
          {"decode_every_hook", {"ci", "edge"}, {2, 1, 70, 6, 2, 8}, decode_window, true, true},
          // the tensor-core kernels' head dims and tiles: rows and keys past one 64-row tile, partial
          // tiles, masks crossing tile edges
          {"tiles_d64_segments_sinks", {"ci"}, {2, 72, 72, 1, 1, 64}, causal, true, true},
          {"tiles_d128_window_softcap", {"ci"}, {1, 70, 90, 2, 1, 128}, long_window_cap, false, false},
          // the blocked-GEMM kernels' blocks: query blocks of 128 with a tail, the forward's key blocks
          // of 512 and the backward's of 256 with tails, so the online softmax rescales across blocks
          {"past_one_key_block", {"ci"}, {1, 300, 600, 2, 1, 8}, scaled, false, false},
          {"causal_past_one_key_block", {"ci"}, {1, 600, 600, 1, 1, 8}, causal, false, false},
          {"gpt2_layer", {"bench"}, {4, 1024, 1024, 12, 12, 64}, causal, false, false},
          {"llama8b_layer", {"bench"}, {1, 512, 512, 32, 8, 128}, causal, false, false},
          // The width of linear_recurrence's gdn_* cases (8 heads of 128), where recurrence overtakes it.
          {"causal_h8_d128_1k", {"bench"}, {1, 1024, 1024, 8, 8, 128}, causal, false, false},
          {"causal_h8_d128_4k", {"bench"}, {1, 4096, 4096, 8, 8, 128}, causal, false, false},
          {"causal_h8_d128_16k", {"bench"}, {1, 16384, 16384, 8, 8, 128}, causal, false, false}};
}

// Benchmark cases at the training dtypes; the others at every floating dtype.
std::vector<DType> case_dtypes(const NamedAttentionCase& c) {
  return c.tags[0] == "bench" ? std::vector<DType>{DType::f32, DType::bf16}
                              : std::vector<DType>{DType::f64, DType::f32, DType::bf16, DType::f16};
}

}  // namespace

std::vector<Case<AttentionArgs>> Attention::cases(std::string_view) {
  std::vector<Case<AttentionArgs>> out;
  for (const auto& c : attention_case_table()) {
    const std::vector<DType> dtypes = case_dtypes(c);
    out.push_back({c.name, c.tags, dtypes, [c](DType t, RandomKey k) {
                     return make_attention(c.shape, t, k, c.options, c.segments, c.sinks);
                   }});
  }
  return out;
}

std::vector<Case<AttentionBackwardArgs>> AttentionBackward::cases(std::string_view) {
  std::vector<Case<AttentionBackwardArgs>> out;
  for (const auto& c : attention_case_table()) {
    // One query row per head makes each gradient row hang on a handful of rounding events, too few for
    // the gate's ratios to measure anything; training never takes a backward of decode.
    if (c.name.rfind("decode", 0) == 0) continue;
    const std::vector<DType> dtypes = case_dtypes(c);
    out.push_back({c.name, c.tags, dtypes, [c](DType t, RandomKey k) {
                     AttentionArgs f = make_attention(c.shape, t, k, c.options, c.segments, c.sinks);
                     std::vector<Tensor> fwd = run_op<Attention>(f);
                     return AttentionBackwardArgs{random_input(f.q.shape(), t, {k.seed, k.stream + 4}),
                                                  f.q,
                                                  f.k,
                                                  f.v,
                                                  fwd[0],
                                                  fwd[1],
                                                  f.options};
                   }});
  }
  return out;
}

std::vector<Case<AttentionJvpArgs>> AttentionJvp::cases(std::string_view) {
  // lse_shift moves the given lse off the forward's: the tangents must not change (NOTE [attention
  // tangent]), as when the forward ran on an implementation that rounds its scores differently.
  auto make = [](const NamedAttentionCase& c, double lse_shift) {
    return [c, lse_shift](DType t, RandomKey k) {
      AttentionArgs f = make_attention(c.shape, t, k, c.options, c.segments, c.sinks);
      Tensor lse = run_op<Attention>(f)[1];
      if (lse_shift != 0) lse = add(lse, Tensor::full({}, lse_shift, lse.dtype()));
      AttentionJvpArgs a{f.q,
                         f.k,
                         f.v,
                         random_input(f.q.shape(), t, {k.seed, k.stream + 4}),
                         random_input(f.k.shape(), t, {k.seed, k.stream + 5}),
                         random_input(f.v.shape(), t, {k.seed, k.stream + 6}),
                         lse,
                         f.options,
                         Tensor()};
      if (c.sinks) a.t_sinks = random_input(f.options.sinks.shape(), stat_dtype(t), {k.seed, k.stream + 7});
      return a;
    };
  };
  std::vector<Case<AttentionJvpArgs>> out;
  for (const auto& c : attention_case_table()) {
    out.push_back({c.name, c.tags, case_dtypes(c), make(c, 0)});
    if (c.name == "sinks") out.push_back({"sinks_shifted_lse", c.tags, case_dtypes(c), make(c, 0.75)});
  }
  return out;
}

}  // namespace dew::ops

namespace dew {

AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v,
                          const AttentionOptions& options) {
  auto outs = ops::run_op<ops::Attention>(ops::AttentionArgs{q, k, v, options});
  return {outs[0], outs[1]};
}

AttentionGradients attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionResult& forward, const AttentionOptions& options) {
  const ops::AttentionBackwardArgs args{dout, q, k, v, forward.out, forward.lse, options};
  // A composite op (NOTE [attention's higher derivatives]): on inputs that need a derivative it is
  // computed by the dense pieces' ops, which carry it; else by the fused kernel.
  const std::vector<Tensor> outs =
      ops::differentiated(args.inputs())
          ? (ops::AttentionBackward::infer(args),
             ops::dense_attention_vjp(ops::dense_attention_at(q, k, v, options, forward.out, forward.lse),
                                      dout, Tensor(), q, k, v, options.sinks))
          : ops::run_op<ops::AttentionBackward>(args);
  return {outs[0], outs[1], outs[2], outs.size() > 3 ? outs[3] : Tensor()};
}

AttentionTangents attention_jvp(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& tq,
                                const Tensor& tk, const Tensor& tv, const Tensor& lse,
                                const AttentionOptions& options, const Tensor& t_sinks) {
  const ops::AttentionJvpArgs args{q, k, v, tq, tk, tv, lse, options, t_sinks};
  // Composite, as attention_backward; lse only shifts the kernels' exponents (NOTE [attention tangent]),
  // so the dense path computes its own.
  const std::vector<Tensor> outs = ops::differentiated(args.inputs())
                                       ? (ops::AttentionJvp::infer(args),
                                          ops::dense_attention_jvp(ops::dense_attention(q, k, v, options), tq,
                                                                   tk, tv, t_sinks, q.dtype(), lse.dtype()))
                                       : ops::run_op<ops::AttentionJvp>(args);
  return {outs[0], outs[1]};
}

}  // namespace dew
