// Tensor parallelism (models.h TensorParallel, docs/parallel.md) under mpirun: pairs of neighbouring
// ranks are the tensor-parallel groups. A llama-family model split two ways — heads and
// hidden units — gives logits and every parameter's gradient that pass the float64 gate against the
// same model in float64, one process as the reference arm (the sums' order differs; the gate judges
// it). Only EXPECTs: a rank that left early would leave its pair waiting in a collective.
#include <dew/autodiff.h>
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/parallel.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "gate/gate.h"
#include "train/tensor_parallel.h"

namespace dew {
namespace {

struct Pass {
  Tensor logits;
  std::map<std::string, Tensor> grads;
};

// logits and the gradients of <logits, cotangent> with respect to every parameter of `model` (made
// leaves here).
Pass forward_and_backward(CausalLM model, const Tensor& ids, const Tensor& positions,
                          const Tensor& cotangent) {
  for (auto& [name, t] : model.parameters()) t = t.detach(), t.requires_grad_();
  Pass out;
  out.logits = model.forward(ids, positions);
  backward({out.logits}, {cast(cotangent, out.logits.dtype())});
  for (auto& [name, t] : model.parameters()) out.grads[name] = t.grad();
  return out;
}

// The gate's verdict on errors pooled over draws, as the op gate pools them (gate.h).
void expect_passes_the_gate(const gate::OutputReport& r, const std::string& what) {
  EXPECT_EQ(r.unwritten, 0) << what;
  EXPECT_LE(r.rms_ratio(), 1.5) << what << ": rms " << r.rms_candidate() << " vs the base's " << r.rms_base();
  EXPECT_LE(r.worst_row_ratio(), 2.0) << what;
}

TEST(TensorParallel, TwoWayLlamaPassesTheGateAgainstOneProcess) {
  const std::unique_ptr<parallel::Communicator> world = parallel::mpi_world();
  // Once, on 2 ranks (the 4-rank run of these tests adds two such pairs side by side, at twice the time).
  if (world->size() != 2) GTEST_SKIP() << "the 2-rank run checks it";
  const int rank = world->rank();
  const std::unique_ptr<parallel::Communicator> pair = world->split(rank / 2, rank);
  train::GroupTensorParallel group(*pair);
  // Every rank draws the same models and batches, from a seed rank 0 chose.
  Tensor seed = Tensor::from_values({double(gate::gate_seed() % (uint64_t(1) << 40))}, {1}, DType::f64);
  world->broadcast(seed, 0);
  // Every bias and grouped query heads; a norm after each sub-block's sum (gemma2's sandwich).
  for (
      const char* json :
      {R"({"model_type":"llama","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
            "num_attention_heads":4,"num_key_value_heads":2,"attention_bias":true,"mlp_bias":true})",
       R"({"model_type":"gemma2","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
            "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"sliding_window":4})"}) {
    const ModelConfig c = parse_model_config(json, "test");
    std::map<std::string, gate::OutputReport> pooled;  // "logits", then each parameter's gradient
    // Pooled as the op gate pools (gate.h): enough draws for the smallest output to reach kPooledElements.
    int64_t fewest = gate::kPooledElements;
    const CausalLM layout = CausalLM::init(c, DType::f32, 0).tensor_shard(group);
    for (const auto& [name, t] : layout.parameters()) fewest = std::min(fewest, t.numel());
    const int draws = int(
        std::min<int64_t>(gate::gate_max_draws(),
                          std::max<int64_t>(gate::kMinDraws, (gate::kPooledElements + fewest - 1) / fewest)));
    for (int draw = 0; draw < draws; ++draw) {
      const uint64_t s = uint64_t(seed.to_f64_vector()[0]) + uint64_t(draw);
      const CausalLM model = CausalLM::init(c, DType::f64, s).to(DType::f32);
      Tensor ids = Tensor::empty({2, 7}, DType::f64), cotangent = Tensor::empty({2, 7, 97}, DType::f32);
      fill_uniform(ids, {s, 1, 0}, 0, 96);  // rounded to ids 0 to 96
      fill_normal(cotangent, {s, 2, 0}, 0, 1);
      ids = cast(ids, DType::i64);
      const Tensor positions =
          Tensor::from_values({0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6}, {2, 7}, DType::i64);
      const Pass truth =
          forward_and_backward(model.to(DType::f64), ids, positions, cast(cotangent, DType::f64));
      const Pass base = forward_and_backward(model, ids, positions, cotangent);
      const Pass split = forward_and_backward(model.tensor_shard(group), ids, positions, cotangent);
      const auto pool = [&](const std::string& what, const Tensor& candidate, const Tensor& from_base,
                            const Tensor& from_truth) {
        const gate::OutputReport r =
            gate::compare_output(candidate, from_base, {from_truth, {}, 1}, DType::f32);
        if (!pooled.contains(what))
          pooled[what] = r;
        else
          pooled[what].merge(r);
      };
      pool("logits", split.logits, base.logits, truth.logits);
      for (const auto& [name, g] : split.grads) {
        ASSERT_TRUE(g.defined()) << name;
        pool("d " + name, g, tensor_parallel_part(name, base.grads.at(name), pair->rank(), 2),
             tensor_parallel_part(name, truth.grads.at(name), pair->rank(), 2));
      }
    }
    for (const auto& [what, r] : pooled) expect_passes_the_gate(r, c.model_type + " " + what);
  }
}

TEST(TensorParallel, RefusesWhatItDoesNotSplitByName) {
  const std::unique_ptr<parallel::Communicator> world = parallel::mpi_world();
  const std::unique_ptr<parallel::Communicator> pair = world->split(world->rank() / 2, world->rank());
  train::GroupTensorParallel group(*pair);
  const CausalLM odd = CausalLM::init(
      parse_model_config(R"({"model_type":"llama","vocab_size":11,"hidden_size":12,"intermediate_size":6,
                             "num_hidden_layers":1,"num_attention_heads":3,"num_key_value_heads":1})",
                         "odd"),
      DType::f32, 1);
  try {
    odd.tensor_shard(group);
    ADD_FAILURE() << "3 heads split 2 ways";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected each a multiple of 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dew
