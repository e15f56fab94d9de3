// The step profile: a profiled train_step's kernels land in the kinds they are (GEMMs by role, the
// head by its vocabulary dimension, the optimizer and clipping by phase), the kinds add up to the step,
// nothing is recorded while profiling is off, and the JSON PyTorch's side writes reads back.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include <memory>

namespace dew::train {
namespace {

const StepProfile::Row& kind(const StepProfile& p, const std::string& name) {
  for (const auto& r : p.kinds)
    if (r.name == name) return r;
  throw std::runtime_error("no kind " + name);
}

// `rows` rows of T + 1 random ids below `vocab`, one document each.
data::Batch random_rows(int64_t rows, int64_t T, int64_t vocab, uint64_t seed) {
  data::Batch batch;
  batch.tokens = Tensor::empty({rows, T + 1}, DType::i64);
  fill_randint(batch.tokens, {.seed = seed}, 0, vocab);
  batch.segment_ids = Tensor::full({rows, T + 1}, 1, DType::i64);
  std::vector<double> positions;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t <= T; ++t) positions.push_back(double(t));
  batch.positions = Tensor::from_values(positions, {rows, T + 1}, DType::i64);
  return batch;
}

// A Llama of config.json `config` with its parameters trainable under AdamW.
struct Trainable {
  CausalLM model;
  std::vector<Param> params;
  std::unique_ptr<Optimizer> adamw;
};
Trainable trainable_llama(const std::string& config, uint64_t seed) {
  Trainable t{CausalLM::init(parse_model_config(config, "test"), DType::f32, seed), {}, nullptr};
  for (auto& [name, p] : t.model.parameters()) p.requires_grad_();
  t.params = default_groups(t.model.parameters(), 0.1);
  t.adamw = make_adamw(t.params);
  return t;
}

StepProfile profile_of_one_step() {
  // vocab 40 differs from every other dimension (C 16, F 32, 3 x 8 = 24 rows), so only the head has it.
  auto [model, params, adamw] = trainable_llama(R"({"model_type": "llama", "vocab_size": 40,
      "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
      "num_key_value_heads": 1, "max_position_embeddings": 16})",
                                                5);
  StepProfiler profiler;
  profiler.begin_step();
  std::optional<data::Batch> once = random_rows(3, 8, 40, 2);
  const StepResult result =
      train_step(model, params, *adamw, {.lr = 1e-3}, [&] { return std::exchange(once, std::nullopt); });
  profiler.end_step();
  EXPECT_TRUE(result.applied);
  return profiler.result(40);
}

TEST(StepProfile, SortsAStepsKernelsIntoKinds) {
  const StepProfile p = profile_of_one_step();
  EXPECT_EQ(p.steps, 1);
  // Two layers: q, k, v, o, gate, up and down each once forward, once per gradient.
  EXPECT_EQ(kind(p, "GEMM forward").calls, 14);
  EXPECT_EQ(kind(p, "GEMM input gradient").calls, 14);
  EXPECT_EQ(kind(p, "GEMM weight gradient").calls, 14);
  EXPECT_EQ(kind(p, "GEMM head").calls, 3);  // its forward and both gradients
  for (const char* name :
       {"attention", "norms", "cross-entropy", "embedding", "optimizer", "gradient norm and clipping"})
    EXPECT_GT(kind(p, name).calls, 0) << name;
  double kernels = 0;
  for (const auto& r : p.kinds)
    if (r.name != "remainder") kernels += r.seconds;
  EXPECT_LE(kernels, p.step_seconds);
  EXPECT_NEAR(kernels + kind(p, "remainder").seconds, p.step_seconds, 1e-9);
  EXPECT_EQ(p.kinds.back().name, "remainder");
  // The head's three products are listed by role with their shapes; FLOPs are 2 M N K per call.
  int head_rows = 0;
  for (const auto& g : p.gemms) {
    if (g.name.starts_with("head ")) ++head_rows;
    if (g.name == "head forward  24x40x16 f32 tb") {
      EXPECT_DOUBLE_EQ(g.flops, 2.0 * 24 * 40 * 16);
    }
  }
  EXPECT_EQ(head_rows, 3);
}

TEST(StepProfile, RecordsNothingWhileOff) {
  reset_op_profile();
  const Tensor a = Tensor::full({4, 4}, 1.0, DType::f32);
  (void)matmul(a, a);
  EXPECT_TRUE(op_profile().empty());
  EXPECT_EQ(op_profile_bookkeeping_seconds(), 0.0);
  set_op_profiling(true);
  {
    const ProfilePhase outer("backward");
    {
      const ProfilePhase inner("weight gradient");
      (void)matmul(a, a);
    }
    (void)matmul(a, a);
  }
  set_op_profiling(false);
  const std::vector<OpTime> rows = op_profile();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].phase, "backward");
  EXPECT_EQ(rows[1].phase, "weight gradient");
  EXPECT_EQ(rows[0].label, "4x4x4 f32");
  EXPECT_DOUBLE_EQ(rows[0].flops, 2.0 * 64);
  EXPECT_GT(op_profile_bookkeeping_seconds(), 0.0);  // the records' own time, kept apart
  reset_op_profile();
  EXPECT_EQ(op_profile_bookkeeping_seconds(), 0.0);
}

TEST(StepProfile, JsonReadsBackAndTablesShowBothSystems) {
  const StepProfile p = profile_of_one_step();
  const StepProfile q = step_profile_from_json(step_profile_json(p));
  ASSERT_EQ(q.kinds.size(), p.kinds.size());
  for (size_t i = 0; i < p.kinds.size(); ++i) {
    EXPECT_EQ(q.kinds[i].name, p.kinds[i].name);
    EXPECT_EQ(q.kinds[i].calls, p.kinds[i].calls);
    EXPECT_DOUBLE_EQ(q.kinds[i].seconds, p.kinds[i].seconds);
  }
  EXPECT_EQ(q.gemms.size(), p.gemms.size());
  const std::string table = format_step_profiles(p, &q, "pytorch");
  EXPECT_NE(table.find("GEMM head"), std::string::npos);
  EXPECT_NE(table.find("GEMMs and convolutions of pytorch"), std::string::npos);
  EXPECT_THROW(step_profile_from_json("{\"steps\": 1}"), Error);
  EXPECT_THROW(step_profile_from_json("{\"kinds\": [{\"calls\": 1}]}"), Error);
}

// After warm-up a training step maps (almost) no fresh pages: Dew's tensors and oneDNN's scratchpads
// come from Dew's cache, the buffers libraries malloc from memory malloc kept (NOTE [freed memory kept]).
TEST(StepProfile, ASteadyStepMapsNoFreshPages) {
  auto [model, params, adamw] = trainable_llama(R"({"model_type": "llama", "vocab_size": 2048,
      "hidden_size": 384, "intermediate_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 6,
      "num_key_value_heads": 2, "max_position_embeddings": 512})",
                                                1);
  std::vector<DType> computes{DType::f32};
  if (cpu_features().avx512bf16) computes.push_back(DType::bf16);
  for (DType compute : computes) {
    std::vector<double> faults;  // of each step after the warm-up
    for (int step = 0; step < 9; ++step) {
      std::optional<data::Batch> once = random_rows(4, 256, 2048, uint64_t(step));
      StepProfiler profiler;
      if (step >= 4) profiler.begin_step();  // four steps warm the caches
      train_step(model, params, *adamw, {.lr = 1e-4, .compute = compute},
                 [&] { return std::exchange(once, std::nullopt); });
      if (step >= 4) {
        profiler.end_step();
        faults.push_back(profiler.result(2048).minor_faults);
      }
    }
    // A handful of pages at most in a steady step (a heap growing by a page here and there); on a loaded
    // machine some steps map more — under ctest -j2 three of five at 99-137 once, which failed the
    // median — so two of the five must stay under 64; before, f32 mapped 100-700 every step.
    std::sort(faults.begin(), faults.end());
    EXPECT_LT(faults[1], 64) << dtype_name(compute) << ": " << fmt::format("{}", fmt::join(faults, ", "));
  }
}

}  // namespace
}  // namespace dew::train
