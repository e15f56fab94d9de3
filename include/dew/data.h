// The data chain (docs/data.md): a source followed by stages, iterated into batches,
// with a position — a small JSON record — from which a resumed chain yields exactly the records that
// would have come next. Worker threads and prefetch change speed, never the records or their order.
#pragma once

#include <dew/tensor.h>
#include <dew/tokenizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dew::data {

// What flows between stages: a document's text; its tokens after `tokenize` (or from token files);
// a window of T+1 tokens with segment ids and positions after `pack`.
struct Record {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<int32_t> segment_ids;  // after pack: 1, 2, ... per document in the window; 0 = padding
  std::vector<int32_t> positions;    // after pack: each token's position within its document
  // Per token: 1 where predicting it counts in the loss (an assistant's turn, from the chat stage), 0
  // where it is context only. Empty: every token counts. After pack: always filled (padding 0).
  std::vector<uint8_t> loss_mask;
  // The tokens continue the previous record's document (a token file without document separators is
  // read in pieces), so pack neither restarts positions nor opens a new segment.
  bool continues = false;
  // An image (from an image source): u8 pixels (C,H,W) row-major, and its class (-1: none).
  std::vector<uint8_t> pixels;
  int64_t channels = 0, height = 0, width = 0;
  int64_t label = -1;
  std::string origin;  // "path:line" (or "records[i]"), for messages
  int64_t index = -1;  // its number in its source (the order before any shuffle)
  int64_t epoch = 0;   // the source's epoch it was read in (per-epoch augmentations draw from it)
};

// A batch of packed windows: this process's rows of the global batch. The tensors are (rows, T+1)
// i64: a model reads tokens[:, :T] and predicts tokens[:, 1:]; a target whose segment differs from
// its input's, or is 0 (padding), is not a real next token.
struct Batch {
  int64_t index = 0;  // 0, 1, ... since the chain began (not since this process resumed)
  Tensor tokens, segment_ids, positions;
  Tensor loss_mask;         // (rows, T+1) i64: 1 where predicting the token counts (Record::loss_mask)
  int64_t real_tokens = 0;  // of these rows, tokens that are not padding
  // A batch of image records instead: images (rows,C,H,W) f32, pixels scaled from [0, 255] to [-1, 1];
  // labels (rows) i64, -1 for a row without a class and for the padding rows that fill a last batch.
  Tensor images, labels;
  int64_t real_rows = 0;  // of these rows, images that are not padding
};

enum class TextUnit { file, line, paragraph };  // a document per file, per line, per blank-line block

struct SourceOptions {
  int64_t epochs = 1;           // 0: repeat forever (each epoch reshuffled by a shuffle stage)
  bool skip_malformed = false;  // skip and count bad records (bad UTF-8, broken JSONL) instead of failing
};

struct TokenizeOptions {
  bool special_tokens = true;  // BOS/EOS as the tokenizer's configuration adds them
  bool append_eos = false;     // and the tokenizer's eos_token after every document (GPT-2 style)
  int workers = 1;             // threads encoding blocks of records; never changes the output
};

struct ChatStageOptions {
  std::string template_name;  // of tokenizer_config's named templates; empty: "default"
};

struct QualityOptions {                   // simple quality predicates; a document failing one is dropped
  int64_t min_chars = 0, max_chars = 0;   // code points; 0: no bound
  double min_letter_fraction = 0;         // letters (Unicode category L*) / code points
  double max_repeated_line_fraction = 1;  // lines equal to an earlier line of the document / lines
};

// Tagged text (word/tag tokens, as the Brown corpus has them) back to plain text (docs/data.md).
struct StripTagsOptions {
  std::string separator = "/";  // a token's tag starts at its last separator
};

// Near-duplicate removal: MinHash over character n-grams of the text (lowercased, whitespace runs
// as one space), banded LSH for candidates, each candidate pair confirmed by its exact Jaccard.
struct NearDedupOptions {
  int ngram = 5;
  int bands = 20,
      rows = 5;             // bands x rows hashes; a pair at Jaccard s is a candidate w.p. 1-(1-s^rows)^bands
  double threshold = 0.75;  // a candidate is a duplicate when its exact Jaccard is at least this
  std::string clusters_path;  // if set: a JSONL line per cluster (kept record, dropped records)
};

// The automatic cache of a chain's deterministic prefix (docs/data.md, "Automatic cache").
struct CacheOptions {
  bool enabled = true;
  std::string dir;        // empty: $DEW_DATA_CACHE, else $XDG_CACHE_HOME/dew/data, else ~/.cache/dew/data
  int64_t max_bytes = 0;  // the directory's cap; 0: $DEW_DATA_CACHE_MAX_BYTES, else 64 GiB
};

struct Shard {  // this process's share of each global batch
  int64_t index = 0, count = 1;
};

struct StageStats {
  std::string stage;
  int64_t records_in = 0, records_out = 0;
  int64_t tokens_out = 0, padding_tokens = 0;
  int64_t dropped = 0;  // filtered out, or skipped as malformed
  double seconds = 0;   // time in this stage alone (its upstream's time subtracted)
};

struct MixMember;
struct Phase;

class Chain {
 public:
  // Sources. Paths are files or glob patterns; a pattern that matches nothing or a missing file is
  // an error naming it. Several files make one source sharded over them, read in sorted order.
  static Chain text_files(const std::vector<std::string>& paths, TextUnit unit, SourceOptions options = {});
  // JSONL: the string at `field`, a dotted path ("text", "messages.0.content").
  static Chain jsonl(const std::vector<std::string>& paths, const std::string& field,
                     SourceOptions options = {});
  // Token files: llm.c's .bin (a 256 x i32 header: 20240520, version 1 (u16) or 2 (u32), count) or a
  // 1-D .npy of u16/u32/i32/i64. With `separator` (an EOS id), a document ends after each separator;
  // without, each file is one document read in pieces.
  static Chain token_files(const std::vector<std::string>& paths, std::optional<int32_t> separator,
                           SourceOptions options = {});
  static Chain records(std::vector<Record> records, SourceOptions options = {});
  // IDX images (MNIST, Fashion-MNIST; gzipped or not): u8 images (N,H,W) as 1-channel records, with
  // the classes of a u8 labels file (N) when one is given (else label -1).
  static Chain idx_images(const std::string& images_path, const std::string& labels_path = {},
                          SourceOptions options = {});
  // A weighted mixture of record chains (without batch), keyed by name: draw k takes the next record
  // of a member picked with probability weight / Σ weights by a seeded schedule. It ends when a
  // member it picks has ended (give members epochs = 0 to mix forever).
  static Chain mix(std::vector<MixMember> members, uint64_t seed);
  // Batches from each phase's chain (ending in batch; all of one batch shape) until its budget of
  // tokens — global rows x T per batch, counted as batches are returned (the committed-token clock)
  // — is spent; exact at the boundaries, so a budget is a whole number of batches. The last phase's
  // budget may be 0: until its chain ends.
  static Chain schedule(std::vector<Phase> phases);

  // Stages, in order. A C++ callable is known to the chain's description by its name only: rename it
  // when its behaviour changes, so that resuming an old position is refused.
  Chain& map(const std::string& name, std::function<Record(Record)> f);
  Chain& filter(const std::string& name, std::function<bool(const Record&)> keep);
  Chain& quality(const QualityOptions& options);
  Chain& strip_tags(const StripTagsOptions& options = {});
  // Dedup and decontamination judge the source's records in one pass when the stage is added, so they
  // come right after the source (or after one another); they drop later copies, keeping the first.
  Chain& dedup();  // exact: by a 128-bit hash of the text (or of the ids of token records)
  Chain& near_dedup(const NearDedupOptions& options = {});
  // Drops documents sharing a word n-gram (lowercased alphanumeric words) with the held-out files.
  Chain& decontaminate(const std::vector<std::string>& held_out_paths, int n = 13);
  // window 0: a global permutation (per epoch) where every stage before it is per-record; otherwise a
  // buffer of `window` records shuffled as a block.
  Chain& shuffle(uint64_t seed, int64_t window = 0);
  Chain& tokenize(const std::string& tokenizer_path, const TokenizeOptions& options = {});
  // SFT: each record a conversation (JSON messages), rendered by the tokenizer's chat template and
  // encoded, loss_mask 1 on the assistant's turns only (docs/data.md). In place of tokenize.
  Chain& chat(const std::string& tokenizer_path, const ChatStageOptions& options = {});
  // Concatenate documents and cut windows of T+1 tokens, each starting at the previous window's last
  // token (llm.c's stride T); the last window of a finite chain is padded with id 0.
  Chain& pack(int64_t T);
  // Whole documents into windows of T+1 (first-fit-decreasing over blocks of `block` documents),
  // never split unless longer than a window; positions restart in each document; windows padded.
  Chain& pack_first_fit(int64_t T, int64_t block = 1000);
  // Image records mirrored left to right with `probability`, drawn per (seed, epoch, record): a
  // resumed or reshuffled chain flips exactly the images it would have.
  Chain& flip_horizontal(uint64_t seed, double probability = 0.5);
  // Rows of packed windows (tokens) or of images of one size (images, labels).
  Chain& batch(int64_t global_size, Shard shard = {});
  // How the cache serves this chain (on by default); it takes effect when the chain is first read.
  Chain& cache(const CacheOptions& options);
  // A thread builds up to `batches` batches ahead of the consumer.
  Chain& prefetch(int64_t batches);

  std::optional<Record> next_record();  // a chain without batch
  std::optional<Batch> next_batch();    // a chain with batch

  // The position after what has been returned, and back to it. Resuming with a chain whose
  // description differs is refused with the differences named.
  std::string position() const;
  void resume(const std::string& position);

  std::string show() const;               // the expanded stages, one per line
  std::vector<StageStats> stats() const;  // source first
  std::string description() const;        // JSON: what the position is valid for
  const Tokenizer* tokenizer() const;     // the tokenize or chat stage's, if any

  Chain(Chain&&) noexcept;
  Chain& operator=(Chain&&) noexcept;
  ~Chain();

 private:
  struct State;
  explicit Chain(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

struct MixMember {
  std::string name;
  double weight = 0;
  Chain chain;
};

struct Phase {
  Chain chain;
  int64_t tokens = 0;
};

// A chain from the [data] table of a TOML config (docs/data.md); relative paths are relative to
// the config file's directory; a tokenize or chat stage that names no tokenizer takes the config's
// [tokenizer] path. `overrides` are "key=value" pairs (`data.stage.2.seed=5`).
// `table` names the chain's table: "data", or "eval.data" for a held-out chain.
Chain chain_from_config(const std::string& config_path, const std::vector<std::string>& overrides = {},
                        const std::string& table = "data");
// The text that chain's tokenize (or chat) stage reads: its source, for one epoch, and the stages
// before that one — what `dew train` trains a config's [tokenizer] on.
Chain text_chain_from_config(const std::string& config_path, const std::vector<std::string>& overrides = {});

}  // namespace dew::data
