// Indexing ops: names, validation (every index checked), output rules, registry, cases and public
// functions. The portable kernels are in portable.cc, the float64 references in reference.cc.
#include "ops/index/index.h"

namespace dew::ops {
namespace {

constexpr std::array<std::string_view, 6> kNames{"embedding", "embedding_backward", "index_select",
                                                 "gather",    "scatter_add",        "one_hot"};

void check_indices(const char* op, const Tensor& index, int64_t limit, const char* what) {
  DEW_REQUIRE(index.dtype() == DType::i64, "[{}] index is {}; expected i64", op, index.describe());
  std::vector<double> v = index.to_f64_vector();
  for (size_t i = 0; i < v.size(); ++i)
    DEW_REQUIRE(v[i] >= 0 && v[i] < double(limit), "[{}] index[{}] is {}; expected 0 <= index < {} ({})", op,
                i, int64_t(v[i]), limit, what);
}

}  // namespace

void add_index_portable(select::Registry<IndexArgs>& r);
void add_index_cuda(select::Registry<IndexArgs>& r);

std::vector<const Tensor*> IndexArgs::inputs() const {
  std::vector<const Tensor*> v;
  for (const Tensor* t : {&x, &index, &src})
    if (t->defined()) v.push_back(t);
  return v;
}
std::vector<Tensor*> IndexArgs::mutable_inputs() {
  std::vector<Tensor*> v;
  for (Tensor* t : {&x, &index, &src})
    if (t->defined()) v.push_back(t);
  return v;
}

std::string_view Index::name(const Args& a) {
  return kNames[size_t(a.fn)];
}

std::vector<OutputSpec> Index::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  const Tensor& x = a.x;
  switch (a.fn) {
    case IndexFn::embedding: {
      DEW_REQUIRE(x.dim() == 2, "[embedding] weight is {}; expected a (V,C) table", x.describe());
      check_indices(op, a.index, x.size(0), "the table's rows");
      Shape s = a.index.shape();
      s.push_back(x.size(1));
      return {{s, x.dtype()}};
    }
    case IndexFn::embedding_backward: {
      DEW_REQUIRE(is_floating(x.dtype()) && x.dim() == a.index.dim() + 1 &&
                      Shape(x.shape().begin(), x.shape().end() - 1) == a.index.shape(),
                  "[embedding_backward] d_out is {} for ids {}; expected a floating (ids..., C)",
                  x.describe(), a.index.describe());
      check_indices(op, a.index, a.count, "num_embeddings");
      return {{{a.count, x.size(-1)}, x.dtype()}};
    }
    case IndexFn::index_select: {
      int64_t axis = normalize_axis(a.axis, x.dim(), op);
      DEW_REQUIRE(a.index.dim() == 1, "[index_select] index is {}; expected a vector (K)",
                  a.index.describe());
      check_indices(op, a.index, x.size(axis), "the axis length");
      Shape s = x.shape();
      s[size_t(axis)] = a.index.size(0);
      return {{s, x.dtype()}};
    }
    case IndexFn::gather:
    case IndexFn::scatter_add: {
      int64_t axis = normalize_axis(a.axis, x.dim(), op);
      DEW_REQUIRE(a.index.dim() == x.dim(), "[{}] index is {}; expected the rank of x {}", op,
                  a.index.describe(), x.describe());
      for (int64_t d = 0; d < x.dim(); ++d)
        DEW_REQUIRE(d == axis || a.index.size(d) <= x.size(d),
                    "[{}] index is {} and x is {}; expected index.size({}) <= x.size({}) off the axis", op,
                    a.index.describe(), x.describe(), d, d);
      check_indices(op, a.index, x.size(axis), "the axis length");
      if (a.fn == IndexFn::gather) return {{a.index.shape(), x.dtype()}};
      DEW_REQUIRE(a.src.shape() == a.index.shape() && a.src.dtype() == x.dtype() && is_floating(x.dtype()),
                  "[scatter_add] src is {}; expected {}{} (index's shape, x's floating dtype)",
                  a.src.describe(), dtype_name(x.dtype()), shape_str(a.index.shape()));
      return {{x.shape(), x.dtype()}};
    }
    case IndexFn::one_hot: {
      DEW_REQUIRE(a.count > 0, "[one_hot] num_classes is {}; expected > 0", a.count);
      check_indices(op, a.index, a.count, "num_classes");
      Shape s = a.index.shape();
      s.push_back(a.count);
      return {{s, DType::i64}};
    }
  }
  return {};
}

const select::Registry<IndexArgs>& Index::registry() {
  static const select::Registry<IndexArgs> r = [] {
    select::Registry<IndexArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_index_cuda, reg);
    add_index_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<IndexArgs>> Index::cases(std::string_view op) {
  IndexFn fn = IndexFn::embedding;
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == op) fn = IndexFn(i);
  auto ids = [](Shape s, int64_t limit, RandomKey k) {
    Tensor t = Tensor::empty(s, DType::i64);
    fill_randint(t, {k.seed, k.stream + 7, 0}, 0, limit);
    return t;
  };
  auto make = [=](Shape x_shape, Shape index_shape, int64_t axis, int64_t count) {
    return [=](DType t, RandomKey k) {
      IndexArgs a{Tensor(), Tensor(), Tensor(), axis, count, fn};
      switch (fn) {
        case IndexFn::embedding:
          a.x = random_input(x_shape, t, k), a.index = ids(index_shape, x_shape[0], k);
          break;
        case IndexFn::embedding_backward: {
          a.index = ids(index_shape, count, k);
          Shape d_shape = index_shape;
          d_shape.push_back(x_shape.empty() ? 7 : x_shape.back());
          a.x = random_input(d_shape, t, k);
          break;
        }
        case IndexFn::index_select:
        case IndexFn::gather:
        case IndexFn::scatter_add:
          a.x = random_input(x_shape, t, k);
          a.index = ids(index_shape, x_shape[size_t(axis < 0 ? axis + int64_t(x_shape.size()) : axis)], k);
          if (fn == IndexFn::scatter_add) a.src = random_input(index_shape, t, {k.seed, k.stream + 1});
          break;
        case IndexFn::one_hot:
          a.index = ids(index_shape, count, k);
          break;
      }
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  switch (fn) {
    case IndexFn::embedding:
      return {{"vocab_50", {"ci"}, all, make({50, 12}, {3, 17}, 0, 0)},
              {"gpt2_tokens", {"bench"}, {DType::f32, DType::bf16}, make({50257, 768}, {4, 1024}, 0, 0)}};
    case IndexFn::embedding_backward:
      return {{"repeated_ids", {"ci"}, all, make({}, {4, 60}, 0, 9)},
              {"gpt2_tokens", {"bench"}, {DType::f32}, make({768}, {4, 1024}, 0, 50257)}};
    case IndexFn::index_select:
      return {{"middle_axis", {"ci"}, all, make({4, 9, 5}, {13}, 1, 0)}};
    case IndexFn::gather:
      return {{"last_axis", {"ci"}, all, make({6, 20}, {6, 7}, -1, 0)},
              {"first_axis_smaller", {"ci", "edge"}, all, make({8, 5, 3}, {4, 3, 2}, 0, 0)}};
    case IndexFn::scatter_add:
      return {{"last_axis", {"ci"}, all, make({6, 20}, {6, 30}, -1, 0)},
              {"first_axis_smaller", {"ci", "edge"}, all, make({8, 5, 3}, {12, 3, 2}, 0, 0)}};
    case IndexFn::one_hot:
      return {{"classes_11", {"ci"}, {DType::i64}, make({}, {5, 7}, 0, 11)}};
  }
  return {};
}

}  // namespace dew::ops

namespace dew {
namespace {
Tensor index_op(ops::IndexFn fn, const Tensor& x, const Tensor& index, const Tensor& src, int64_t axis,
                int64_t count) {
  return ops::run_op<ops::Index>(ops::IndexArgs{x, index, src, axis, count, fn})[0];
}
}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  return index_op(ops::IndexFn::embedding, weight, ids, {}, 0, 0);
}
Tensor embedding_backward(const Tensor& d_out, const Tensor& ids, int64_t num_embeddings) {
  return index_op(ops::IndexFn::embedding_backward, d_out, ids, {}, 0, num_embeddings);
}
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  return index_op(ops::IndexFn::index_select, x, index, {}, axis, 0);
}
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  return index_op(ops::IndexFn::gather, x, index, {}, axis, 0);
}
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  return index_op(ops::IndexFn::scatter_add, x, index, src, axis, 0);
}
Tensor one_hot(const Tensor& ids, int64_t num_classes) {
  return index_op(ops::IndexFn::one_hot, {}, ids, {}, 0, num_classes);
}

}  // namespace dew
