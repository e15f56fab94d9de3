// The shape every operation shares: typed Args, an output rule, a float64 reference with the error
// magnitudes the gate needs, named cases, and a registry. run_op() is the one call path:
// validate + infer outputs -> allocate -> select -> run.
#pragma once

#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/tensor.h>

#include <string>
#include <vector>

#include "ops/differentiate.h"
#include "select/op_profile.h"
#include "select/registry.h"
#include "select/requirements.h"

// Declares a function that each CPU tier's cpu.cc defines in its own namespace (CMake's dew_cpu_tiers).
#define DEW_DECLARE_CPU_TIERS(...) \
  namespace avx2 {                 \
  __VA_ARGS__;                     \
  }                                \
  namespace avx512 {               \
  __VA_ARGS__;                     \
  }

// An op's registry adds its CUDA implementations through this, the one place that knows whether
// the build has them (CMake defines DEW_WITH_CUDA for dew_ops when the toolkit is found).
#if DEW_WITH_CUDA
#define DEW_CUDA_IMPLEMENTATIONS(adder, registry) adder(registry)
#else
#define DEW_CUDA_IMPLEMENTATIONS(adder, registry) ((void)0)
#endif

namespace dew::ops {

struct OutputSpec {
  Shape shape;
  DType dtype;
};

// The float64 reference's answer for one output: the value, and the error scale of each element.
// NOTE [certified bound]: an element computed by `steps` roundings at unit roundoff u from terms whose
// absolute values sum to `magnitude` is off by at most gamma(steps, u) * magnitude (Higham, ch. 3).
// The gate allows twice that (candidate and reference both round) plus the output's own rounding.
struct Truth {
  Tensor value;      // f64 (or the output's integer dtype, compared exactly)
  Tensor magnitude;  // f64, same shape; undefined for integer outputs
  int64_t steps = 1;
};

template <class Args>
struct Case {
  std::string name;
  std::vector<std::string> tags;  // "ci", "bench", "edge"
  std::vector<DType> dtypes;
  std::function<Args(DType, RandomKey)> make;  // fresh random inputs, never zeros
};

// The Args of an op reading one tensor x: ops extend it with their attributes.
struct OneInputArgs {
  Tensor x;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const { return {&x}; }
  std::vector<Tensor*> mutable_inputs() { return {&x}; }
};

// Normal draws kept away from zero (|x| >= 0.05), so no input is accidentally exact or zero.
Tensor random_input(const Shape& shape, DType dtype, RandomKey key, double scale = 1.0);

template <class Op>
std::vector<Tensor> allocate_outputs(const typename Op::Args& args) {
  std::vector<Tensor> outs;
  for (const OutputSpec& s : Op::infer(args)) outs.push_back(Tensor::empty(s.shape, s.dtype, args.device()));
  return outs;
}

// The op profile's label and FLOP count of a call (select/op_profile.h): an op may give a
// profile_label (matmul: its M x N x K) and flops; otherwise its case label and none.
template <class Op>
void run_profiled(const select::Implementation<typename Op::Args>& impl, const typename Op::Args& args,
                  std::vector<Tensor>& outs) {
  select::OpTimer timer(
      Op::name(args),
      [&] {
        if constexpr (requires { Op::profile_label(args); })
          return Op::profile_label(args);
        else
          return Op::case_label(args);
      },
      [&] {
        if constexpr (requires { Op::flops(args); })
          return Op::flops(args);
        else
          return 0.0;
      });
  impl.run(args, outs);
}

// Runs into caller-provided outputs of the inferred shapes and dtypes (contiguous).
template <class Op>
void run_op_into(const typename Op::Args& args, std::vector<Tensor>& outs) {
  std::vector<OutputSpec> specs = Op::infer(args);
  DEW_REQUIRE(outs.size() == specs.size(), "[{}] {} outputs given; expected {}", Op::name(args), outs.size(),
              specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    DEW_REQUIRE(
        outs[i].shape() == specs[i].shape && outs[i].dtype() == specs[i].dtype && outs[i].is_contiguous(),
        "[{}] output {} is {}; expected a contiguous {}{}", Op::name(args), i, outs[i].describe(),
        dtype_name(specs[i].dtype), shape_str(specs[i].shape));
  const auto& impl = Op::registry().select(Op::name(args), args, Op::case_label(args));
  run_profiled<Op>(impl, args, outs);
  for (Tensor& out : outs) out.bump_version();
}

// The public ops' call path: the kernel runs untracked (its internal views stay off the tape), then
// the outputs join differentiation (ops/differentiate.h).
template <class Op>
std::vector<Tensor> run_op(const typename Op::Args& args) {
  std::vector<Tensor> outs;
  {
    detail::Untracked kernel_scope;
    outs = allocate_outputs<Op>(args);
    const auto& impl = Op::registry().select(Op::name(args), args, Op::case_label(args));
    run_profiled<Op>(impl, args, outs);
  }
  if constexpr (requires { Op::vjp(args); })
    differentiate<Op>(args, outs);
  else
    refuse_derivative_without_rules(Op::name(args), args.inputs());
  return outs;
}

// Every input on one device; refuses naming both devices.
void require_same_device(const char* op, const std::vector<const Tensor*>& inputs);

// The members every op type declares: its Args, its output rule (validation included), its float64
// reference (reference.cc), its registry and its cases. An op type adds its name, its case_label
// (DEW_CASE_LABEL_BY_DTYPE where the dtype says enough) and how it is differentiated (DEW_OP_RULES).
#define DEW_OP_TYPE_MEMBERS(ArgsType)                      \
  using Args = ArgsType;                                   \
  static std::vector<OutputSpec> infer(const Args& a);     \
  static std::vector<Truth> reference(const Args& args64); \
  static const select::Registry<Args>& registry();         \
  static std::vector<Case<Args>> cases(std::string_view op)
#define DEW_CASE_LABEL_BY_DTYPE                  \
  static std::string case_label(const Args& a) { \
    return std::string(dtype_name(a.dtype()));   \
  }

}  // namespace dew::ops
