// Layout ops, one family: concat (along an axis), split (into sizes along an axis; several outputs),
// pad (constant value; (before, after) per dim from the last dim backwards, as torch.nn.functional.pad),
// permute_copy (a contiguous copy in a new axis order: the transpose copy), tril and triu (zero above or
// below a diagonal of the last two dims), fill and arange (no input; any dtype).
#pragma once

#include "ops/op.h"

namespace dew::ops {

enum class LayoutFn : uint8_t { concat, split, pad, permute_copy, tril, triu, fill, arange };

struct LayoutArgs {
  std::vector<Tensor> xs;                 // inputs (none for fill and arange)
  std::vector<int64_t> ints;              // split sizes, pad amounts, permutation, fill shape
  int64_t axis = 0;                       // concat/split axis; tril/triu diagonal
  double value = 0, start = 0, step = 1;  // pad/fill value; arange start and step (value = end)
  DType out_dtype = DType::f32;           // fill and arange
  LayoutFn fn;
  DType dtype() const { return xs.empty() ? out_dtype : xs[0].dtype(); }
  Device device() const { return xs.empty() ? Device::cpu() : xs[0].device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct Layout {
  DEW_OP_TYPE_MEMBERS(LayoutArgs);
  static std::string_view name(const Args& a);
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

// The view of pad's output `out` where its input lands (pad's args a).
Tensor padded_interior(const Tensor& out, const LayoutArgs& a);
// arange's element count: ceil((end - start) / step), negative when the range is empty.
int64_t arange_length(const LayoutArgs& a);

// The layout ops by views and strided copies (any device), but tril/triu's zeroing (the cpu's).
void layout_copies(const LayoutArgs& a, std::vector<Tensor>& outs);
void add_layout_cuda(select::Registry<LayoutArgs>& r);

}  // namespace dew::ops
