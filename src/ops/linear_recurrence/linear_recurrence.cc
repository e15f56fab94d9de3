// linear_recurrence, linear_recurrence_backward and linear_recurrence_jvp: validation, output rules,
// registries, the cases they share, and the public function.
#include "ops/linear_recurrence/linear_recurrence.h"

#include <cmath>

namespace dew::ops {

DType recurrence_state_dtype(DType input) {
  return input == DType::f64 ? DType::f64 : DType::f32;
}

namespace {

void append_defined(std::vector<const Tensor*>& v, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined()) v.push_back(t);
}
void append_defined(std::vector<Tensor*>& v, std::initializer_list<Tensor*> ts) {
  for (Tensor* t : ts)
    if (t->defined()) v.push_back(t);
}

// Checks the forward's arguments; returns its outputs (out, state).
std::vector<OutputSpec> check_forward(const LinearRecurrenceArgs& a, const char* op) {
  require_same_device(op, a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()) && a.q.dim() == 4, "[{}] q is {}; expected floating (B,T,H,K)", op,
              a.q.describe());
  const int64_t B = a.q.size(0), T = a.q.size(1), H = a.q.size(2), K = a.q.size(3);
  const std::string dt(dtype_name(a.dtype()));
  DEW_REQUIRE(a.k.shape() == a.q.shape() && a.k.dtype() == a.dtype(),
              "[{}] k is {}; expected {}[{},{},{},{}] as q", op, a.k.describe(), dt, B, T, H, K);
  DEW_REQUIRE(
      a.v.dim() == 4 && a.v.size(0) == B && a.v.size(1) == T && a.v.size(2) == H && a.v.dtype() == a.dtype(),
      "[{}] v is {}; expected {}[{},{},{},V] (B,T,H,V)", op, a.v.describe(), dt, B, T, H);
  const int64_t V = a.v.size(3);
  DEW_REQUIRE(K >= 1 && V >= 1, "[{}] K {} and V {}; expected a state of at least 1 x 1 per head", op, K, V);
  DEW_REQUIRE(
      !a.gate.defined() || (a.gate.dtype() == a.dtype() &&
                            (a.gate.shape() == Shape({B, T, H}) || a.gate.shape() == a.q.shape())),
      "[{}] gate is {}; expected {}[{},{},{}] (one log-decay per head) or {}[{},{},{},{}] (one per key)", op,
      a.gate.describe(), dt, B, T, H, dt, B, T, H, K);
  DEW_REQUIRE(!a.beta.defined() || (a.beta.dtype() == a.dtype() && a.beta.shape() == Shape({B, T, H})),
              "[{}] beta is {}; expected {}[{},{},{}] (B,T,H), the delta rule's step", op, a.beta.describe(),
              dt, B, T, H);
  const DType state = recurrence_state_dtype(a.dtype());
  DEW_REQUIRE(
      !a.initial.defined() || (a.initial.dtype() == state && a.initial.shape() == Shape({B, H, K, V})),
      "[{}] initial is {}; expected {}[{},{},{},{}] (B,H,K,V), the state", op, a.initial.describe(),
      dtype_name(state), B, H, K, V);
  const Tensor& seg = a.options.segments;
  DEW_REQUIRE(!seg.defined() || (seg.dtype() == DType::i64 && seg.shape() == Shape({B, T})),
              "[{}] segments is {}; expected i64[{},{}] (B,T) document ids", op, seg.describe(), B, T);
  DEW_REQUIRE(std::isfinite(a.options.scale) && a.options.scale >= 0,
              "[{}] scale {}; expected a finite number >= 0 (0: 1/sqrt(K))", op, a.options.scale);
  return {{a.v.shape(), a.dtype()}, {{B, H, K, V}, state}};
}

// How a case draws its gates and the delta rule's inputs.
enum class GateKind { none, head, key };
struct RecurrenceCase {
  std::string name;
  std::vector<std::string> tags;
  std::vector<DType> dtypes;
  int64_t B, T, H, K, V;
  GateKind gate;
  bool delta, initial, segments;
  double scale = 0;
};

// Maps a fresh draw x (f64) elementwise and rounds to dtype.
Tensor drawn(const Shape& s, DType t, RandomKey key, const std::function<double(double)>& f) {
  std::vector<double> x = random_input(s, DType::f64, key).to_f64_vector();
  for (double& e : x) e = f(e);
  return Tensor::from_values(x, s, t);
}

// Inputs the models feed: decays in (0, 1) (log-decays -0.01 to about -0.3), the delta rule's keys of
// unit length and steps in (0, 1), so the state stays bounded however long the sequence.
LinearRecurrenceArgs make_forward(const RecurrenceCase& c, DType t, RandomKey k) {
  LinearRecurrenceArgs a;
  const Shape qk{c.B, c.T, c.H, c.K};
  a.q = random_input(qk, t, k);
  a.v = random_input({c.B, c.T, c.H, c.V}, t, {k.seed, k.stream + 2});
  if (c.delta) {
    std::vector<double> x = random_input(qk, DType::f64, {k.seed, k.stream + 1}).to_f64_vector();
    for (size_t r = 0; r < x.size(); r += size_t(c.K)) {
      double n = 0;
      for (int64_t i = 0; i < c.K; ++i) n += x[r + size_t(i)] * x[r + size_t(i)];
      for (int64_t i = 0; i < c.K; ++i) x[r + size_t(i)] /= std::sqrt(n);
    }
    a.k = Tensor::from_values(x, qk, t);
    a.beta =
        drawn({c.B, c.T, c.H}, t, {k.seed, k.stream + 3}, [](double x) { return 1 / (1 + std::exp(-x)); });
  } else {
    a.k = random_input(qk, t, {k.seed, k.stream + 1});
  }
  if (c.gate != GateKind::none)
    a.gate = drawn(c.gate == GateKind::key ? qk : Shape{c.B, c.T, c.H}, t, {k.seed, k.stream + 4},
                   [](double x) { return -0.01 - 0.1 * std::fabs(x); });
  if (c.initial)
    a.initial = random_input({c.B, c.H, c.K, c.V}, recurrence_state_dtype(t), {k.seed, k.stream + 5}, 0.5);
  if (c.segments) {  // documents of 13 tokens
    std::vector<double> ids;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.T; ++i) ids.push_back(double(i / 13 + 1));
    a.options.segments = Tensor::from_values(ids, {c.B, c.T}, DType::i64);
  }
  a.options.scale = c.scale;
  return a;
}

const std::vector<RecurrenceCase>& recurrence_case_table() {
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  const std::vector<DType> fast{DType::f32, DType::bf16};
  static const std::vector<RecurrenceCase> table{
      {"linear_attention", {"ci"}, all, 2, 21, 2, 8, 6, GateKind::none, false, false, false},
      {"ssd_head_decay", {"ci"}, all, 2, 37, 3, 8, 10, GateKind::head, false, true, false, 1.0},
      {"gla_key_decay", {"ci"}, all, 2, 37, 2, 12, 8, GateKind::key, false, true, false},
      {"delta_rule", {"ci"}, all, 2, 29, 2, 8, 8, GateKind::none, true, false, false},
      {"gated_delta_rule", {"ci"}, all, 2, 37, 2, 16, 8, GateKind::head, true, true, false},
      {"kda_key_decay_delta", {"ci"}, all, 1, 33, 2, 8, 12, GateKind::key, true, false, false},
      {"packed_documents", {"ci", "edge"}, all, 2, 40, 2, 8, 8, GateKind::head, true, true, true},
      {"decode_step", {"ci", "edge"}, all, 3, 1, 4, 16, 16, GateKind::head, true, true, false},
      // Rows wider than two vectors of lanes with a tail: the tiers' lane sums reassociate here.
      {"wide_rows", {"ci"}, all, 1, 12, 1, 8, 40, GateKind::head, true, true, false},
      {"gdn_1k", {"bench"}, fast, 1, 1024, 8, 128, 128, GateKind::head, true, false, false},
      {"gdn_4k", {"bench"}, fast, 1, 4096, 8, 128, 128, GateKind::head, true, false, false},
      {"gdn_16k", {"bench"}, fast, 1, 16384, 8, 128, 128, GateKind::head, true, false, false},
      {"gla_1k", {"bench"}, fast, 1, 1024, 8, 128, 128, GateKind::key, false, false, false},
      {"gdn_decode_32", {"bench"}, fast, 32, 1, 16, 128, 128, GateKind::head, true, true, false}};
  return table;
}

}  // namespace

std::vector<const Tensor*> LinearRecurrenceArgs::inputs() const {
  std::vector<const Tensor*> r{&q, &k, &v};
  append_defined(r, {&gate, &beta, &initial, &options.segments});
  return r;
}
std::vector<Tensor*> LinearRecurrenceArgs::mutable_inputs() {
  std::vector<Tensor*> r{&q, &k, &v};
  append_defined(r, {&gate, &beta, &initial, &options.segments});
  return r;
}

std::vector<const Tensor*> LinearRecurrenceBackwardArgs::inputs() const {
  std::vector<const Tensor*> v{&d_out};
  append_defined(v, {&d_state});
  for (const Tensor* t : forward.inputs()) v.push_back(t);
  return v;
}
std::vector<Tensor*> LinearRecurrenceBackwardArgs::mutable_inputs() {
  std::vector<Tensor*> v{&d_out};
  append_defined(v, {&d_state});
  for (Tensor* t : forward.mutable_inputs()) v.push_back(t);
  return v;
}

std::vector<const Tensor*> LinearRecurrenceJvpArgs::inputs() const {
  std::vector<const Tensor*> v = forward.inputs();
  append_defined(v, {&tq, &tk, &tv, &t_gate, &t_beta, &t_initial});
  return v;
}
std::vector<Tensor*> LinearRecurrenceJvpArgs::mutable_inputs() {
  std::vector<Tensor*> v = forward.mutable_inputs();
  append_defined(v, {&tq, &tk, &tv, &t_gate, &t_beta, &t_initial});
  return v;
}

std::string LinearRecurrence::case_label(const Args& a) {
  return fmt::format("{}{}{}", dtype_name(a.dtype()),
                     !a.gate.defined()  ? ""
                     : a.per_key_gate() ? " key decay"
                                        : " head decay",
                     a.beta.defined() ? " delta" : "");
}

double LinearRecurrence::flops(const Args& a) {
  // Per token and head: the update and the output, 2 K V each; the delta rule's prediction twice more.
  const double per_state = double(a.q.size(3)) * double(a.v.size(3));
  return double(a.q.size(0) * a.q.size(1) * a.q.size(2)) * per_state * (a.beta.defined() ? 8 : 4);
}

std::vector<OutputSpec> LinearRecurrence::infer(const Args& a) {
  return check_forward(a, "linear_recurrence");
}

std::vector<OutputSpec> LinearRecurrenceBackward::infer(const Args& a) {
  const char* op = "linear_recurrence_backward";
  const std::vector<OutputSpec> f = check_forward(a.forward, op);
  require_same_device(op, a.inputs());
  DEW_REQUIRE(a.d_out.shape() == f[0].shape && a.d_out.dtype() == f[0].dtype,
              "[{}] d_out is {}; expected {}{} as out", op, a.d_out.describe(), dtype_name(f[0].dtype),
              shape_str(f[0].shape));
  DEW_REQUIRE(!a.d_state.defined() || (a.d_state.shape() == f[1].shape && a.d_state.dtype() == f[1].dtype),
              "[{}] d_state is {}; expected {}{} as the final state", op, a.d_state.describe(),
              dtype_name(f[1].dtype), shape_str(f[1].shape));
  std::vector<OutputSpec> grads;
  for (const Tensor* t : a.forward.inputs())
    if (is_floating(t->dtype())) grads.push_back({t->shape(), t->dtype()});
  return grads;
}

std::vector<OutputSpec> LinearRecurrenceJvp::infer(const Args& a) {
  const char* op = "linear_recurrence_jvp";
  const std::vector<OutputSpec> f = check_forward(a.forward, op);
  require_same_device(op, a.inputs());
  const LinearRecurrenceArgs& p = a.forward;
  for (auto [tangent, primal, what] : {std::tuple{&a.tq, &p.q, "q"},
                                       {&a.tk, &p.k, "k"},
                                       {&a.tv, &p.v, "v"},
                                       {&a.t_gate, &p.gate, "gate"},
                                       {&a.t_beta, &p.beta, "beta"},
                                       {&a.t_initial, &p.initial, "initial"}})
    DEW_REQUIRE(tangent->defined() == primal->defined() &&
                    (!primal->defined() ||
                     (tangent->shape() == primal->shape() && tangent->dtype() == primal->dtype())),
                "[{}] the tangent of {} is {}; expected {} (one tangent for each input given, shaped as it)",
                op, what, tangent->describe(), primal->defined() ? primal->describe() : "undefined");
  return f;
}

const select::Registry<LinearRecurrenceArgs>& LinearRecurrence::registry() {
  static const select::Registry<LinearRecurrenceArgs> r = [] {
    select::Registry<LinearRecurrenceArgs> reg;
    // Token by token first: on the CPUs measured (docs/perf.md) it is as fast as the chunks, and
    // faster with per-key decays; the chunks stay selectable (DEW_IMPL) and gated.
    avx512::add_linear_recurrence_token_by_token(reg);
    avx2::add_linear_recurrence_token_by_token(reg);
    avx512::add_linear_recurrence_cpu(reg);
    avx2::add_linear_recurrence_cpu(reg);
    add_linear_recurrence_portable(reg);
    return reg;
  }();
  return r;
}

const select::Registry<LinearRecurrenceBackwardArgs>& LinearRecurrenceBackward::registry() {
  static const select::Registry<LinearRecurrenceBackwardArgs> r = [] {
    select::Registry<LinearRecurrenceBackwardArgs> reg;
    avx512::add_linear_recurrence_backward_cpu(reg);
    avx2::add_linear_recurrence_backward_cpu(reg);
    add_linear_recurrence_backward_portable(reg);
    return reg;
  }();
  return r;
}

const select::Registry<LinearRecurrenceJvpArgs>& LinearRecurrenceJvp::registry() {
  static const select::Registry<LinearRecurrenceJvpArgs> r = [] {
    select::Registry<LinearRecurrenceJvpArgs> reg;
    avx512::add_linear_recurrence_jvp_cpu(reg);
    avx2::add_linear_recurrence_jvp_cpu(reg);
    add_linear_recurrence_jvp_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<LinearRecurrenceArgs>> LinearRecurrence::cases(std::string_view) {
  std::vector<Case<LinearRecurrenceArgs>> out;
  for (const RecurrenceCase& c : recurrence_case_table())
    out.push_back({c.name, c.tags, c.dtypes, [c](DType t, RandomKey k) { return make_forward(c, t, k); }});
  return out;
}

std::vector<Case<LinearRecurrenceBackwardArgs>> LinearRecurrenceBackward::cases(std::string_view) {
  std::vector<Case<LinearRecurrenceBackwardArgs>> out;
  for (const RecurrenceCase& c : recurrence_case_table()) {
    if (c.T == 1) continue;  // training takes no backward of a decode step
    out.push_back(
        {c.name, c.tags, c.dtypes, [c](DType t, RandomKey k) {
           LinearRecurrenceArgs f = make_forward(c, t, k);
           return LinearRecurrenceBackwardArgs{
               random_input({c.B, c.T, c.H, c.V}, t, {k.seed, k.stream + 6}),
               random_input({c.B, c.H, c.K, c.V}, recurrence_state_dtype(t), {k.seed, k.stream + 7}), f};
         }});
  }
  return out;
}

std::vector<Case<LinearRecurrenceJvpArgs>> LinearRecurrenceJvp::cases(std::string_view) {
  std::vector<Case<LinearRecurrenceJvpArgs>> out;
  for (const RecurrenceCase& c : recurrence_case_table())
    out.push_back({c.name, c.tags, c.dtypes, [c](DType t, RandomKey k) {
                     LinearRecurrenceJvpArgs a;
                     a.forward = make_forward(c, t, k);
                     uint64_t stream = k.stream + 8;
                     const auto tangent = [&](const Tensor& p) {
                       return p.defined() ? random_input(p.shape(), p.dtype(), {k.seed, stream++}) : Tensor();
                     };
                     const LinearRecurrenceArgs& f = a.forward;
                     a.tq = tangent(f.q), a.tk = tangent(f.k), a.tv = tangent(f.v);
                     a.t_gate = tangent(f.gate), a.t_beta = tangent(f.beta), a.t_initial = tangent(f.initial);
                     return a;
                   }});
  return out;
}

}  // namespace dew::ops

namespace dew {

RecurrenceResult linear_recurrence(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& gate,
                                   const Tensor& beta, const Tensor& initial,
                                   const RecurrenceOptions& options) {
  ops::LinearRecurrenceArgs a{q, k, v, gate, beta, initial, options};
  std::vector<Tensor> r = ops::run_op<ops::LinearRecurrence>(a);
  return {r[0], r[1]};
}

}  // namespace dew
