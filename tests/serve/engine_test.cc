// The serving engine: its tokens against generate()'s, chunked prefill, preemption, prefix reuse,
// cancellation, seeds, stops, log-probabilities, and the pool back to full afterwards.
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/serve.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "error_of.h"

namespace dew::serve {
namespace {

using testing::error_of;

ModelConfig tiny(const std::string& family) {
  std::string json;
  if (family == "llama")
    json =
        R"({"model_type":"llama","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"max_position_embeddings":256,"attention_bias":true})";
  else if (family == "mistral")  // a window shorter than the prompts
    json =
        R"({"model_type":"mistral","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":1,"sliding_window":7,"tie_word_embeddings":true})";
  else if (family == "qwen3")
    json =
        R"({"model_type":"qwen3","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":24,"max_position_embeddings":256})";
  else if (family == "mixtral")  // experts routed per token, whatever shares the step
    json =
        R"({"model_type":"mixtral","vocab_size":97,"hidden_size":64,"intermediate_size":48,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"num_local_experts":4,"max_position_embeddings":256})";
  else if (family == "gemma2")  // softcaps, query scalar, windows on even layers
    json =
        R"({"model_type":"gemma2","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"sliding_window":7,"query_pre_attn_scalar":12,
      "attn_logit_softcapping":1.0,"final_logit_softcapping":2.0,"max_position_embeddings":256})";
  else if (family == "gpt_oss")  // sinks through the paged cache, biases, experts
    json =
        R"({"model_type":"gpt_oss","vocab_size":97,"hidden_size":64,"intermediate_size":32,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"num_local_experts":4,"num_experts_per_tok":2,
      "sliding_window":7,"max_position_embeddings":256})";
  else if (family == "qwen3_next")  // Gated DeltaNet layers around an attention layer: states and blocks
    json =
        R"({"model_type":"qwen3_next","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":3,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"num_experts":4,"num_experts_per_tok":2,
      "moe_intermediate_size":32,"shared_expert_intermediate_size":32,"linear_num_key_heads":2,
      "linear_num_value_heads":4,"linear_key_head_dim":8,"linear_value_head_dim":8,"max_position_embeddings":256,
      "layer_types":["linear_attention","full_attention","linear_attention"]})";
  else if (family == "mamba2")  // no attention: states alone, blocks only counting tokens
    json =
        R"({"model_type":"mamba2","vocab_size":97,"hidden_size":32,"num_hidden_layers":2,"num_heads":4,"head_dim":16,
      "state_size":8,"n_groups":1})";
  else
    json = R"({"model_type":"gpt2","vocab_size":97,"n_embd":64,"n_layer":2,"n_head":4,"n_positions":256})";
  return parse_model_config(json, family + " config");
}

// An engine's options with `blocks` blocks of 4 tokens: short prompts span several.
EngineOptions blocks_of_four(int64_t blocks) {
  EngineOptions eo;
  eo.kv_blocks = blocks;
  eo.block_size = 4;
  return eo;
}

std::vector<int64_t> prompt_of(int64_t length, int64_t salt) {
  std::vector<int64_t> p;
  for (int64_t t = 0; t < length; ++t) p.push_back((t * 31 + salt * 17 + 5) % 97);
  return p;
}

struct Outcome {
  std::map<int64_t, std::vector<int64_t>> tokens;  // per choice
  std::map<int64_t, FinishReason> finish;
  std::vector<TokenEvent> events;
};

// Submits and records a request's tokens and finish.
uint64_t submit(Engine& e, const std::vector<int64_t>& prompt, const RequestOptions& o, Outcome& out) {
  RequestCallbacks cb;
  cb.on_token = [&out](const TokenEvent& ev) {
    out.tokens[ev.choice].push_back(ev.token);
    out.events.push_back(ev);
    return true;
  };
  cb.on_finish = [&out](int64_t choice, FinishReason r) { out.finish[choice] = r; };
  return e.submit(prompt, o, cb);
}

void run_until_idle(Engine& e) {
  for (int i = 0; i < 10000 && e.step(); ++i) {
  }
  ASSERT_TRUE(e.idle());
}

std::vector<int64_t> generate_alone(const CausalLM& model, const std::vector<int64_t>& prompt, int64_t n) {
  GenerationOptions g;
  g.max_new_tokens = n;
  g.sampling.temperature = 0;
  return generate(model, {prompt}, g)[0];
}

RequestOptions greedy(int64_t max_tokens) {
  RequestOptions o;
  o.sampling.temperature = 0;
  o.max_tokens = max_tokens;
  return o;
}

class Families : public ::testing::TestWithParam<std::string> {};

// Prompts of several lengths at once, prefilled in chunks of a step's budget beside the others'
// decodes, each gets the greedy tokens generate() gives it alone.
TEST_P(Families, ServedGreedyTokensAreGeneratesTokens) {
  const CausalLM model = CausalLM::init(tiny(GetParam()), DType::f32, 5);
  EngineOptions eo = blocks_of_four(64);
  eo.max_step_tokens = 8;
  Engine engine(model, eo);
  const std::vector<int64_t> lengths = {1, 5, 13, 22};
  std::vector<Outcome> outcomes(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    submit(engine, prompt_of(lengths[i], int64_t(i)), greedy(9), outcomes[i]);
  run_until_idle(engine);
  for (size_t i = 0; i < lengths.size(); ++i) {
    EXPECT_EQ(outcomes[i].tokens[0], generate_alone(model, prompt_of(lengths[i], int64_t(i)), 9))
        << lengths[i];
    EXPECT_EQ(outcomes[i].finish[0], FinishReason::length);
  }
  EXPECT_EQ(engine.stats().kv_blocks_in_use, 0);
}

// NOTE [pieces attended together]: prompts of one length arriving together attend as one batch (a call
// per layer for each length: the op profile counts them), and each still gets generate()'s tokens alone.
TEST_P(Families, PromptsOfOneLengthAttendTogether) {
  const ModelConfig c = tiny(GetParam());
  const CausalLM model = CausalLM::init(c, DType::f32, 7);
  EngineOptions eo = blocks_of_four(64);
  Engine engine(model, eo);
  const std::vector<int64_t> lengths = {6, 9, 6, 6, 9};
  std::vector<Outcome> outcomes(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    submit(engine, prompt_of(lengths[i], int64_t(i)), greedy(3), outcomes[i]);
  reset_op_profile();
  set_op_profiling(true);
  engine.step();  // every prompt whole, in one step
  set_op_profiling(false);
  int64_t dense_calls = 0;
  for (const OpTime& r : op_profile())
    if (r.op == "attention") dense_calls += r.calls;
  const int64_t attention_layers = GetParam() == "mamba2"       ? 0
                                   : GetParam() == "qwen3_next" ? 1
                                                                : c.num_hidden_layers;
  EXPECT_EQ(dense_calls, 2 * attention_layers);  // lengths 6 and 9
  run_until_idle(engine);
  for (size_t i = 0; i < lengths.size(); ++i)
    EXPECT_EQ(outcomes[i].tokens[0], generate_alone(model, prompt_of(lengths[i], int64_t(i)), 3)) << i;
}

// Prompts whose keys and values are written into the cache on both threads (at least 256 rows of a
// head a thread, paged_step.cc) get generate()'s tokens too.
TEST(Engine, LongPromptsWrittenIntoTheCacheOnBothThreadsGetGeneratesTokens) {
  const CausalLM model = CausalLM::init(tiny("llama"), DType::f32, 19);
  EngineOptions eo = blocks_of_four(128);
  Engine engine(model, eo);
  std::vector<Outcome> outcomes(6);
  for (int64_t i = 0; i < 6; ++i)
    submit(engine, prompt_of(60 + i % 2, 50 + i), greedy(3), outcomes[size_t(i)]);
  run_until_idle(engine);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(outcomes[size_t(i)].tokens[0], generate_alone(model, prompt_of(60 + i % 2, 50 + i), 3)) << i;
  EXPECT_EQ(engine.stats().kv_blocks_in_use, 0);
}

INSTANTIATE_TEST_SUITE_P(Engine, Families,
                         ::testing::Values("llama", "mistral", "qwen3", "mixtral", "gemma2", "gpt_oss",
                                           "gpt2", "qwen3_next", "mamba2"));

// A pool too small for every sequence at once: the newest give their blocks back (and a hybrid its
// recurrent states) and are recomputed, and every request still gets its own greedy tokens.
TEST(Engine, PreemptedSequencesResumeWithTheSameTokens) {
  for (const std::string family : {"llama", "qwen3_next"}) {
    const CausalLM model = CausalLM::init(tiny(family), DType::f32, 7);
    EngineOptions eo = blocks_of_four(12);  // 48 tokens; each request needs 7 blocks at its end
    eo.max_step_tokens = 16;
    eo.prefix_caching = false;
    Engine engine(model, eo);
    std::vector<Outcome> outcomes(4);
    for (int i = 0; i < 4; ++i) submit(engine, prompt_of(10, i), greedy(16), outcomes[size_t(i)]);
    run_until_idle(engine);
    EXPECT_GT(engine.stats().preemptions, 0) << family;
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(outcomes[size_t(i)].tokens[0], generate_alone(model, prompt_of(10, i), 16)) << family;
    EXPECT_EQ(engine.stats().kv_blocks_in_use, 0) << family;
  }
}

// A hybrid's later request sharing a prompt prefix recomputes it (a cached block holds keys, not the
// state of the recurrent layers after it), and gets its own tokens.
TEST(Engine, AHybridModelRecomputesSharedPrefixes) {
  const CausalLM model = CausalLM::init(tiny("qwen3_next"), DType::f32, 9);
  EngineOptions eo = blocks_of_four(64);
  Engine engine(model, eo);
  const std::vector<int64_t> first = prompt_of(14, 1);
  std::vector<int64_t> second = first;
  second.push_back(3);
  Outcome a, b;
  submit(engine, first, greedy(4), a);
  run_until_idle(engine);
  submit(engine, second, greedy(4), b);
  run_until_idle(engine);
  EXPECT_EQ(engine.stats().prefix_hits, 0);
  EXPECT_EQ(b.tokens[0], generate_alone(model, second, 4));
  EXPECT_EQ(engine.stats().kv_blocks_in_use, 0);
}

// A second prompt sharing three full blocks with a finished one reads them from the prefix cache and
// still gets its own tokens.
TEST(Engine, ASharedPrefixIsReadFromTheCache) {
  const CausalLM model = CausalLM::init(tiny("qwen3"), DType::f32, 9);
  EngineOptions eo = blocks_of_four(32);
  Engine engine(model, eo);
  std::vector<int64_t> first = prompt_of(14, 1), second = first;
  second.resize(12);
  second.push_back(3);
  second.push_back(8);
  Outcome a, b;
  submit(engine, first, greedy(4), a);
  run_until_idle(engine);
  const int64_t hits_before = engine.stats().prefix_hits;
  submit(engine, second, greedy(4), b);
  run_until_idle(engine);
  EXPECT_EQ(engine.stats().prefix_hits - hits_before, 3);
  EXPECT_EQ(b.tokens[0], generate_alone(model, second, 4));
  EXPECT_EQ(engine.stats().kv_blocks_in_use, 0);
}

// Cancelled, finished, stopped and preempted requests mixed: afterwards every block is free again.
TEST(Engine, ThePoolIsFullAgainAfterAnyMixOfEndings) {
  const CausalLM model = CausalLM::init(tiny("gpt2"), DType::f32, 11);
  EngineOptions eo = blocks_of_four(20);
  eo.max_step_tokens = 12;
  Engine engine(model, eo);
  std::vector<Outcome> outcomes(6);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 6; ++i) {
    RequestOptions o = greedy(10 + i);
    o.n = 1 + i % 2;
    ids.push_back(submit(engine, prompt_of(6 + 3 * i, i), o, outcomes[size_t(i)]));
  }
  RequestCallbacks stop_after_two;
  int64_t seen = 0;
  stop_after_two.on_token = [&](const TokenEvent&) { return ++seen < 2; };
  RequestOptions sampled = greedy(30);
  sampled.sampling.temperature = 1;
  engine.submit(prompt_of(9, 7), sampled, stop_after_two);
  for (int i = 0; i < 5; ++i) engine.step();
  engine.cancel(ids[1]);
  engine.cancel(ids[4]);
  EXPECT_GT(engine.stats().kv_blocks_in_use, 0);
  run_until_idle(engine);
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(outcomes[1].finish[0], FinishReason::cancelled);
  EXPECT_EQ(outcomes[1].finish[1], FinishReason::cancelled);
  EXPECT_EQ(outcomes[0].finish[0], FinishReason::length);
  EXPECT_EQ(engine.stats().kv_blocks_in_use, 0);
  EXPECT_EQ(engine.stats().running + engine.stats().waiting, 0);
}

// A seeded request samples the same tokens alone and among 31 others.
TEST(Engine, ASeededRequestSamplesTheSameTokensAloneAndInABatch) {
  const CausalLM model = CausalLM::init(tiny("llama"), DType::f32, 13);
  RequestOptions o;
  o.sampling.temperature = 0.9;
  o.sampling.top_p = 0.95;
  o.sampling.seed = 1234;
  o.has_seed = true;
  o.max_tokens = 12;
  EngineOptions eo;
  eo.kv_blocks = 256;
  eo.block_size = 8;
  Outcome alone;
  {
    Engine engine(model, eo);
    submit(engine, prompt_of(9, 3), o, alone);
    run_until_idle(engine);
  }
  Engine engine(model, eo);
  std::vector<Outcome> others(31);
  Outcome batched;
  for (int i = 0; i < 16; ++i) submit(engine, prompt_of(4 + i, 20 + i), o, others[size_t(i)]);
  submit(engine, prompt_of(9, 3), o, batched);
  for (int i = 16; i < 31; ++i) submit(engine, prompt_of(4 + i, 20 + i), o, others[size_t(i)]);
  run_until_idle(engine);
  EXPECT_EQ(batched.tokens[0], alone.tokens[0]);
  // n choices of one request draw apart
  RequestOptions two = o;
  two.n = 2;
  Outcome pair;
  submit(engine, prompt_of(9, 3), two, pair);
  run_until_idle(engine);
  EXPECT_EQ(pair.tokens[0], alone.tokens[0]);
  EXPECT_NE(pair.tokens[1], pair.tokens[0]);
}

TEST(Engine, StopIdsEndAChoiceAndLogprobsDescribeTheChoice) {
  const CausalLM model = CausalLM::init(tiny("llama"), DType::f32, 17);
  EngineOptions eo;
  eo.kv_blocks = 32;
  Engine engine(model, eo);
  const std::vector<int64_t> expected = generate_alone(model, prompt_of(6, 2), 8);
  RequestOptions o = greedy(8);
  o.stop_token_ids = {expected[3]};
  o.logprobs = 3;
  Outcome out;
  submit(engine, prompt_of(6, 2), o, out);
  run_until_idle(engine);
  const size_t first_stop =
      size_t(std::find(expected.begin(), expected.end(), expected[3]) - expected.begin());
  EXPECT_EQ(out.tokens[0], std::vector<int64_t>(expected.begin(), expected.begin() + long(first_stop) + 1));
  EXPECT_EQ(out.finish[0], FinishReason::stop);
  for (const TokenEvent& ev : out.events) {
    ASSERT_EQ(ev.top.size(), 3u);
    EXPECT_EQ(ev.top[0].token, ev.token);  // greedy: the most likely
    EXPECT_EQ(ev.top[0].logprob, ev.chosen.logprob);
    EXPECT_LT(ev.chosen.logprob, 0);
    EXPECT_GE(ev.top[0].logprob, ev.top[1].logprob);
    EXPECT_GE(ev.top[1].logprob, ev.top[2].logprob);
  }
}

// NOTE [batch invariance]: a request's log-probabilities are the same bits alone and beside seven
// others, whose prompts chunk its prefill differently under a small step budget.
TEST(Engine, BatchInvariantModeGivesTheSameLogprobsAloneAndBatched) {
  const CausalLM model = CausalLM::init(tiny("qwen3"), DType::f32, 29);
  EngineOptions eo = blocks_of_four(128);
  eo.max_step_tokens = 6;
  eo.batch_invariant = true;
  RequestOptions o = greedy(6);
  o.logprobs = 4;
  Outcome alone, batched;
  {
    Engine engine(model, eo);
    submit(engine, prompt_of(11, 4), o, alone);
    run_until_idle(engine);
  }
  Engine engine(model, eo);
  std::vector<Outcome> others(7);
  for (int i = 0; i < 3; ++i) submit(engine, prompt_of(3 + 4 * i, 40 + i), o, others[size_t(i)]);
  submit(engine, prompt_of(11, 4), o, batched);
  for (int i = 3; i < 7; ++i) submit(engine, prompt_of(3 + 4 * i, 40 + i), o, others[size_t(i)]);
  run_until_idle(engine);
  set_impl_overrides("");
  ASSERT_EQ(alone.events.size(), batched.events.size());
  for (size_t i = 0; i < alone.events.size(); ++i) {
    EXPECT_EQ(alone.events[i].token, batched.events[i].token);
    EXPECT_EQ(alone.events[i].chosen.logprob, batched.events[i].chosen.logprob) << i;
    for (size_t j = 0; j < alone.events[i].top.size(); ++j)
      EXPECT_EQ(alone.events[i].top[j].logprob, batched.events[i].top[j].logprob) << i << " " << j;
  }
}

// A request's four choices compute its prompt once: the later three take its full blocks from the
// prefix cache.
TEST(Engine, ChoicesOfOneRequestShareThePromptsBlocks) {
  const CausalLM model = CausalLM::init(tiny("llama"), DType::f32, 31);
  EngineOptions eo = blocks_of_four(64);
  Engine engine(model, eo);
  RequestOptions o = greedy(5);
  o.n = 4;
  Outcome out;
  submit(engine, prompt_of(17, 6), o, out);  // 4 full blocks before the last token
  run_until_idle(engine);
  EXPECT_EQ(engine.stats().prefix_hits, 3 * 4);
  EXPECT_EQ(engine.stats().prompt_tokens_computed, 17 + 3 * 1);
  for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(out.tokens[c], generate_alone(model, prompt_of(17, 6), 5)) << c;
}

TEST(Engine, RefusesWhatCouldNeverRun) {
  const CausalLM model = CausalLM::init(tiny("llama"), DType::f32, 19);
  EngineOptions eo = blocks_of_four(4);
  Engine engine(model, eo);
  Outcome out;
  EXPECT_NE(error_of([&] {
              submit(engine, prompt_of(10, 1), greedy(8), out);
            }).find("need 5 KV blocks of 4 tokens; the whole cache has 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              submit(engine, {3, 97}, greedy(1), out);
            }).find("prompt id 97 is outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              submit(engine, prompt_of(250, 1), greedy(10), out);
            }).find("past the model's context of 256"),
            std::string::npos);
  EXPECT_NE(error_of([&] { submit(engine, {}, greedy(1), out); }).find("an empty prompt"), std::string::npos);
  EngineOptions tiny_memory;
  tiny_memory.kv_memory = 1000;  // a block of 16 tokens of this model takes 8 KiB
  EXPECT_NE(error_of([&] {
              Engine(model, tiny_memory);
            }).find("KV memory of 1000 bytes holds no block of 16 tokens"),
            std::string::npos);
  EXPECT_TRUE(engine.idle());
}

}  // namespace
}  // namespace dew::serve
