// Serving: an engine that runs many requests at once over a paged KV cache. Requests join and leave
// between steps; each step is one forward over every running sequence's next piece — a decode token or a
// chunk of a prompt — under a token budget. Full blocks of tokens are shared between sequences with the
// same prefix (prefix caching); when blocks run out, the newest sequences give theirs back and are
// recomputed later. Single-threaded: one thread submits, cancels and steps (the HTTP server owns it).
#pragma once

#include <dew/models.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dew::serve {

struct EngineOptions {
  int64_t kv_blocks = 0;                 // blocks in the pool; 0: as many as kv_memory holds
  int64_t kv_memory = int64_t(1) << 30;  // bytes for keys and values over every layer
  int64_t block_size = 16;               // tokens per block
  DType kv_dtype = DType::f32;           // f32 or bf16
  int64_t max_step_tokens = 512;         // tokens in one step: decodes plus prompt chunks
  int64_t max_running = 64;              // sequences in one step
  bool prefix_caching = true;            // off for a model with recurrent layers (qwen3_next)
  // NOTE [batch invariance]: a request's logits, bit for bit, do not depend on what runs beside it or on
  // how its prompt was chunked: every token attends through paged_attention (one query row each) and
  // matmul is pinned, for the whole process (as DEW_IMPL pins it), to cpu.<tier>.dot_tiles, whose
  // every output is the same operations whatever rows come with it (NOTE [rows one at a time]). Slower
  // to prefill (docs/perf.md).
  bool batch_invariant = false;
  std::vector<int64_t> eos_ids;  // end-of-sequence ids (the tokenizer's and generation_config's)
};

enum class FinishReason { stop, length, cancelled };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled"

struct RequestOptions {
  SamplingOptions sampling;  // sampling.seed is used when has_seed; else the engine draws one
  bool has_seed = false;
  int64_t max_tokens = 16;              // generated tokens per choice, at least 1
  int64_t n = 1;                        // choices, each its own sequence
  std::vector<int64_t> stop_token_ids;  // end a choice (kept in its output), as the eos ids do
  bool ignore_eos = false;
  int64_t logprobs = -1;  // -1: none; k >= 0: the chosen token's and the k most likely
};

struct TokenLogprob {
  int64_t token;
  double logprob;  // log-softmax of the model's logits, before any sampling option
};

struct TokenEvent {
  uint64_t request;
  int64_t choice;
  int64_t token;
  TokenLogprob chosen;            // set when logprobs >= 0
  std::vector<TokenLogprob> top;  // the `logprobs` most likely, most likely first
};

struct RequestCallbacks {
  // Each new token of a choice as it is chosen; returning false ends the choice there with `stop`
  // (a stop string met by the caller).
  std::function<bool(const TokenEvent&)> on_token;
  std::function<void(int64_t choice, FinishReason reason)> on_finish;
};

struct EngineStats {
  int64_t running = 0, waiting = 0;
  int64_t kv_blocks = 0, kv_blocks_in_use = 0;
  int64_t prefix_lookups = 0, prefix_hits = 0;  // full blocks looked up / found
  int64_t preemptions = 0;
  int64_t prompt_tokens_computed = 0, generated_tokens = 0, steps = 0;
};

class Engine {
 public:
  Engine(const CausalLM& model, const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request and returns its id. Refuses (dew::Error) a prompt outside the vocabulary, an
  // empty one, one past the model's context with max_tokens, or one the whole pool could never hold.
  uint64_t submit(const std::vector<int64_t>& prompt, const RequestOptions& options,
                  RequestCallbacks callbacks);
  // Ends every choice of the request still going with `cancelled` and frees its blocks at once.
  void cancel(uint64_t request);
  // One forward for the batch; false when nothing was waiting or running.
  bool step();
  bool idle() const;
  EngineStats stats() const;
  const EngineOptions& options() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dew::serve
