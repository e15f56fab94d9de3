// The float64 gate (docs/gate.md): judges one implementation of one op on one case at
// one dtype against the float64 reference, with the portable implementation at the same dtype as the
// reference arm. Used by the test suite (OpSuite) and by `dew check`.
#pragma once

#include <dew/runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/op.h"

namespace dew::gate {

struct OutputReport {
  // Squared errors against the truth of the candidate and of the portable base, per row group (the
  // last dim, grouped up to 256 elements), summed over the draws pooled so far; every RMS derives
  // from these.
  std::vector<double> group_sq_candidate, group_sq_base;
  std::vector<int64_t> group_elements;
  int64_t unwritten = 0;      // NaN where the truth is a number: never written
  int64_t outside_bound = 0;  // elements beyond their certified roundoff bound
  int64_t integer_mismatch = 0;
  std::string first_violation;
  int64_t elements() const;
  double rms_candidate() const;
  double rms_base() const;
  double worst_row_candidate() const;
  double worst_row_base() const;
  double rms_ratio() const;
  double worst_row_ratio() const;
  void merge(const OutputReport& other);  // pools the errors of another draw of the same output
};

// An RMS over few elements, or over errors dominated by a few large ones, is a noisy estimate (a
// scalar's "RMS ratio" is a coin toss), so every check pools its errors over kMinDraws independent
// draws, and outputs under kPooledElements elements over enough draws to reach it (at most kMaxDraws).
inline constexpr int64_t kPooledElements = 2048;
inline constexpr int kMinDraws = 4;
inline constexpr int kMaxDraws = 64;

struct Report {
  std::string op, implementation, case_name;
  DType dtype = DType::f32;
  uint64_t seed = 0;
  bool ran = false;  // false: the implementation refused the case (not a failure)
  std::string refusal;
  std::vector<OutputReport> outputs;
  bool passed() const;
  std::string verdict() const;  // "pass", "FAIL: ...", "skip: ..."
};

// A floating tensor's values in f64 (the truth's inputs); others as they are.
inline Tensor upcast(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::f64
             ? Tensor::from_values(t.to_f64_vector(), t.shape(), DType::f64)
             : t;
}

// Judges candidate vs base vs truth for one output; `dtype` is the call's compute dtype. A truth
// without a magnitude (a composition of ops) is judged by the RMS and worst-row ratios alone.
OutputReport compare_output(const Tensor& candidate, const Tensor& base, const ops::Truth& truth,
                            DType dtype);

// The seed for a run: DEW_GATE_SEED when set (to replay a failure), else fresh from the clock.
uint64_t gate_seed();
// The most draws a check pools: DEW_GATE_DRAWS when set (1 for runs where the verdicts are not the
// point: under CPU emulation, tests/cpu_emulated.sh; the ratios of small outputs are then noise),
// else kMaxDraws.
int gate_max_draws();

// The device an implementation runs on: cuda:0 for "cuda.*" implementations, else the cpu. The gate
// draws inputs on the cpu, moves them there, and reads the outputs back.
Device implementation_device(std::string_view impl_name);
// Why an implementation cannot run on this machine at all (a CUDA one without a device); empty if it can.
std::string machine_refusal(std::string_view impl_name);

// The permutation of t's dims by decreasing stride when t so permuted is contiguous (a transposed or
// permuted view of contiguous data); empty otherwise.
std::vector<int64_t> dense_order(const Tensor& t);
// t on `device` with its layout: a permuted view arrives as the same permuted view of a contiguous
// copy, so a kernel there reads it through its strides; other views arrive contiguous.
Tensor to_device_keeping_layout(const Tensor& t, Device device);

// The draw's inputs moved to `device`.
template <class Args>
Args on_device(Args args, Device device) {
  for (Tensor* t : args.mutable_inputs())
    if (t->defined()) *t = to_device_keeping_layout(*t, device);
  return args;
}

template <class Op>
Report run_gate(const std::string& op_name, const std::string& impl_name,
                const ops::Case<typename Op::Args>& c, DType dtype, uint64_t seed) {
  using Args = typename Op::Args;
  Report report{op_name, impl_name, c.name, dtype, seed};
  if (std::string why = machine_refusal(impl_name); !why.empty()) {
    report.refusal = why;
    return report;
  }
  const Device device = implementation_device(impl_name);
  Args args = c.make(dtype, RandomKey{seed, 0x6a7e, 0});
  const auto& registry = Op::registry();
  const auto* impl = registry.find(impl_name);
  const auto* base = registry.find("portable");
  DEW_REQUIRE(impl && base, "[gate] {} has no implementation '{}' or no portable one", op_name, impl_name);
  auto verdict = registry.judge(*impl, on_device(args, device));
  if (!verdict.eligible) {
    report.refusal = verdict.requirement + " (" + verdict.reason + ")";
    return report;
  }
  auto poisoned = [&](const Args& placed) {
    std::vector<Tensor> outs = ops::allocate_outputs<Op>(placed);
    for (Tensor& t : outs)
      if (is_floating(t.dtype())) t = Tensor::full(t.shape(), std::nan(""), t.dtype(), t.device());
    return outs;
  };
  auto judge_draw = [&](const Args& draw) {
    const Args placed = on_device(draw, device);
    std::vector<Tensor> cand = poisoned(placed), ref_arm = poisoned(draw);
    impl->run(placed, cand);
    for (Tensor& t : cand) t = t.to(Device::cpu());
    base->run(draw, ref_arm);
    Args args64 = draw;
    for (Tensor* t : args64.mutable_inputs()) *t = upcast(*t);
    std::vector<ops::Truth> truth = Op::reference(args64);
    std::vector<OutputReport> outs;
    for (size_t i = 0; i < cand.size(); ++i)
      outs.push_back(compare_output(cand[i], ref_arm[i], truth[i], dtype));
    return outs;
  };
  report.ran = true;
  report.outputs = judge_draw(args);
  int64_t fewest = kPooledElements;
  for (const auto& o : report.outputs) fewest = std::min(fewest, std::max<int64_t>(o.elements(), 1));
  const int draws = int(std::min<int64_t>(
      gate_max_draws(), std::max<int64_t>(kMinDraws, (kPooledElements + fewest - 1) / fewest)));
  for (int d = 1; d < draws; ++d) {
    auto more = judge_draw(c.make(dtype, RandomKey{seed, 0x6a7e + uint64_t(d) * 0x10000, 0}));
    for (size_t i = 0; i < more.size(); ++i)
      if (d < kMinDraws || report.outputs[i].elements() < kPooledElements) report.outputs[i].merge(more[i]);
  }
  return report;
}

}  // namespace dew::gate
