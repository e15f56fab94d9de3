// Chain: building a chain stage by stage, iterating it into records or batches, and seeing it
// (show, stats). Saving and resuming positions is position.cc.
#include <dew/error.h>

#include "data/chain_state.h"

namespace dew::data {

using detail::Json;

Chain::Chain(std::unique_ptr<State> state) : state_(std::move(state)) {}
Chain::Chain(Chain&&) noexcept = default;
Chain& Chain::operator=(Chain&&) noexcept = default;
Chain::~Chain() = default;

void Chain::State::require_growing(const char* stage) const {
  DEW_REQUIRE(!schedule, "[data] {}: a schedule's phases are whole chains; put stages inside the phases",
              stage);
  DEW_REQUIRE(!batch_size, "[data] {}: the chain already ends in batch; record stages come before batch",
              stage);
  DEW_REQUIRE(prefetch == 0, "[data] {}: prefetch is the last stage", stage);
}

Chain Chain::text_files(const std::vector<std::string>& paths, TextUnit unit, SourceOptions options) {
  return Chain(std::make_unique<State>(detail::make_text_source(paths, unit, options)));
}
Chain Chain::jsonl(const std::vector<std::string>& paths, const std::string& field, SourceOptions options) {
  return Chain(std::make_unique<State>(detail::make_jsonl_source(paths, field, options)));
}
Chain Chain::token_files(const std::vector<std::string>& paths, std::optional<int32_t> separator,
                         SourceOptions options) {
  return Chain(std::make_unique<State>(detail::make_token_source(paths, separator, options)));
}
Chain Chain::records(std::vector<Record> records, SourceOptions options) {
  return Chain(std::make_unique<State>(detail::make_memory_source(std::move(records), options)));
}

Chain Chain::idx_images(const std::string& images_path, const std::string& labels_path,
                        SourceOptions options) {
  return Chain(std::make_unique<State>(detail::make_idx_image_source(images_path, labels_path, options)));
}

Chain Chain::mix(std::vector<MixMember> members, uint64_t seed) {
  std::vector<detail::MixInput> inputs;
  for (MixMember& m : members) {
    State& member = *m.chain.state_;
    DEW_REQUIRE(!member.batch_size && member.prefetch == 0,
                "[data] mix: member {} ends in batch; a mixture mixes records, and batch comes after it",
                m.name);
    inputs.push_back({m.name, m.weight, std::move(member.head)});
  }
  return Chain(std::make_unique<State>(detail::make_mix(std::move(inputs), seed)));
}

Chain Chain::schedule(std::vector<Phase> phases) {
  return Chain(std::make_unique<State>(std::make_unique<detail::Schedule>(std::move(phases))));
}

Chain& Chain::map(const std::string& name, std::function<Record(Record)> f) {
  state_->grow("map",
               [&](auto upstream) { return detail::make_map(std::move(upstream), name, std::move(f)); });
  return *this;
}
Chain& Chain::filter(const std::string& name, std::function<bool(const Record&)> keep) {
  state_->grow("filter", [&](auto upstream) {
    return detail::make_filter(std::move(upstream), name, std::move(keep));
  });
  return *this;
}
Chain& Chain::quality(const QualityOptions& options) {
  state_->grow("quality",
               [&](auto upstream) { return detail::make_quality_filter(std::move(upstream), options); });
  return *this;
}
Chain& Chain::strip_tags(const StripTagsOptions& options) {
  state_->grow("strip_tags",
               [&](auto upstream) { return detail::make_strip_tags(std::move(upstream), options); });
  return *this;
}
Chain& Chain::dedup() {
  state_->grow("dedup", [&](auto upstream) { return detail::make_dedup(std::move(upstream)); });
  return *this;
}
Chain& Chain::near_dedup(const NearDedupOptions& options) {
  state_->grow("near_dedup",
               [&](auto upstream) { return detail::make_near_dedup(std::move(upstream), options); });
  return *this;
}
Chain& Chain::decontaminate(const std::vector<std::string>& held_out_paths, int n) {
  state_->grow("decontaminate", [&](auto upstream) {
    return detail::make_decontaminate(std::move(upstream), held_out_paths, n);
  });
  return *this;
}
Chain& Chain::shuffle(uint64_t seed, int64_t window) {
  state_->grow("shuffle",
               [&](auto upstream) { return detail::make_shuffle(std::move(upstream), seed, window); });
  return *this;
}
Chain& Chain::tokenize(const std::string& tokenizer_path, const TokenizeOptions& options) {
  state_->grow("tokenize", [&](auto upstream) {
    return detail::make_tokenize(std::move(upstream), tokenizer_path, options);
  });
  return *this;
}
Chain& Chain::chat(const std::string& tokenizer_path, const ChatStageOptions& options) {
  state_->grow(
      "chat", [&](auto upstream) { return detail::make_chat(std::move(upstream), tokenizer_path, options); });
  return *this;
}
Chain& Chain::pack(int64_t T) {
  state_->grow("pack", [&](auto upstream) { return detail::make_pack(std::move(upstream), T); });
  return *this;
}
Chain& Chain::pack_first_fit(int64_t T, int64_t block) {
  state_->grow("pack",
               [&](auto upstream) { return detail::make_pack_first_fit(std::move(upstream), T, block); });
  return *this;
}
Chain& Chain::flip_horizontal(uint64_t seed, double probability) {
  state_->grow("flip_horizontal", [&](auto upstream) {
    return detail::make_flip_horizontal(std::move(upstream), seed, probability);
  });
  return *this;
}
Chain& Chain::batch(int64_t global_size, Shard shard) {
  State& s = *state_;
  s.require_growing("batch");
  DEW_REQUIRE(global_size >= 1, "[data] batch: size {}; expected at least 1 row", global_size);
  DEW_REQUIRE(shard.count >= 1 && shard.index >= 0 && shard.index < shard.count,
              "[data] batch: process {} of {}; expected 0 <= index < count", shard.index, shard.count);
  DEW_REQUIRE(
      global_size % shard.count == 0,
      "[data] batch: a global batch of {} rows does not divide among {} processes; expected a multiple of "
      "{}",
      global_size, shard.count, shard.count);
  s.batch_size = global_size;
  s.shard = shard;
  return *this;
}
Chain& Chain::cache(const CacheOptions& options) {
  DEW_REQUIRE(!state_->prepared,
              "[data] cache: the chain has been read already; set the cache before reading");
  state_->cache = options;
  return *this;
}

void Chain::State::prepare() {
  if (prepared) return;
  prepared = true;
  if (head && cache.enabled) detail::cache_prefixes(head, detail::resolve_cache(cache));
}

Chain& Chain::prefetch(int64_t batches) {
  DEW_REQUIRE(state_->batch_size, "[data] prefetch: builds batches ahead, so it comes after batch");
  DEW_REQUIRE(state_->prefetch == 0, "[data] prefetch: the chain already prefetches");
  DEW_REQUIRE(batches >= 1 && batches <= 1024, "[data] prefetch: {} batches; expected 1 to 1024", batches);
  state_->prefetch = batches;
  return *this;
}

std::optional<Record> Chain::next_record() {
  DEW_REQUIRE(!state_->schedule, "[data] next_record: a schedule yields batches; use next_batch");
  state_->prepare();
  DEW_REQUIRE(!state_->batch_size, "[data] next_record: this chain ends in batch; use next_batch");
  return state_->head->pull();
}

std::optional<Batch> Chain::State::build_batch() {
  const int64_t B = *batch_size;
  std::vector<Record> rows;
  for (int64_t i = 0; i < B; ++i) {
    std::optional<Record> r = head->pull();
    if (!r) break;
    if (!r->pixels.empty() || (!rows.empty() && !rows[0].pixels.empty())) {  // a batch of images
      rows.push_back(std::move(*r));
      continue;
    }
    DEW_REQUIRE(!r->segment_ids.empty(), "[data] batch: {} is not packed; put a pack stage before batch",
                r->origin);
    DEW_REQUIRE(rows.empty() || r->tokens.size() == rows[0].tokens.size(),
                "[data] batch: {} has {} tokens and the row before it {}; rows of a batch have one length",
                r->origin, r->tokens.size(), rows[0].tokens.size());
    rows.push_back(std::move(*r));
  }
  if (rows.empty()) return std::nullopt;
  batch_records += int64_t(rows.size());
  if (!rows[0].pixels.empty()) return detail::image_batch(rows, B, shard);
  // A chain ending inside a batch fills it with rows of padding, so that every process gets its rows.
  const int64_t local = B / shard.count, first = shard.index * local, width = int64_t(rows[0].tokens.size());
  Batch batch;
  batch.tokens = Tensor::zeros({local, width}, DType::i64);
  batch.segment_ids = Tensor::zeros({local, width}, DType::i64);
  batch.positions = Tensor::zeros({local, width}, DType::i64);
  batch.loss_mask = Tensor::zeros({local, width}, DType::i64);
  int64_t* tokens = batch.tokens.data<int64_t>();
  int64_t* loss_mask = batch.loss_mask.data<int64_t>();
  int64_t* segments = batch.segment_ids.data<int64_t>();
  int64_t* positions = batch.positions.data<int64_t>();
  for (int64_t r = 0; r < local && first + r < int64_t(rows.size()); ++r) {
    const Record& row = rows[size_t(first + r)];
    for (int64_t t = 0; t < width; ++t) {
      tokens[r * width + t] = row.tokens[size_t(t)];
      segments[r * width + t] = row.segment_ids[size_t(t)];
      positions[r * width + t] = row.positions[size_t(t)];
      loss_mask[r * width + t] = row.loss_mask.empty() ? 1 : row.loss_mask[size_t(t)];
      batch.real_tokens += row.segment_ids[size_t(t)] != 0;
    }
  }
  int64_t real = 0;  // of the global batch
  for (const Record& row : rows)
    for (int32_t segment : row.segment_ids) real += segment != 0;
  batch_real_tokens += real;
  batch_padding += B * width - real;
  return batch;
}

std::optional<Batch> Chain::next_batch() {
  State& s = *state_;
  if (s.schedule) return s.schedule->next_batch();
  s.prepare();
  DEW_REQUIRE(s.batch_size, "[data] next_batch: this chain has no batch stage; use next_record or add batch");
  std::optional<Batch> batch;
  if (s.prefetch == 0) {
    batch = s.build_batch();
  } else {
    if (!s.prefetcher) {
      s.last_position = s.head->position();
      s.prefetcher = std::make_unique<detail::Prefetcher>(s.prefetch, [&s] {
        std::lock_guard lock(s.stages);
        detail::Prefetched item;
        item.batch = s.build_batch();
        item.position = s.head->position();
        return item;
      });
    }
    detail::Prefetched item = s.prefetcher->pop();
    if (item.error) std::rethrow_exception(item.error);
    batch = std::move(item.batch);
    s.last_position = std::move(item.position);
  }
  if (batch) batch->index = s.batches++;
  return batch;
}

namespace {

// `head` and the stages below it, source first.
std::vector<const detail::Stage*> stages_of(const detail::Stage& head) {
  std::vector<const detail::Stage*> order;
  for (const detail::Stage* s = &head; s; s = s->upstream()) order.insert(order.begin(), s);
  return order;
}

// show()'s lines: a mixture's members, indented, above the mixture's own line.
void show_lines(const detail::Stage& head, const std::string& indent, std::vector<std::string>& lines) {
  for (const detail::Stage* s : stages_of(head)) {
    for (const auto& [name, member] : s->members()) {
      lines.push_back(indent + "member " + name + ":");
      show_lines(*member, indent + "    ", lines);
    }
    lines.push_back(indent + s->summary());
  }
}

// stats(): members' stages named "member/stage", before their mixture.
void collect_stats(const detail::Stage& head, const std::string& prefix, std::vector<StageStats>& out) {
  for (const detail::Stage* s : stages_of(head)) {
    for (const auto& [name, member] : s->members()) collect_stats(*member, prefix + name + "/", out);
    out.push_back(s->stats());
    out.back().stage = prefix + out.back().stage;
  }
}

const Tokenizer* find_tokenizer(const detail::Stage& head) {
  for (const detail::Stage* s : stages_of(head)) {
    if (s->tokenizer()) return s->tokenizer();
    for (const auto& member : s->members())
      if (const Tokenizer* t = find_tokenizer(*member.second)) return t;
  }
  return nullptr;
}

}  // namespace

std::string Chain::show() const {
  const State& s = *state_;
  if (s.schedule) return s.schedule->show();
  std::lock_guard lock(state_->stages);
  std::vector<std::string> lines;
  show_lines(*s.head, "", lines);
  if (s.batch_size) {
    const int64_t local = *s.batch_size / s.shard.count;
    lines.push_back(fmt::format("batch: {} rows per global batch; this process takes rows {} to {}",
                                *s.batch_size, s.shard.index * local, (s.shard.index + 1) * local - 1));
  }
  if (s.prefetch)
    lines.push_back(fmt::format("prefetch: up to {} batches built ahead on a thread", s.prefetch));
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

std::vector<StageStats> Chain::stats() const {
  if (state_->schedule) return state_->schedule->stats();
  std::lock_guard lock(state_->stages);
  std::vector<StageStats> out;
  collect_stats(*state_->head, "", out);
  if (state_->batch_size) {
    StageStats b;
    b.stage = "batch";
    b.records_in = state_->batch_records;
    b.records_out = (state_->batch_records + *state_->batch_size - 1) / *state_->batch_size;
    b.tokens_out = state_->batch_real_tokens + state_->batch_padding;
    b.padding_tokens = state_->batch_padding;
    out.push_back(b);
  }
  return out;
}

const Tokenizer* Chain::tokenizer() const {
  return state_->schedule ? state_->schedule->tokenizer() : find_tokenizer(*state_->head);
}

}  // namespace dew::data
