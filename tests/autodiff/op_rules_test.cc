// Every op with rules, differentiated in float64: the vjp (backward) and the jvp against central
// differences of the op itself, and against each other (derivative_check.h).
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "check_derivatives.h"

namespace dew {
namespace {

using testing::check_derivatives;
using testing::draw;
using Ts = std::vector<Tensor>;

TEST(OpRules, Unary) {
  const Tensor x = draw({3, 5}, 1);
  const Tensor positive = abs(draw({3, 5}, 2));
  struct Case {
    const char* name;
    Tensor (*fn)(const Tensor&);
    bool positive_only;
  };
  const Case cases[] = {{"neg", neg, false},       {"abs", abs, false},   {"exp", exp, false},
                        {"log", log, true},        {"sqrt", sqrt, true},  {"rsqrt", rsqrt, true},
                        {"square", square, false}, {"tanh", tanh, false}, {"sigmoid", sigmoid, false},
                        {"silu", silu, false},     {"relu", relu, false}};
  for (const Case& c : cases)
    check_derivatives(c.name, [&](const Ts& in) { return c.fn(in[0]); }, {c.positive_only ? positive : x});
  check_derivatives("gelu", [](const Ts& in) { return gelu(in[0]); }, {x});
  check_derivatives("gelu_tanh", [](const Ts& in) { return gelu(in[0], true); }, {x});
}

TEST(OpRules, BinaryWithBroadcasting) {
  const Tensor a = draw({4, 3}, 3), b = draw({1, 3}, 4), positive = abs(draw({4, 3}, 5));
  check_derivatives("add", [](const Ts& in) { return add(in[0], in[1]); }, {a, b});
  check_derivatives("sub", [](const Ts& in) { return sub(in[0], in[1]); }, {a, b});
  check_derivatives("mul", [](const Ts& in) { return mul(in[0], in[1]); }, {a, b});
  check_derivatives("div", [](const Ts& in) { return div(in[0], in[1]); }, {a, b});
  check_derivatives("pow", [](const Ts& in) { return pow(in[0], in[1]); }, {positive, b});
  check_derivatives("maximum", [](const Ts& in) { return maximum(in[0], in[1]); }, {a, b});
  check_derivatives("minimum", [](const Ts& in) { return minimum(in[0], in[1]); }, {a, b});
  check_derivatives("where", [](const Ts& in) { return where(gt(in[0], in[1]), in[0], in[1]); }, {a, b});
}

TEST(OpRules, Reductions) {
  const Tensor x = draw({3, 4, 5}, 6);
  check_derivatives("sum all", [](const Ts& in) { return sum(in[0]); }, {x});
  check_derivatives("sum axis 1", [](const Ts& in) { return sum(in[0], {1}); }, {x});
  check_derivatives("mean axes 0,2 keepdim", [](const Ts& in) { return mean(in[0], {0, 2}, true); }, {x});
  check_derivatives("max axis -1", [](const Ts& in) { return max(in[0], {-1}); }, {x});
  check_derivatives("min axis 0 keepdim", [](const Ts& in) { return min(in[0], {0}, true); }, {x});
  check_derivatives("logsumexp axis 2", [](const Ts& in) { return logsumexp(in[0], {2}); }, {x});
  check_derivatives("softmax", [](const Ts& in) { return softmax(in[0], 1); }, {x});
  check_derivatives("log_softmax", [](const Ts& in) { return log_softmax(in[0], -1); }, {x});
  check_derivatives("cumsum", [](const Ts& in) { return cumsum(in[0], 1); }, {x});
}

TEST(OpRules, Matmul) {
  const Tensor a = draw({2, 3, 4}, 7), b = draw({4, 5}, 8), bt = draw({5, 4}, 9), at = draw({2, 4, 3}, 10);
  const Tensor bias = draw({5}, 11), residual = draw({2, 3, 5}, 12);
  check_derivatives("matmul batched, broadcast b", [](const Ts& in) { return matmul(in[0], in[1]); }, {a, b});
  check_derivatives("matmul transposes",
                    [](const Ts& in) {
                      return matmul(in[0], in[1], {.transpose_a = true, .transpose_b = true, .scale = 0.5});
                    },
                    {at, bt});
  for (Activation act :
       {Activation::none, Activation::relu, Activation::gelu_erf, Activation::gelu_tanh, Activation::silu})
    check_derivatives("matmul epilogue " + std::to_string(int(act)),
                      [act](const Ts& in) {
                        MatmulOptions o;
                        o.bias = in[2];
                        o.residual = in[3];
                        o.activation = act;
                        o.scale = 1.5;
                        return matmul(in[0], in[1], o);
                      },
                      {a, b, bias, residual});
}

TEST(OpRules, Cast) {
  check_derivatives("cast f64 -> f64 chain", [](const Ts& in) { return cast(mul(in[0], in[0]), DType::f64); },
                    {draw({6}, 13)});
}

TEST(OpRules, Views) {
  const Tensor x = draw({4, 6}, 14);
  check_derivatives("slice", [](const Ts& in) { return in[0].slice(1, 1, 5); }, {x});
  check_derivatives("slice with step", [](const Ts& in) { return in[0].slice(1, 0, 6, 2); }, {x});
  check_derivatives("select", [](const Ts& in) { return in[0].select(0, 2); }, {x});
  check_derivatives("transpose", [](const Ts& in) { return in[0].transpose(0, 1); }, {x});
  check_derivatives("reshape", [](const Ts& in) { return in[0].reshape({2, 12}); }, {x});
  check_derivatives("expand", [](const Ts& in) { return in[0].unsqueeze(0).expand({3, 4, 6}); }, {x});
  check_derivatives("squeeze", [](const Ts& in) { return in[0].slice(0, 1, 2).squeeze(0); }, {x});
  check_derivatives("clone of a transpose", [](const Ts& in) { return in[0].transpose(0, 1).contiguous(); },
                    {x});
}

TEST(OpRules, FusedOps) {
  const Tensor x = draw({3, 8}, 15), w = draw({8}, 16), gate = draw({3, 8}, 17), up = draw({3, 8}, 18);
  check_derivatives("rms_norm weighted", [](const Ts& in) { return rms_norm(in[0], in[1], 1e-5); }, {x, w});
  check_derivatives("rms_norm plain", [](const Ts& in) { return rms_norm(in[0], Tensor(), 1e-5); }, {x});
  check_derivatives("swiglu", [](const Ts& in) { return swiglu(in[0], in[1]); }, {gate, up});
  check_derivatives("geglu", [](const Ts& in) { return geglu(in[0], in[1]); }, {gate, up});
  check_derivatives("geglu tanh", [](const Ts& in) { return geglu(in[0], in[1], true); }, {gate, up});

  const Tensor logits = draw({5, 7}, 19, 2.0);
  const Tensor targets = Tensor::from_values({0, 3, -100, 6, 2}, {5}, DType::i64);
  CrossEntropyOptions o;
  o.z_loss = 1e-2;
  check_derivatives("cross_entropy loss", [&](const Ts& in) { return cross_entropy(in[0], targets, o).loss; },
                    {logits});
  check_derivatives("cross_entropy lse", [&](const Ts& in) { return cross_entropy(in[0], targets).lse; },
                    {logits});
}

TEST(OpRules, Indexing) {
  const Tensor table = draw({6, 4}, 20), x = draw({3, 5}, 21), src = draw({3, 5}, 22),
               d_out = draw({2, 3, 4}, 23);
  const Tensor ids = Tensor::from_values({1, 5, 1, 0, 3, 1}, {2, 3}, DType::i64);
  const Tensor rows = Tensor::from_values({2, 0, 2}, {3}, DType::i64);
  const Tensor where_to =
      Tensor::from_values({0, 1, 2, 0, 1, 2, 2, 2, 0, 1, 1, 0, 0, 2, 1}, {3, 5}, DType::i64);
  check_derivatives("embedding", [&](const Ts& in) { return embedding(in[0], ids); }, {table});
  check_derivatives("embedding_backward", [&](const Ts& in) { return embedding_backward(in[0], ids, 6); },
                    {d_out});
  check_derivatives("index_select", [&](const Ts& in) { return index_select(in[0], 0, rows); }, {x});
  check_derivatives("gather", [&](const Ts& in) { return gather(in[0], 0, where_to); }, {x});
  check_derivatives("scatter_add", [&](const Ts& in) { return scatter_add(in[0], 0, where_to, in[1]); },
                    {x, src});
}

TEST(OpRules, Layout) {
  const Tensor a = draw({2, 3}, 24), b = draw({2, 2}, 25), m = draw({2, 4, 4}, 26);
  check_derivatives("concat", [](const Ts& in) { return concat({in[0], in[1]}, 1); }, {a, b});
  check_derivatives("split, second piece", [](const Ts& in) { return split(in[0], {1, 2}, 1)[1]; }, {a});
  check_derivatives("pad", [](const Ts& in) { return pad(in[0], {1, 2, 0, 1}, 3.0); }, {a});
  check_derivatives("permute_copy", [](const Ts& in) { return permute_copy(in[0], {2, 0, 1}); }, {m});
  check_derivatives("tril", [](const Ts& in) { return tril(in[0], -1); }, {m});
  check_derivatives("triu", [](const Ts& in) { return triu(in[0], 1); }, {m});
}

TEST(OpRules, NormsRopeAttention) {
  const Tensor x = draw({3, 8}, 27), w = draw({8}, 28), bias = draw({8}, 29);
  check_derivatives("layer_norm affine", [](const Ts& in) { return layer_norm(in[0], in[1], in[2], 1e-5).y; },
                    {x, w, bias});
  check_derivatives("layer_norm plain",
                    [](const Ts& in) { return layer_norm(in[0], Tensor(), Tensor(), 1e-5).y; }, {x});
  check_derivatives("layer_norm rstd",
                    [](const Ts& in) { return layer_norm(in[0], Tensor(), Tensor(), 1e-5).rstd; }, {x});

  const Tensor q = draw({1, 5, 2, 8}, 30), kv = draw({1, 5, 1, 8}, 31),
               positions = Tensor::from_values({0, 1, 2, 0, 1}, {1, 5}, DType::i64);
  const RopeTables tables = rope_tables(10000.0, 8, 16, DType::f64);
  for (RopeLayout layout : {RopeLayout::rotate_half, RopeLayout::interleaved})
    check_derivatives("rope", [&](const Ts& in) { return rope(in[0], positions, tables, layout); }, {q});

  AttentionOptions o;
  o.causal = true;
  o.softcap = 20.0;
  check_derivatives(
      "attention (vjp)", [&](const Ts& in) { return attention(in[0], in[1], in[2], o).out; },
      {q, kv, draw({1, 5, 1, 8}, 32)}, /*forward_mode=*/false);
}

}  // namespace
}  // namespace dew
