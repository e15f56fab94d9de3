// Indexing ops: each moves values, so each vjp moves gradients back (embedding through
// embedding_backward, gather and index_select through scatter_add, scatter_add through gather) and
// each jvp applies the op to the tangent. one_hot is non-differentiable; indices never have gradients.
#include "ops/index/index.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

// index_select's (K) index spread along axis to g's shape, as gather and scatter_add take it.
Tensor spread_index(const Tensor& index, const Tensor& g, int64_t axis) {
  Shape shape(size_t(g.dim()), 1);
  shape[size_t(axis)] = index.numel();
  return index.reshape(shape).expand(g.shape()).contiguous();
}

}  // namespace

Differentiation Index::differentiation(std::string_view op) {
  return op == "one_hot" ? Differentiation::non_differentiable : Differentiation::rules;
}

std::vector<bool> Index::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Index::vjp(const Args& a) {
  const SavedTensor index(a.index, name(a));
  const IndexFn f = a.fn;
  const int64_t axis = normalize_axis(a.axis, std::max<int64_t>(a.x.dim(), 1), name(a).data());
  const Shape x_shape = a.x.shape();
  const DType dtype = a.x.dtype();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor& g = d[0];
    const Tensor& ids = index.get();
    switch (f) {
      case IndexFn::embedding:
        return {embedding_backward(g, ids, x_shape[0]), Tensor()};
      case IndexFn::embedding_backward:  // linear in d_out: its vjp gathers the rows back
        return {embedding(g, ids), Tensor()};
      case IndexFn::index_select:
        return {scatter_add(Tensor::zeros(x_shape, dtype, g.device()), axis, spread_index(ids, g, axis), g),
                Tensor()};
      case IndexFn::gather:
        return {scatter_add(Tensor::zeros(x_shape, dtype, g.device()), axis, ids, g), Tensor()};
      case IndexFn::scatter_add:
        return {g, Tensor(), gather(g, axis, ids)};
      default:
        return {};
    }
  };
}

std::vector<Tensor> Index::jvp(const Args& a, const std::vector<Tensor>& outs, const std::vector<Tensor>& t) {
  const Tensor& tx = t[0];
  switch (a.fn) {
    case IndexFn::embedding:
      return {tx.defined() ? embedding(tx, a.index) : Tensor()};
    case IndexFn::embedding_backward:
      return {tx.defined() ? embedding_backward(tx, a.index, a.count) : Tensor()};
    case IndexFn::index_select:
      return {tx.defined() ? index_select(tx, a.axis, a.index) : Tensor()};
    case IndexFn::gather:
      return {tx.defined() ? gather(tx, a.axis, a.index) : Tensor()};
    case IndexFn::scatter_add: {
      const Tensor& ts = t[2];
      if (!tx.defined() && !ts.defined()) return {Tensor()};
      return {scatter_add(
          tx.defined() ? tx : Tensor::zeros(outs[0].shape(), outs[0].dtype(), outs[0].device()), a.axis,
          a.index, ts.defined() ? ts : Tensor::zeros(a.src.shape(), a.src.dtype(), a.src.device()))};
    }
    default:
      return {Tensor()};
  }
}

}  // namespace dew::ops
