// The engine: requests become sequences (one per choice); each step schedules the running sequences'
// next pieces, then admits waiting ones, under the token budget; allocates their blocks (reusing cached
// prefix blocks on admission, preempting the newest when the pool runs out); runs one forward; samples
// where a sequence reached its end; publishes full blocks to the prefix cache; finishes and frees.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/serve.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <random>

#include "select/requirements.h"
#include "serve/kv_block_pool.h"
#include "serve/paged_step.h"
#include "serve/sequence.h"

namespace dew::serve {

namespace {

// Blocks of a model that keeps no keys: bookkeeping only (a million tokens in blocks of 16).
constexpr int64_t kBlocksWithoutKeys = int64_t(1) << 16;

// The pool's blocks: as given, or as many as kv_memory holds (at least one).
int64_t pool_blocks(const ModelConfig& c, const EngineOptions& o) {
  if (o.kv_blocks > 0) return o.kv_blocks;
  const int64_t block = KvBlockPool::block_bytes(c, o.kv_dtype, o.block_size);
  // A model without attention layers (mamba2) keeps nothing in its blocks: they only count its tokens.
  if (block == 0) return kBlocksWithoutKeys;
  DEW_REQUIRE(
      o.kv_memory >= block,
      "[serve] KV memory of {} bytes holds no block of {} tokens; expected at least {} bytes (--kv-memory)",
      o.kv_memory, o.block_size, block);
  return o.kv_memory / block;
}

}  // namespace

struct Engine::State {
  const CausalLM& model;
  EngineOptions options;
  KvBlockPool pool;
  std::map<uint64_t, Request> requests;
  std::deque<Sequence*> waiting;   // preempted ones at the front
  std::vector<Sequence*> running;  // in admission order: the newest last
  uint64_t next_request = 1;
  uint64_t seed =
      uint64_t(std::random_device{}()) << 32 | std::random_device{}();  // unseeded requests' seeds
  EngineStats counts;
  RecurrentBatches recurrent_batches;  // the last step's stacked recurrent states (NOTE [recurrent pieces])

  State(const CausalLM& m, const EngineOptions& o)
      : model(m), options(o), pool(m.config(), o.kv_dtype, pool_blocks(m.config(), o), o.block_size) {
    // A cached block holds keys, not the recurrent layers' state after it: such a model recomputes.
    if (m.config().has_recurrent_layers()) options.prefix_caching = false;
  }

  int64_t blocks_for(int64_t tokens) const { return (tokens + pool.block_size() - 1) / pool.block_size(); }

  // Gives a sequence blocks up to `tokens` tokens; false (nothing taken) when the pool has too few.
  bool grow(Sequence& s, int64_t tokens) {
    const int64_t need = blocks_for(tokens) - int64_t(s.blocks.size());
    if (need > pool.available()) return false;
    for (int64_t i = 0; i < need; ++i) s.blocks.push_back(*pool.allocate());
    return true;
  }

  void free_blocks(Sequence& s) {
    for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it)
      pool.release(*it);  // tail first to the LRU
    s.blocks.clear();
    s.computed = 0;
    s.published = 0;
    s.recurrent = KvCache{};
  }

  // Full blocks of the sequence's cached tokens go to the prefix cache under their chain keys.
  void publish(Sequence& s) {
    if (!options.prefix_caching) return;
    const int64_t bs = pool.block_size();
    for (; s.published < s.computed / bs; ++s.published) {
      const size_t b = size_t(s.published);
      pool.publish(s.blocks[b], {b == 0 ? -1 : s.blocks[b - 1],
                                 std::vector<int64_t>(s.tokens.begin() + long(b) * bs,
                                                      s.tokens.begin() + long(b + 1) * bs)});
    }
  }

  // On admission: the longest chain of cached full blocks of the prompt, short of its last token (whose
  // logits the sequence needs).
  void reuse_prefix(Sequence& s) {
    if (!options.prefix_caching) return;
    const int64_t bs = pool.block_size();
    for (int64_t b = 0; (b + 1) * bs <= int64_t(s.tokens.size()) - 1; ++b) {
      const std::optional<int64_t> hit = pool.lookup(
          {b == 0 ? -1 : s.blocks[size_t(b - 1)],
           std::vector<int64_t>(s.tokens.begin() + long(b * bs), s.tokens.begin() + long((b + 1) * bs))});
      if (!hit) break;
      s.blocks.push_back(*hit);
      s.computed = s.published = b + 1;
      s.computed *= bs;
    }
  }

  // A request's later choices start once its first has computed the prompt, whose full blocks they then
  // take from the prefix cache instead of computing them again.
  bool waits_for_first_choice(const Sequence& s) const {
    if (s.choice == 0 || !options.prefix_caching || s.generated() > 0) return false;
    const Sequence& first = *requests.at(s.request).sequences[0];
    return !first.finished && first.computed < first.prompt_length;
  }

  // Frees the sequence's blocks and takes it off the queues before telling the caller; the last choice
  // of a request takes the request (and its sequences) with it.
  void finish(Sequence& s, FinishReason reason) {
    free_blocks(s);
    s.finished = true;
    running.erase(std::remove(running.begin(), running.end(), &s), running.end());
    waiting.erase(std::remove(waiting.begin(), waiting.end(), &s), waiting.end());
    Request& r = requests.at(s.request);
    if (r.callbacks.on_finish) r.callbacks.on_finish(s.choice, reason);
    if (--r.unfinished == 0) requests.erase(s.request);
  }

  void preempt(Sequence& s) {
    free_blocks(s);
    ++counts.preemptions;
    running.erase(std::find(running.begin(), running.end(), &s));
    waiting.push_front(&s);
  }

  // The step's pieces and their sequences, in the step's order.
  std::vector<StepPiece> schedule(std::vector<Sequence*>& sequences);
  int64_t draw(const Sequence& s, std::span<const float> logits) const;
  void take(Sequence& s, int64_t token, std::span<const float> logits);
};

// NOTE [scheduling]: running sequences first, oldest first, each its next piece (a decode token, or the
// next chunk of its prompt) within the budget; a sequence that cannot get its blocks preempts the
// newest running one (possibly itself). Then waiting sequences, first come first, while budget, slots
// and blocks last; one that does not fit waits, and so do those behind it (no overtaking), but a
// request's later choices let others pass while its first computes the prompt they will share.
std::vector<StepPiece> Engine::State::schedule(std::vector<Sequence*>& sequences) {
  std::vector<StepPiece> pieces;
  int64_t budget = options.max_step_tokens;
  for (size_t i = 0; i < running.size() && budget > 0;) {
    Sequence& s = *running[i];
    const int64_t count = std::min(int64_t(s.tokens.size()) - s.computed, budget);
    if (!grow(s, s.computed + count)) {
      Sequence& victim = *running.back();
      preempt(victim);
      if (&victim == &s) break;
      continue;
    }
    pieces.push_back({0, count, s.computed, &s.blocks, &s.recurrent});
    sequences.push_back(&s);
    budget -= count;
    ++i;
  }
  for (size_t w = 0; w < waiting.size() && budget > 0 && int64_t(running.size()) < options.max_running;) {
    Sequence& s = *waiting[w];
    if (waits_for_first_choice(s)) {
      ++w;
      continue;
    }
    reuse_prefix(s);
    const int64_t count = std::min(int64_t(s.tokens.size()) - s.computed, budget);
    if (!grow(s, s.computed + count)) {
      free_blocks(s);
      break;
    }
    waiting.erase(waiting.begin() + long(w));
    running.push_back(&s);
    pieces.push_back({0, count, s.computed, &s.blocks, &s.recurrent});
    sequences.push_back(&s);
    budget -= count;
  }
  int64_t start = 0;
  for (StepPiece& p : pieces) p.start = start, start += p.count;
  return pieces;
}

// The sequence's next token from its row of logits: reads the sequence and its request only, so the
// step draws its rows on every thread at once.
int64_t Engine::State::draw(const Sequence& s, std::span<const float> logits) const {
  return sample_token(logits, requests.at(s.request).options.sampling, s.tokens, uint64_t(s.choice),
                      uint64_t(s.generated()));
}

void Engine::State::take(Sequence& s, int64_t token, std::span<const float> logits) {
  Request& r = requests.at(s.request);
  const RequestOptions& o = r.options;
  TokenEvent event{s.request, s.choice, token, {token, 0}, {}};
  if (o.logprobs >= 0) token_logprobs(logits, token, o.logprobs, event);
  s.tokens.push_back(token);
  ++counts.generated_tokens;
  const bool keep_going = !r.callbacks.on_token || r.callbacks.on_token(event);
  const bool eos = !o.ignore_eos && std::count(options.eos_ids.begin(), options.eos_ids.end(), token) > 0;
  const bool stop_id = std::count(o.stop_token_ids.begin(), o.stop_token_ids.end(), token) > 0;
  if (!keep_going || eos || stop_id)
    finish(s, FinishReason::stop);
  else if (s.generated() >= o.max_tokens)
    finish(s, FinishReason::length);
}

Engine::Engine(const CausalLM& model, const EngineOptions& options)
    : state_(std::make_unique<State>(model, options)) {
  DEW_REQUIRE(model.device().kind == Device::Kind::cpu,
              "[serve] the model is on {}; the engine serves from the cpu", model.device().str());
  if (options.batch_invariant)  // NOTE [batch invariance]
    set_impl_overrides(select::cpu_supports(select::Isa::avx512) ? "matmul:cpu.avx512.dot_tiles"
                       : select::cpu_supports(select::Isa::avx2) ? "matmul:cpu.avx2.dot_tiles"
                                                                 : "matmul:portable");
  DEW_REQUIRE(options.max_step_tokens >= 1 && options.max_running >= 1,
              "[serve] max_step_tokens {} and max_running {}; expected both at least 1",
              options.max_step_tokens, options.max_running);
}

Engine::~Engine() = default;

const EngineOptions& Engine::options() const {
  return state_->options;
}

uint64_t Engine::submit(const std::vector<int64_t>& prompt, const RequestOptions& o,
                        RequestCallbacks callbacks) {
  State& st = *state_;
  const ModelConfig& c = st.model.config();
  DEW_REQUIRE(!prompt.empty(), "[serve] an empty prompt; expected at least one token");
  for (int64_t id : prompt)
    DEW_REQUIRE(id >= 0 && id < c.vocab_size, "[serve] prompt id {} is outside the vocabulary [0, {})", id,
                c.vocab_size);
  DEW_REQUIRE(
      o.max_tokens >= 1 && o.n >= 1 && o.n <= 128 && o.logprobs >= -1 && o.logprobs <= 20,
      "[serve] max_tokens {}, n {}, logprobs {}; expected max_tokens >= 1, n from 1 to 128 and logprobs "
      "from 0 to 20 (or none)",
      o.max_tokens, o.n, o.logprobs);
  const int64_t total = int64_t(prompt.size()) + o.max_tokens;
  DEW_REQUIRE(
      c.max_position_embeddings <= 0 || total <= c.max_position_embeddings,
      "[serve] the prompt's {} tokens and max_tokens {} make {}, past the model's context of {}; expected "
      "at most {} in all",
      prompt.size(), o.max_tokens, total, c.max_position_embeddings, c.max_position_embeddings);
  DEW_REQUIRE(
      st.blocks_for(total) <= st.pool.blocks(),
      "[serve] the prompt's {} tokens and max_tokens {} need {} KV blocks of {} tokens; the whole cache "
      "has {} (raise --kv-memory or lower max_tokens)",
      prompt.size(), o.max_tokens, st.blocks_for(total), st.pool.block_size(), st.pool.blocks());
  const uint64_t id = st.next_request++;
  Request& r = st.requests[id];
  r.options = o;
  if (!o.has_seed) {  // a seed of its own, from the engine's
    const std::array<uint32_t, 4> bits =
        philox4x32_10({uint32_t(id), uint32_t(id >> 32), 0, 0}, {uint32_t(st.seed), uint32_t(st.seed >> 32)});
    r.options.sampling.seed = uint64_t(bits[0]) << 32 | bits[1];
  }
  r.callbacks = std::move(callbacks);
  r.unfinished = o.n;
  for (int64_t choice = 0; choice < o.n; ++choice) {
    r.sequences.push_back(std::make_unique<Sequence>());
    Sequence& s = *r.sequences.back();
    s.request = id;
    s.choice = choice;
    s.tokens = prompt;
    s.prompt_length = int64_t(prompt.size());
    st.waiting.push_back(&s);
  }
  return id;
}

void Engine::cancel(uint64_t request) {
  State& st = *state_;
  const auto it = st.requests.find(request);
  if (it == st.requests.end()) return;  // finished already
  std::vector<Sequence*> live;
  for (auto& s : it->second.sequences)
    if (!s->finished) live.push_back(s.get());
  for (Sequence* s : live) st.finish(*s, FinishReason::cancelled);  // the last one erases the request
}

bool Engine::step() {
  State& st = *state_;
  std::vector<Sequence*> sequences;
  const std::vector<StepPiece> pieces = st.schedule(sequences);
  if (pieces.empty()) return false;
  NoGrad inference;
  std::vector<double> ids, positions, logit_rows;
  std::vector<Sequence*> sampled;
  for (size_t i = 0; i < pieces.size(); ++i) {
    Sequence& s = *sequences[i];
    for (int64_t t = 0; t < pieces[i].count; ++t) {
      ids.push_back(double(s.tokens[size_t(s.computed + t)]));
      positions.push_back(double(s.computed + t));
    }
    if (s.computed + pieces[i].count == int64_t(s.tokens.size())) {
      logit_rows.push_back(double(pieces[i].start + pieces[i].count - 1));
      sampled.push_back(&s);
    }
  }
  const int64_t N = int64_t(ids.size());
  if (logit_rows.empty()) logit_rows.push_back(double(N - 1));  // prompt chunks only: no row is sampled
  PagedStepAttention attention(st.pool, pieces, st.options.batch_invariant, &st.recurrent_batches);
  const Tensor logits =
      as_dtype(st.model.forward(Tensor::from_values(ids, {1, N}, DType::i64),
                                Tensor::from_values(positions, {1, N}, DType::i64), attention,
                                Tensor::from_values(logit_rows, {int64_t(logit_rows.size())}, DType::i64)),
               DType::f32)
          .contiguous();
  ++st.counts.steps;
  for (size_t i = 0; i < pieces.size(); ++i) {
    Sequence& s = *sequences[i];
    if (s.generated() == 0) st.counts.prompt_tokens_computed += pieces[i].count;
    s.computed += pieces[i].count;
    st.publish(s);
  }
  const int64_t V = st.model.config().vocab_size;
  const auto row = [&, rows = logits.data<float>()](size_t i) {  // no copy of the row
    return std::span<const float>(rows + i * size_t(V), size_t(V));
  };
  std::vector<int64_t> tokens(sampled.size());
  parallel_for(int64_t(sampled.size()), 4, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) tokens[size_t(i)] = st.draw(*sampled[size_t(i)], row(size_t(i)));
  });
  for (size_t i = 0; i < sampled.size(); ++i) st.take(*sampled[i], tokens[i], row(i));  // in order
  return true;
}

bool Engine::idle() const {
  return state_->running.empty() && state_->waiting.empty();
}

EngineStats Engine::stats() const {
  const State& st = *state_;
  EngineStats s = st.counts;
  s.running = int64_t(st.running.size());
  s.waiting = int64_t(st.waiting.size());
  s.kv_blocks = st.pool.blocks();
  s.kv_blocks_in_use = st.pool.in_use();
  s.prefix_lookups = st.pool.lookups();
  s.prefix_hits = st.pool.hits();
  return s;
}

}  // namespace dew::serve
