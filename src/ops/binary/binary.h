// The two-input elementwise ops with numpy broadcasting: arithmetic (add sub mul div pow maximum
// minimum, output in the inputs' dtype) and comparisons (eq ne lt le gt ge, output bool).
#pragma once

#include "ops/binary/binary_fn.h"
#include "ops/op.h"

namespace dew::ops {

std::string_view binary_name(BinaryFn f);
BinaryFn binary_from_name(std::string_view name);

struct BinaryArgs {
  Tensor a, b;
  BinaryFn fn;
  DType dtype() const { return a.dtype(); }
  Device device() const { return a.device(); }
  std::vector<const Tensor*> inputs() const { return {&a, &b}; }
  std::vector<Tensor*> mutable_inputs() { return {&a, &b}; }
};

struct Binary {
  DEW_OP_TYPE_MEMBERS(BinaryArgs);
  static std::string_view name(const Args& a) { return binary_name(a.fn); }
  static std::string case_label(const Args& a);
  DEW_OP_RULES;
};

void add_binary_portable(select::Registry<BinaryArgs>& r);
void add_binary_cuda(select::Registry<BinaryArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_binary_cpu(select::Registry<BinaryArgs>& r))

}  // namespace dew::ops
