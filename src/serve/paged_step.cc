// PagedStepAttention: the cache writes, the one-token pieces through paged_attention, the prompt chunks
// through attention over gathered keys.
#include "serve/paged_step.h"

#include <dew/ops.h>
#include <dew/runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "ops/attention/paged.h"

namespace dew::serve {
namespace {

constexpr int64_t kCopiesAThread = 256;  // a thread's least share of a step's cache writes

// Copies `rows` rows of `row_bytes` from x's row `from` to y's row `to` (both contiguous).
void copy_rows(const Tensor& x, int64_t from, Tensor& y, int64_t to, int64_t rows, size_t row_bytes) {
  std::memcpy(static_cast<char*>(y.raw_data()) + size_t(to) * row_bytes,
              static_cast<const char*>(x.raw_data()) + size_t(from) * row_bytes, size_t(rows) * row_bytes);
}

}  // namespace

PagedStepAttention::PagedStepAttention(KvBlockPool& pool, std::vector<StepPiece> pieces,
                                       bool every_token_paged, RecurrentBatches* batches)
    : pool_(pool), pieces_(std::move(pieces)), every_token_paged_(every_token_paged), batches_(batches) {
  std::vector<double> tables, lengths;
  int64_t width = 1;
  for (const StepPiece& p : pieces_)
    if (paged(p)) width = std::max(width, int64_t(p.blocks->size()));
  for (const StepPiece& p : pieces_) {
    if (!paged(p)) continue;
    for (int64_t t = 0; t < p.count; ++t) {
      for (int64_t b = 0; b < width; ++b)
        tables.push_back(b < int64_t(p.blocks->size()) ? double((*p.blocks)[size_t(b)]) : 0);
      lengths.push_back(double(p.position + t + 1));
      paged_rows_.push_back(p.start + t);
    }
  }
  if (paged_rows_.empty()) return;
  const int64_t n = int64_t(paged_rows_.size());
  paged_tables_ = Tensor::from_values(tables, {n, width}, DType::i64);
  paged_lengths_ = Tensor::from_values(lengths, {n}, DType::i64);
  paged_row_index_ = Tensor::from_values({paged_rows_.begin(), paged_rows_.end()}, {n}, DType::i64);
}

void PagedStepAttention::write_cache(int64_t layer, const Tensor& k, const Tensor& v) {
  const int64_t bs = pool_.block_size();
  for (auto [x, cache] : {std::pair{&k, &pool_.keys(layer)}, {&v, &pool_.values(layer)}}) {
    // (1,N,Hkv,D): each token's D values of each head copied from where they lie when they are in the
    // cache's dtype (v is a view of the joined q, k, v product), else from a contiguous copy.
    const bool in_place = x->dim() == 4 && x->dtype() == cache->dtype() && x->strides()[3] == 1;
    const Tensor rows = in_place ? *x : as_dtype(*x, cache->dtype()).contiguous();
    const int64_t Hkv = rows.size(2), D = rows.size(3);
    const size_t element = dtype_size(rows.dtype()), head_bytes = size_t(D) * element;
    const size_t token_stride = size_t(rows.strides()[1]), head_stride = size_t(rows.strides()[2]);
    const char* from = static_cast<const char*>(rows.raw_data());
    char* to = static_cast<char*>(cache->raw_data());
    // A prompt's rows on both threads, each copy a miss on its destination's lines (docs/perf.md, "A
    // prompt's cache writes on both threads"); a decode step's few rows on the caller.
    const int64_t tokens = pieces_.empty() ? 0 : pieces_.back().start + pieces_.back().count;
    const int64_t grain =
        std::max<int64_t>(1, int64_t(pieces_.size()) * kCopiesAThread / std::max<int64_t>(1, tokens * Hkv));
    parallel_for(int64_t(pieces_.size()), grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const StepPiece& p = pieces_[size_t(i)];
        for (int64_t t = 0; t < p.count; ++t)
          for (int64_t h = 0; h < Hkv; ++h) {
            const int64_t at = ops::paged_key_offset(p.blocks->data(), p.position + t, h, Hkv, bs, D);
            std::memcpy(to + size_t(at) * element,
                        from + (size_t(p.start + t) * token_stride + size_t(h) * head_stride) * element,
                        head_bytes);
          }
      }
    });
    Tensor(*cache).bump_version();
  }
}

Tensor PagedStepAttention::attend(int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& mask) {
  DEW_REQUIRE(q.size(0) == 1, "[serve] a step is one row of tokens; got q {}", q.describe());
  write_cache(layer, k, v);
  const Tensor& keys = pool_.keys(layer);
  const Tensor& values = pool_.values(layer);
  const int64_t N = q.size(1), H = q.size(2), D = q.size(3), Hkv = keys.size(1), bs = pool_.block_size();
  const DType cache_dtype = keys.dtype();
  AttentionOptions options = mask;
  options.causal = true;
  const auto paged_out = [&](const Tensor& rows) {  // (n,H,D) queries of the paged rows
    return as_dtype(
        paged_attention(as_dtype(rows, cache_dtype), keys, values, paged_tables_, paged_lengths_, options)
            .out,
        q.dtype());
  };
  // A step of decode tokens only (rows 0 to N-1 in order) needs neither the gather nor the scatter.
  if (int64_t(paged_rows_.size()) == N) return paged_out(q.reshape({N, H, D})).reshape({1, N, H, D});
  Tensor out = Tensor::empty({1, N, H, D}, q.dtype());
  const size_t out_row = size_t(H * D) * dtype_size(q.dtype());
  if (!paged_rows_.empty()) {
    const Tensor o = paged_out(index_select(q.reshape({N, H, D}), 0, paged_row_index_));
    for (size_t i = 0; i < paged_rows_.size(); ++i) copy_rows(o, int64_t(i), out, paged_rows_[i], 1, out_row);
  }
  // NOTE [pieces attended together]: the prompt pieces of one length at one position (prompts of one
  // length arriving together) attend as one batch, a row each: one call whose (piece, head) pairs the
  // threads share, where a call each cost more than a short piece's arithmetic.
  std::map<std::pair<int64_t, int64_t>, std::vector<const StepPiece*>> groups;  // (count, position)
  for (const StepPiece& p : pieces_)
    if (!paged(p)) groups[{p.count, p.position}].push_back(&p);
  const Tensor queries = q.contiguous();
  const size_t head_bytes = size_t(D) * dtype_size(cache_dtype);
  for (const auto& [shape, group] : groups) {
    const auto [count, position] = shape;
    const int64_t G = int64_t(group.size()), S = position + count;
    // Each piece's S keys and values (S,Hkv,D) gathered from its blocks' heads; its queries.
    Tensor dense_k = Tensor::empty({G, S, Hkv, D}, cache_dtype);
    Tensor dense_v = Tensor::empty({G, S, Hkv, D}, cache_dtype);
    Tensor group_q = Tensor::empty({G, count, H, D}, q.dtype());
    for (int64_t g = 0; g < G; ++g) {
      const StepPiece& p = *group[size_t(g)];
      for (int64_t j = 0; j < S; ++j)
        for (int64_t h = 0; h < Hkv; ++h) {
          const int64_t at = ops::paged_key_offset(p.blocks->data(), j, h, Hkv, bs, D);
          copy_rows(keys, at / D, dense_k, (g * S + j) * Hkv + h, 1, head_bytes);
          copy_rows(values, at / D, dense_v, (g * S + j) * Hkv + h, 1, head_bytes);
        }
      copy_rows(queries, p.start, group_q, g * count, count, out_row);
    }
    const Tensor o =
        as_dtype(attention(as_dtype(group_q, cache_dtype), dense_k, dense_v, options).out, q.dtype())
            .contiguous();
    for (int64_t g = 0; g < G; ++g) copy_rows(o, g * count, out, group[size_t(g)]->start, count, out_row);
  }
  return out;
}

// NOTE [recurrent pieces]: the one-token pieces whose sequences hold a state at the layer run as one
// batch of rows (P, 1, C), their states stacked and handed back as views of the result; a prompt's chunk,
// or a sequence's very first token, runs alone on its sequence's own cache. Either way a sequence's rows
// meet only its own state, and the kernels compute each row alone. When every piece's state is still
// row r of the previous step's stack (steady decoding), that stack is read as it is: stacking the states
// anew copied them all at every step, most of a small model's step at 32 sequences.
Tensor PagedStepAttention::mix(int64_t layer, const Tensor& h, const RecurrentMixer& mixer) {
  DEW_REQUIRE(h.size(0) == 1, "[serve] a step is one row of tokens; got h {}", h.describe());
  const int64_t C = h.size(2);
  const auto holds_state = [&](const KvCache& cache) {
    return int64_t(cache.states.size()) > layer && cache.states[size_t(layer)].defined();
  };
  std::vector<Tensor> outs(pieces_.size());
  std::vector<size_t> together;
  std::vector<double> rows;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const StepPiece& p = pieces_[i];
    if (p.count == 1 && holds_state(*p.recurrent)) {
      together.push_back(i);
      rows.push_back(double(p.start));
    } else {
      outs[i] = mixer(h.slice(1, p.start, p.start + p.count), p.recurrent, {});
    }
  }
  if (!together.empty()) {
    const int64_t P = int64_t(together.size());
    KvCache batch;
    batch.conv_inputs.resize(size_t(layer) + 1);
    batch.states.resize(size_t(layer) + 1);
    std::vector<Tensor> conv, state;
    for (size_t i : together) {
      conv.push_back(pieces_[i].recurrent->conv_inputs[size_t(layer)]);
      state.push_back(pieces_[i].recurrent->states[size_t(layer)]);
    }
    // The previous step's stack `kept` at this layer when `rows` are its rows in order; else them stacked.
    const auto reuse = [&](std::vector<Tensor>* kept, const std::vector<Tensor>& rows) {
      if (!kept) return concat(rows, 0);
      if (int64_t(kept->size()) <= layer) kept->resize(size_t(layer) + 1);
      const Tensor& stack = (*kept)[size_t(layer)];
      bool same = stack.defined() && stack.size(0) == P;
      for (int64_t r = 0; same && r < P; ++r)
        same = rows[size_t(r)].shares_storage_with(stack) &&
               rows[size_t(r)].raw_data() == static_cast<const char*>(stack.raw_data()) +
                                                 r * (stack.numel() / P) * int64_t(dtype_size(stack.dtype()));
      return same ? stack : concat(rows, 0);
    };
    batch.conv_inputs[size_t(layer)] = reuse(batches_ ? &batches_->conv_inputs : nullptr, conv);
    batch.states[size_t(layer)] = reuse(batches_ ? &batches_->states : nullptr, state);
    const Tensor index = Tensor::from_values(rows, {P}, DType::i64);
    const Tensor o = mixer(index_select(h.reshape({h.size(1), C}), 0, index).reshape({P, 1, C}), &batch, {});
    if (batches_) {
      batches_->conv_inputs[size_t(layer)] = batch.conv_inputs[size_t(layer)];
      batches_->states[size_t(layer)] = batch.states[size_t(layer)];
    }
    for (int64_t r = 0; r < P; ++r) {
      KvCache& own = *pieces_[together[size_t(r)]].recurrent;
      own.conv_inputs[size_t(layer)] = batch.conv_inputs[size_t(layer)].slice(0, r, r + 1);
      own.states[size_t(layer)] = batch.states[size_t(layer)].slice(0, r, r + 1);
      outs[together[size_t(r)]] = o.slice(0, r, r + 1);
    }
  }
  return concat(outs, 1);
}

}  // namespace dew::serve
