// where: output rule, reference, portable implementation (a selection, so exact), cases.
#include "ops/where/where.h"

#include "ops/elementwise.h"

namespace dew::ops {
namespace {

template <class T>
void where_portable(const WhereArgs& args, Tensor& out) {
  T* y = out.data<T>();
  for_each_row<3>(out.shape(), {args.condition, args.a, args.b}, [&](const RowView<3>& v, int64_t o) {
    const bool* c = static_cast<const bool*>(v.in[0]);
    const T* a = static_cast<const T*>(v.in[1]);
    const T* b = static_cast<const T*>(v.in[2]);
    for (int64_t i = 0; i < v.length; ++i)
      y[o + i] = c[i * v.stride[0]] ? a[i * v.stride[1]] : b[i * v.stride[2]];
  });
}

}  // namespace

std::vector<OutputSpec> Where::infer(const Args& a) {
  require_same_device("where", a.inputs());
  DEW_REQUIRE(a.condition.dtype() == DType::boolean, "[where] condition is {}; expected a bool tensor",
              a.condition.describe());
  DEW_REQUIRE(a.a.dtype() == a.b.dtype(), "[where] a is {} and b is {}; expected one dtype", a.a.describe(),
              a.b.describe());
  Shape s =
      broadcast_shapes(broadcast_shapes(a.condition.shape(), a.a.shape(), "where"), a.b.shape(), "where");
  return {{s, a.dtype()}};
}

std::vector<Truth> Where::reference(const Args& args) {
  Shape s = infer(args)[0].shape;
  auto c = args.condition.expand(s).to_f64_vector(), a = args.a.expand(s).to_f64_vector(),
       b = args.b.expand(s).to_f64_vector();
  std::vector<double> y(c.size());
  for (size_t i = 0; i < c.size(); ++i) y[i] = c[i] != 0 ? a[i] : b[i];
  DType out = is_floating(args.dtype()) ? DType::f64 : args.dtype();
  return {{Tensor::from_values(y, s, out), is_floating(out) ? Tensor::zeros(s, DType::f64) : Tensor(), 0}};
}

const select::Registry<WhereArgs>& Where::registry() {
  static const select::Registry<WhereArgs> r = [] {
    select::Registry<WhereArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_where_cuda, reg);
    reg.add({"portable", {select::on_cpu<WhereArgs>()}, [](const WhereArgs& a, std::vector<Tensor>& outs) {
               visit_dtype(a.dtype(), [&](auto zero) { where_portable<decltype(zero)>(a, outs[0]); });
             }});
    return reg;
  }();
  return r;
}

std::vector<Case<WhereArgs>> Where::cases(std::string_view) {
  auto make = [](Shape sc, Shape sa, Shape sb) {
    return [=](DType t, RandomKey k) {
      Tensor cond = Tensor::empty(sc, DType::boolean);
      fill_bernoulli(cond, {k.seed, k.stream + 9, 0}, 0.5);
      return WhereArgs{cond, random_input(sa, t, k), random_input(sb, t, {k.seed, k.stream + 1})};
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"same_shape", {"ci"}, all, make({9, 40}, {9, 40}, {9, 40})},
          {"broadcast", {"ci", "edge"}, all, make({5, 1}, {1, 7}, {5, 7})}};
}

}  // namespace dew::ops

namespace dew {
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return ops::run_op<ops::Where>(ops::WhereArgs{condition, a, b})[0];
}
}  // namespace dew
