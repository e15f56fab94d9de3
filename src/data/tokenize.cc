// tokenize: text to ids with a tokenizer from tokenize/, its BOS/EOS as its configuration adds them
// and optionally an EOS after every document. With workers, blocks of records are encoded on that
// many threads and returned in order; the position is that of the next record not yet returned
// (NOTE [positions]), so it is the same for any number of workers.
#include <dew/error.h>
#include <xxhash.h>

#include "data/stage.h"
#include "io/files.h"

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

namespace dew::data::detail {
namespace {

constexpr size_t kRecordsPerWorker = 32;  // a block is workers x this many records

// Threads that live as long as the stage (their thread-local regex scratch with them; not the compute
// pool, which training's kernels use while the chain prefetches beside them), running
// body(i) for i in [0, n) split round-robin; run() returns when all are done, rethrowing the first error.
class Workers {
 public:
  explicit Workers(int n) {
    for (int w = 0; w < n; ++w) threads_.emplace_back([this, w, n] { loop(size_t(w), size_t(n)); });
  }
  ~Workers() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void run(size_t n, std::function<void(size_t)> body) {
    std::unique_lock lock(mutex_);
    body_ = std::move(body);
    n_ = n;
    busy_ = threads_.size();
    error_ = nullptr;
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [&] { return busy_ == 0; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void loop(size_t w, size_t count) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      lock.unlock();
      std::exception_ptr error;
      try {
        for (size_t i = w; i < n_; i += count) body_(i);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !error_) error_ = error;
      if (--busy_ == 0) done_.notify_one();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void(size_t)> body_;
  size_t n_ = 0, busy_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

class Tokenize : public Stage {
 public:
  Tokenize(std::unique_ptr<Stage> upstream, const std::string& path, const TokenizeOptions& options)
      : Stage(std::move(upstream)),
        tokenizer_(Tokenizer::load(path)),
        path_(path),
        hash_(tokenizer_content_hash(path)),
        options_(options) {
    DEW_REQUIRE(options.workers >= 1 && options.workers <= 256,
                "[data] tokenize: workers {}; expected 1 to 256", options.workers);
    if (options.append_eos) {
      DEW_REQUIRE(
          tokenizer_.eos_id().has_value(),
          "[data] tokenize: append_eos is set but {} names no eos_token; set it in tokenizer_config.json "
          "or turn append_eos off",
          path);
      eos_ = int32_t(*tokenizer_.eos_id());
    }
  }
  Json describe() const override {
    return {{"stage", "tokenize"},
            {"tokenizer", {{"path", path_}, {"xxh3", hash_}}},
            {"special_tokens", options_.special_tokens},
            {"append_eos", options_.append_eos}};
  }
  std::string summary() const override {
    return fmt::format("tokenize: {} (content {}), special tokens {}, {}EOS appended, {} worker(s)", path_,
                       hash_, options_.special_tokens ? "as configured" : "off",
                       options_.append_eos ? "" : "no ", options_.workers);
  }
  bool per_record() const override { return true; }
  bool cacheable() const override { return true; }
  const Tokenizer* tokenizer() const override { return &tokenizer_; }
  void save(Cursor& out) const override {
    if (emitted_ < block_.size())
      out.insert(out.end(), before_[emitted_].begin(), before_[emitted_].end());
    else
      upstream_->save(out);
  }
  void restore(std::span<const int64_t> cursor) override {
    block_.clear();
    emitted_ = 0;
    Stage::restore(cursor);
  }

 protected:
  std::optional<Record> next() override {
    if (options_.workers == 1) {
      std::optional<Record> r = upstream_->pull();
      if (r) encode(*r);
      return r;
    }
    if (emitted_ == block_.size()) fill();
    if (emitted_ == block_.size()) return std::nullopt;
    return std::move(block_[emitted_++]);
  }

 private:
  void encode(Record& r) const {
    const std::vector<int64_t> ids =
        tokenizer_.encode(r.text, {.add_special_tokens = options_.special_tokens});
    r.tokens.assign(ids.begin(), ids.end());
    if (eos_) r.tokens.push_back(*eos_);
    r.text.clear();
  }
  void fill() {
    block_.clear();
    before_.clear();
    emitted_ = 0;
    const size_t want = size_t(options_.workers) * kRecordsPerWorker;
    while (block_.size() < want) {
      before_.push_back(upstream_->position());
      std::optional<Record> r = upstream_->pull();
      if (!r) break;
      block_.push_back(std::move(*r));
    }
    if (!pool_) pool_ = std::make_unique<Workers>(options_.workers);
    pool_->run(block_.size(), [this](size_t i) { encode(block_[i]); });
  }
  Tokenizer tokenizer_;
  std::string path_, hash_;
  TokenizeOptions options_;
  std::optional<int32_t> eos_;
  std::vector<Record> block_;
  std::vector<Cursor> before_;  // upstream positions from before each record of the block
  size_t emitted_ = 0;
  std::unique_ptr<Workers> pool_;
};

}  // namespace

std::string tokenizer_content_hash(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path json = fs::is_directory(path) ? fs::path(path) / "tokenizer.json" : fs::path(path);
  std::string content = read_text_file(json.string());
  for (const char* beside : {"tokenizer_config.json", "chat_template.jinja"}) {
    content += '\0';
    if (fs::is_regular_file(json.parent_path() / beside))
      content += read_text_file((json.parent_path() / beside).string());
  }
  return fmt::format("{:016x}", XXH3_64bits(content.data(), content.size()));
}

std::unique_ptr<Stage> make_tokenize(std::unique_ptr<Stage> upstream, const std::string& tokenizer_path,
                                     const TokenizeOptions& options) {
  return std::make_unique<Tokenize>(std::move(upstream), tokenizer_path, options);
}

}  // namespace dew::data::detail
