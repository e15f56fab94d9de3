// One link of a chain: pulls records from its upstream and yields records. Its position is a short
// list of integers from which a restored chain's next pull yields the record that would have come
// next; a stage that buffers records saves the upstream position from before its buffer (NOTE
// [positions]).
#pragma once

#include <dew/data.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>

namespace dew::data::detail {

using Json = nlohmann::json;

// NOTE [positions]
// A position is a flat list of integers: the upstream's position, then this stage's own fields (a
// fixed number per stage, so the layout is a function of the chain), down to the source's epoch and
// index. Flat, because stages snapshot their upstream's position per document, and a vector copy
// costs far less than building JSON. A stage whose output is a function of single records (map,
// filter, tokenize) has no fields of its own and saves the upstream's position from just before the
// next record it has not yet returned — whether it encodes one record at a time or a block on
// several threads, so the position never depends on the number of workers. A stage that holds a
// buffer (shuffle's window, pack's current document) saves the upstream's position from before the
// buffer began and how far into the buffer it is; restore reads the buffer again.
using Cursor = std::vector<int64_t>;

class Stage {
 public:
  explicit Stage(std::unique_ptr<Stage> upstream) : upstream_(std::move(upstream)) {}
  virtual ~Stage() = default;

  // Counts and times the record next() returns (StageStats).
  std::optional<Record> pull();

  Cursor position() const;
  // Appends the position (the upstream's, then this stage's fields) to `out`.
  virtual void save(Cursor& out) const { upstream_->save(out); }
  // `cursor` holds exactly cursor_size() integers, as save() wrote them.
  virtual void restore(std::span<const int64_t> cursor) { upstream_->restore(cursor); }
  virtual size_t cursor_size() const { return upstream_->cursor_size(); }
  virtual Json describe() const = 0;    // {"stage": name, ...parameters that shape the records}
  virtual std::string summary() const;  // one line for show(); describe() unless overridden
  // Maps and filters: a global shuffle after them may permute the source instead (shuffle.cc).
  virtual bool per_record() const { return false; }
  // Deterministic and per-record (or, as a global shuffle, only an order the source applies): the
  // stages from the source up to the last such one are what the cache stores (cache.cc).
  virtual bool cacheable() const { return false; }
  virtual const Tokenizer* tokenizer() const { return nullptr; }
  // A mixture's member chains (each given by its last stage), with their names.
  virtual std::vector<std::pair<std::string, const Stage*>> members() const { return {}; }

  Stage* upstream() const { return upstream_.get(); }
  std::unique_ptr<Stage>& upstream_slot() { return upstream_; }
  // A mixture's members, to be replaced in place (the cache does).
  virtual std::vector<std::unique_ptr<Stage>*> member_slots() { return {}; }
  // The descriptions this stage stands for: its own, or a cached prefix's stages.
  virtual Json described() const { return Json::array({describe()}); }
  StageStats stats() const;  // this stage's, its upstream's time subtracted
  int64_t dropped = 0;       // filtered out or skipped; a stage counts its own

 protected:
  virtual std::optional<Record> next() = 0;
  // For stages with `fields` integers of their own: restores the upstream from the front of `cursor`
  // and returns the rest.
  std::span<const int64_t> restore_upstream(std::span<const int64_t> cursor, size_t fields);
  std::unique_ptr<Stage> upstream_;

 private:
  int64_t records_out_ = 0, tokens_out_ = 0, padding_out_ = 0;
  double seconds_ = 0;  // inclusive of the upstream's time
};

// The stage that begins a chain: records numbered 0..size()-1 per epoch, read in the order a
// shuffle may set. Its position is [epoch, index].
class Source : public Stage {
 public:
  Source(SourceOptions options) : Stage(nullptr), options_(options) {}
  virtual int64_t size() const = 0;
  // Record `i` of this epoch's order, or nullopt when it is malformed and skip_malformed is set
  // (counted in dropped); malformed otherwise: an error naming the file and line.
  virtual std::optional<Record> read(int64_t i) = 0;
  // From now on epoch e reads record permutation(seed, e, i) at step i (shuffle.cc).
  void shuffle_globally(uint64_t seed) { shuffle_seed_ = seed; }
  bool shuffled() const { return shuffle_seed_.has_value(); }
  std::optional<uint64_t> shuffle_seed() const { return shuffle_seed_; }
  const SourceOptions& options() const { return options_; }
  // The cache's pass reads one epoch in source order, then puts these back.
  void set_reading(const SourceOptions& options, std::optional<uint64_t> shuffle_seed) {
    options_ = options;
    shuffle_seed_ = shuffle_seed;
  }
  // False where records are pieces of one document (token files without separators): not shuffled.
  virtual bool records_are_documents() const { return true; }

  void save(Cursor& out) const override { out.insert(out.end(), {epoch_, index_}); }
  void restore(std::span<const int64_t> cursor) override;
  size_t cursor_size() const override { return 2; }
  std::string summary() const override;

 protected:
  std::optional<Record> next() override;
  Json describe_options() const;
  SourceOptions options_;

 private:
  int64_t epoch_ = 0, index_ = 0;
  std::optional<uint64_t> shuffle_seed_;
  bool whole_epoch_ = true;  // this epoch was read from its first record here
  int64_t returned_in_epoch_ = 0;
};

// The descriptions of `head` and every stage below it, source first: what a position is valid for.
Json describe_stages(const Stage& head);

// Sources (sources.cc, token_files.cc).
std::unique_ptr<Source> make_text_source(const std::vector<std::string>& paths, TextUnit unit,
                                         SourceOptions options);
std::unique_ptr<Source> make_jsonl_source(const std::vector<std::string>& paths, const std::string& field,
                                          SourceOptions options);
std::unique_ptr<Source> make_token_source(const std::vector<std::string>& paths,
                                          std::optional<int32_t> separator, SourceOptions options);
std::unique_ptr<Source> make_memory_source(std::vector<Record> records, SourceOptions options);
std::unique_ptr<Source> make_idx_image_source(const std::string& images, const std::string& labels,
                                              SourceOptions options);

// Stages (one file each).
std::unique_ptr<Stage> make_map(std::unique_ptr<Stage> upstream, const std::string& name,
                                std::function<Record(Record)> f);
std::unique_ptr<Stage> make_filter(std::unique_ptr<Stage> upstream, const std::string& name,
                                   std::function<bool(const Record&)> keep);
// A map and a filter known to positions by `description` ({"stage": ..., parameters}).
std::unique_ptr<Stage> make_described_map(std::unique_ptr<Stage> upstream, Json description,
                                          std::function<Record(Record)> f);
std::unique_ptr<Stage> make_described_filter(std::unique_ptr<Stage> upstream, Json description,
                                             std::function<bool(const Record&)> keep);
std::unique_ptr<Stage> make_quality_filter(std::unique_ptr<Stage> upstream, const QualityOptions& options);
std::unique_ptr<Stage> make_strip_tags(std::unique_ptr<Stage> upstream, const StripTagsOptions& options);
std::unique_ptr<Stage> make_flip_horizontal(std::unique_ptr<Stage> upstream, uint64_t seed,
                                            double probability);
std::unique_ptr<Stage> make_shuffle(std::unique_ptr<Stage> upstream, uint64_t seed, int64_t window);
std::unique_ptr<Stage> make_tokenize(std::unique_ptr<Stage> upstream, const std::string& tokenizer_path,
                                     const TokenizeOptions& options);
std::unique_ptr<Stage> make_chat(std::unique_ptr<Stage> upstream, const std::string& tokenizer_path,
                                 const ChatStageOptions& options);
std::unique_ptr<Stage> make_pack(std::unique_ptr<Stage> upstream, int64_t T);
// XXH3-64 of the files that decide a tokenizer's ids and chat renderings (tokenizer.json, and
// tokenizer_config.json and chat_template.jinja beside it), for stage descriptions.
std::string tokenizer_content_hash(const std::string& path);
std::unique_ptr<Stage> make_pack_first_fit(std::unique_ptr<Stage> upstream, int64_t T, int64_t block);
// Dedup and decontamination (dedup.cc, decontaminate.cc): `upstream` is the source or such a stage.
std::unique_ptr<Stage> make_dedup(std::unique_ptr<Stage> upstream);
std::unique_ptr<Stage> make_near_dedup(std::unique_ptr<Stage> upstream, const NearDedupOptions& options);
std::unique_ptr<Stage> make_decontaminate(std::unique_ptr<Stage> upstream,
                                          const std::vector<std::string>& held_out, int n);

struct MixInput {
  std::string name;
  double weight = 0;
  std::unique_ptr<Stage> head;
};
std::unique_ptr<Stage> make_mix(std::vector<MixInput> members, uint64_t seed);

// This process's rows of a global batch of image records (image_batch.cc): all of one size, the
// rows past the chain's end padding (zero images, label -1).
Batch image_batch(const std::vector<Record>& rows, int64_t global_size, Shard shard);

// A uniformly random permutation of [0, n) evaluated one element at a time in O(1) memory: a
// Feistel network keyed by Philox, cycle-walked into range (shuffle.cc).
int64_t permuted_index(int64_t i, int64_t n, uint64_t seed, uint64_t round_key);

}  // namespace dew::data::detail
