// One engine step's attention through the paged KV cache: the step's tokens are one row (1, N) of
// several sequences' pieces — a decode token, or a chunk of a prompt. Each layer writes the pieces'
// keys and values into their blocks, then a one-token piece attends through paged_attention, read in
// place, and a longer one through attention over its keys gathered from the blocks (the dense kernels'
// speed for prefill), the pieces of one length at one position together (NOTE [pieces attended together]). A
// recurrent layer (qwen3_next's Gated DeltaNet) continues each piece's sequence's own state: the one-token
// pieces together as a batch of rows, a longer piece alone.
#pragma once

#include <dew/models.h>

#include <vector>

#include "serve/kv_block_pool.h"

namespace dew::serve {

// With `every_token_paged` (NOTE [batch invariance]), every token, prompt chunks' too, is one query row
// of paged_attention.
struct StepPiece {
  int64_t start = 0;     // first token of the piece in the step's row
  int64_t count = 0;     // its tokens
  int64_t position = 0;  // the position of its first token (the tokens before it are cached)
  const std::vector<int64_t>* blocks = nullptr;  // the sequence's block table, covering the piece
  KvCache* recurrent = nullptr;                  // the sequence's recurrent states before the piece
};

// The last step's stacked recurrent states, per layer (NOTE [recurrent pieces]), kept by the engine from
// one step to the next.
struct RecurrentBatches {
  std::vector<Tensor> conv_inputs, states;
};

class PagedStepAttention final : public LayerAttention {
 public:
  PagedStepAttention(KvBlockPool& pool, std::vector<StepPiece> pieces, bool every_token_paged = false,
                     RecurrentBatches* batches = nullptr);
  Tensor attend(int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionOptions& mask) override;
  Tensor mix(int64_t layer, const Tensor& h, const RecurrentMixer& mixer) override;

 private:
  void write_cache(int64_t layer, const Tensor& k, const Tensor& v);
  // Whether a piece's tokens are rows of paged_attention: one-token pieces, or every token.
  bool paged(const StepPiece& p) const { return every_token_paged_ || p.count == 1; }
  KvBlockPool& pool_;
  std::vector<StepPiece> pieces_;
  bool every_token_paged_;
  RecurrentBatches* batches_;
  // The paged rows' block tables, lengths and places in the step's row, built once per step.
  Tensor paged_tables_, paged_lengths_, paged_row_index_;
  std::vector<int64_t> paged_rows_;
};

}  // namespace dew::serve
