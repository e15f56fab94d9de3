// grouped_matmul: the GEMM template's grouped products, for mixture-of-experts layers. The rows of a
// (T,K) are sorted by group, group g holding sizes[g] rows (ragged, possibly none; the sizes sum to T):
//   grouped_matmul:             out (T,N) = a_g @ op(b[g]),  b (G,K,N), or (G,N,K) with transpose_b
//                               (an expert's nn.Linear weight, (out, in));
//   grouped_matmul_weight_grad: out (G,P,Q) = a_g^T @ b_g for a (T,P), b (T,Q): the weight gradient,
//                               zeros for an empty group.
// f64/f32/bf16/f16, one dtype for a and b; sizes i64 on the host. bf16 and f16 accumulate in f32.
#pragma once

#include <vector>

#include "ops/op.h"

namespace dew::ops {

struct GroupedMatmulArgs {
  Tensor a, b, sizes;
  bool transpose_b = false;  // grouped_matmul: b holds each group's (N,K)
  bool weight_grad = false;  // grouped_matmul_weight_grad
  DType dtype() const { return a.dtype(); }
  Device device() const { return a.device(); }
  std::vector<const Tensor*> inputs() const { return {&a, &b, &sizes}; }
  std::vector<Tensor*> mutable_inputs() { return {&a, &b, &sizes}; }
};

// The first row of each group and one past the last: G + 1 offsets (validated by infer).
std::vector<int64_t> group_offsets(const GroupedMatmulArgs& a);

struct GroupedMatmul {
  DEW_OP_TYPE_MEMBERS(GroupedMatmulArgs);
  static std::string_view name(const Args& a) {
    return a.weight_grad ? "grouped_matmul_weight_grad" : "grouped_matmul";
  }
  static std::string case_label(const Args& a);
  static double flops(const Args& a);  // 2 T K N, however the rows are grouped
  DEW_OP_RULES;
};

void add_grouped_matmul_portable(select::Registry<GroupedMatmulArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_grouped_matmul_cpu(select::Registry<GroupedMatmulArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_grouped_matmul_pairs_cpu(select::Registry<GroupedMatmulArgs>& r))

}  // namespace dew::ops
