// Indexing ops, one family: embedding (rows of a (V,C) table at ids), embedding_backward (the
// scatter-add of (..., C) gradients into a (V,C) table, summed in id order so the result does not
// depend on threads), index_select (slices along an axis), gather and scatter_add along an axis (as
// torch.gather and Tensor.scatter_add), one_hot (i64). Indices are i64 and checked before use.
#pragma once

#include "ops/op.h"

namespace dew::ops {

enum class IndexFn : uint8_t { embedding, embedding_backward, index_select, gather, scatter_add, one_hot };

struct IndexArgs {
  Tensor x, index, src;  // x: the table/data (absent for one_hot); src: scatter_add's values
  int64_t axis = 0;
  int64_t count = 0;  // embedding_backward's V, one_hot's number of classes
  IndexFn fn;
  DType dtype() const { return x.defined() ? x.dtype() : DType::i64; }
  Device device() const { return index.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct Index {
  DEW_OP_TYPE_MEMBERS(IndexArgs);
  static std::string_view name(const Args& a);
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

}  // namespace dew::ops
