// train_step: accumulating microbatches gives the large batch's update within the float64 gate — the
// accumulated step's error against the float64 gradient of the whole batch is within 1.5x the error of
// one f32 step over the whole batch (RMS, as the float64 gate: docs/gate.md) — and a data source that runs
// dry updates nothing.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include <cmath>

namespace dew::train {
namespace {

ModelConfig tiny_config() {
  return parse_model_config(R"({"model_type": "llama", "vocab_size": 40, "hidden_size": 16,
      "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
      "max_position_embeddings": 16})",
                            "test");
}

// `rows` rows of T+1 = 9 random ids, one document each: every row has T real targets.
data::Batch rows_of(int64_t rows, uint64_t seed) {
  data::Batch b;
  b.tokens = Tensor::empty({rows, 9}, DType::i64);
  fill_randint(b.tokens, {.seed = seed}, 0, 40);
  b.segment_ids = Tensor::full({rows, 9}, 1, DType::i64);
  std::vector<double> positions;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < 9; ++t) positions.push_back(double(t));
  b.positions = Tensor::from_values(positions, {rows, 9}, DType::i64);
  return b;
}

data::Batch rows_slice(const data::Batch& b, int64_t begin, int64_t end) {
  return {0,
          b.tokens.slice(0, begin, end).contiguous(),
          b.segment_ids.slice(0, begin, end).contiguous(),
          b.positions.slice(0, begin, end).contiguous(),
          Tensor(),
          0};
}

// The change SGD (lr 1, no momentum, no decay) makes to every weight: minus the step's gradient.
std::vector<double> sgd_step(const std::vector<data::Batch>& microbatches) {
  CausalLM model = CausalLM::init(tiny_config(), DType::f32, 5);
  for (auto& [name, p] : model.parameters()) p.requires_grad_();
  const std::vector<Param> params = default_groups(model.parameters(), 0);
  std::vector<double> before;
  for (const Param& p : params)
    for (double v : p.tensor.to_f64_vector()) before.push_back(v);
  auto sgd = make_sgd(params, {.momentum = 0});
  size_t next = 0;
  const StepResult result =
      train_step(model, params, *sgd, {.accumulation = int64_t(microbatches.size()), .lr = 1, .grad_clip = 0},
                 [&]() -> std::optional<data::Batch> { return microbatches[next++]; });
  EXPECT_TRUE(result.applied);
  std::vector<double> change;
  size_t i = 0;
  for (const Param& p : params)
    for (double v : p.tensor.to_f64_vector()) change.push_back(v - before[i++]);
  return change;
}

TEST(TrainStep, AccumulatedMicrobatchesGiveTheLargeBatchUpdateWithinTheGate) {
  const data::Batch whole = rows_of(6, 11);
  // Truth: the float64 gradient of the whole batch's mean loss, from the same initial weights.
  CausalLM truth_model = CausalLM::init(tiny_config(), DType::f32, 5).to(DType::f64);
  for (auto& [name, p] : truth_model.parameters()) p.requires_grad_();
  backward(lm_loss(truth_model, whole).loss);
  std::vector<double> truth;
  for (const Param& p : default_groups(truth_model.parameters(), 0))
    for (double g : p.tensor.grad().to_f64_vector()) truth.push_back(-g);

  const std::vector<double> base = sgd_step({whole});
  const std::vector<double> accumulated =
      sgd_step({rows_slice(whole, 0, 2), rows_slice(whole, 2, 4), rows_slice(whole, 4, 6)});
  ASSERT_EQ(base.size(), truth.size());
  ASSERT_EQ(accumulated.size(), truth.size());
  double base_error = 0, accumulated_error = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    base_error += (base[i] - truth[i]) * (base[i] - truth[i]);
    accumulated_error += (accumulated[i] - truth[i]) * (accumulated[i] - truth[i]);
  }
  EXPECT_GT(base_error, 0) << "f32 rounds somewhere";
  EXPECT_LE(std::sqrt(accumulated_error), 1.5 * std::sqrt(base_error));
  // A half-sized batch alone is another update: the check can fail.
  const std::vector<double> half = sgd_step({rows_slice(whole, 0, 3)});
  double half_error = 0;
  for (size_t i = 0; i < truth.size(); ++i) half_error += (half[i] - truth[i]) * (half[i] - truth[i]);
  EXPECT_GT(std::sqrt(half_error), 1.5 * std::sqrt(base_error));
}

TEST(TrainStep, ADataSourceThatRunsDryUpdatesNothing) {
  CausalLM model = CausalLM::init(tiny_config(), DType::f32, 5);
  for (auto& [name, p] : model.parameters()) p.requires_grad_();
  const std::vector<Param> params = default_groups(model.parameters(), 0);
  const std::vector<double> before = params[0].tensor.to_f64_vector();
  auto sgd = make_sgd(params, {.momentum = 0});
  int calls = 0;
  const StepResult result =
      train_step(model, params, *sgd, {.accumulation = 2, .lr = 1}, [&]() -> std::optional<data::Batch> {
        if (calls++ == 0) return rows_of(2, 3);
        return std::nullopt;
      });
  EXPECT_FALSE(result.complete);
  EXPECT_FALSE(result.applied);
  EXPECT_EQ(params[0].tensor.to_f64_vector(), before);
}

// Mixed precision with accumulation casts the weights to bf16 once per step, not once per microbatch,
// and the f32 masters receive the same gradients, bit for bit, as from a fresh cast per microbatch.
TEST(TrainStep, MixedPrecisionCastsTheWeightsOncePerStep) {
  const std::vector<data::Batch> microbatches{rows_of(2, 11), rows_of(2, 12), rows_of(2, 13)};
  auto fresh_model = [] {
    CausalLM model = CausalLM::init(tiny_config(), DType::f32, 5);
    for (auto& [name, p] : model.parameters()) p.requires_grad_();
    return model;
  };
  // The reference: each microbatch on its own cast, its gradient through it.
  const CausalLM reference = fresh_model();
  for (const data::Batch& b : microbatches)
    backward(mul(lm_loss(reference.to(DType::bf16), b).loss, Tensor::full({}, 1.0 / 4, DType::f32)));

  CausalLM model = fresh_model();
  const std::vector<Param> params = default_groups(model.parameters(), 0);
  auto sgd = make_sgd(params, {.momentum = 0});
  std::vector<Tensor> grads;  // read when the fourth microbatch is asked for, after three backwards
  size_t next = 0;
  reset_op_profile();
  set_op_profiling(true);
  const StepResult result =
      train_step(model, params, *sgd, {.accumulation = 4, .lr = 0, .grad_clip = 0, .compute = DType::bf16},
                 [&]() -> std::optional<data::Batch> {
                   if (next == 3)
                     for (const Param& p : params) grads.push_back(p.tensor.grad().clone());
                   return next < 3 ? std::optional(microbatches[next++]) : std::nullopt;
                 });
  set_op_profiling(false);
  EXPECT_FALSE(result.complete);  // the fourth call ends the data: the gradients were read there
  int64_t weight_casts = 0;
  for (const OpTime& row : op_profile())
    if (row.op == "cast" && row.label == "f32->bf16") weight_casts += row.calls;
  reset_op_profile();
  // Each weight once (a fresh cast per microbatch made 3 each); each microbatch casts a tensor of its own.
  EXPECT_EQ(weight_casts, int64_t(params.size()) + 3);
  ASSERT_EQ(grads.size(), params.size());
  const auto reference_parameters = reference.parameters();
  size_t i = 0;
  for (const Param& p : params) {
    const Tensor& expected = reference_parameters.at(p.name).grad();
    EXPECT_EQ(grads[i++].to_f64_vector(), expected.to_f64_vector()) << p.name;
  }
}

}  // namespace
}  // namespace dew::train
