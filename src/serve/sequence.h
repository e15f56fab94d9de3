// The engine's records: a request and its choices' sequences (prompt plus generated tokens, the
// blocks holding their keys and values, how many of them are computed), and the log-probabilities a
// request may ask for. Internal to src/serve.
#pragma once

#include <dew/serve.h>

#include <memory>
#include <span>
#include <vector>

namespace dew::serve {

struct Sequence {
  uint64_t request = 0;
  int64_t choice = 0;
  std::vector<int64_t> tokens;  // the prompt, then the generated tokens
  int64_t prompt_length = 0;
  std::vector<int64_t> blocks;  // the block table: token t's keys and values in blocks[t / block_size]
  int64_t computed = 0;         // tokens whose keys and values are in the blocks
  int64_t published = 0;        // leading full blocks given to the prefix cache
  KvCache recurrent;            // recurrent layers' convolution inputs and states after `computed` tokens
  bool finished = false;
  int64_t generated() const { return int64_t(tokens.size()) - prompt_length; }
};

struct Request {
  RequestOptions options;
  RequestCallbacks callbacks;
  std::vector<std::unique_ptr<Sequence>> sequences;  // one per choice
  int64_t unfinished = 0;
};

// The chosen token's log-probability and the k most likely tokens' (ties to the lower id), from the
// log-softmax of the logits in double.
void token_logprobs(std::span<const float> logits, int64_t token, int64_t k, TokenEvent& event);

}  // namespace dew::serve
