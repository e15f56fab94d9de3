// The cache file and the source that reads it (cache.h). A file holds, for each record of the
// source, the prefix's output record or nothing (dropped): records, then a table of their offsets
// (0: dropped), then a footer (count, table offset, magic). A file that does not check out is built
// again; nothing reads past its end.
#include "data/cache.h"

#include <dew/error.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "io/files.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace dew::data::detail {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'D', 'E', 'W', 'C', 'A', 'C', 'H', '3'};
constexpr uint64_t kFooter = 24;  // count, table offset, magic

template <class T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// A record as the file stores it: flags (1: continues), origin, text, tokens, loss mask, each with its
// length; then an image's channels, height, width and label, and its pixels with their length.
std::string encode(const Record& r) {
  std::string out;
  put(out, uint8_t(r.continues ? 1 : 0));
  put(out, uint64_t(r.origin.size()));
  out += r.origin;
  put(out, uint64_t(r.text.size()));
  out += r.text;
  put(out, uint64_t(r.tokens.size()));
  out.append(reinterpret_cast<const char*>(r.tokens.data()), r.tokens.size() * sizeof(int32_t));
  put(out, uint64_t(r.loss_mask.size()));
  out.append(reinterpret_cast<const char*>(r.loss_mask.data()), r.loss_mask.size());
  for (int64_t v : {r.channels, r.height, r.width, r.label}) put(out, v);
  put(out, uint64_t(r.pixels.size()));
  out.append(reinterpret_cast<const char*>(r.pixels.data()), r.pixels.size());
  return out;
}

// The file's count and table offset, or nullopt when its footer and table do not fit it.
std::optional<std::pair<uint64_t, uint64_t>> layout(const MappedFile& f) {
  if (f.size() < kFooter) return std::nullopt;
  const uint8_t* footer = f.data() + f.size() - kFooter;
  uint64_t count = 0, table = 0;
  std::memcpy(&count, footer, 8);
  std::memcpy(&table, footer + 8, 8);
  if (std::memcmp(footer + 16, kMagic, 8) != 0 || count > f.size() / 8 ||
      table + count * 8 + kFooter != f.size())
    return std::nullopt;
  return std::pair{count, table};
}

class CachedPrefix : public Source {
 public:
  CachedPrefix(std::unique_ptr<Stage> original, const Source& source, std::unique_ptr<MappedFile> file,
               bool built)
      : Source(source.options()), original_(std::move(original)), file_(std::move(file)), built_(built) {
    if (source.shuffle_seed()) shuffle_globally(*source.shuffle_seed());
    std::tie(count_, table_) = *layout(*file_);
  }
  int64_t size() const override { return int64_t(count_); }
  std::optional<Record> read(int64_t i) override {
    uint64_t at = 0;
    std::memcpy(&at, file_->data() + table_ + uint64_t(i) * 8, 8);
    if (at == 0) return std::nullopt;  // the prefix dropped it
    Record r;
    r.index = i;
    r.continues = take<uint8_t>(at, i) & 1;
    r.origin = std::string(bytes(at, take<uint64_t>(at, i), i));
    r.text = std::string(bytes(at, take<uint64_t>(at, i), i));
    const uint64_t n = take<uint64_t>(at, i);
    const std::string_view ids = bytes(at, n > table_ / 4 ? table_ : n * 4, i);
    r.tokens.resize(n);
    std::memcpy(r.tokens.data(), ids.data(), ids.size());
    const uint64_t masked = take<uint64_t>(at, i);
    const std::string_view mask = bytes(at, masked > table_ ? table_ : masked, i);
    r.loss_mask.assign(mask.begin(), mask.end());
    for (int64_t* v : {&r.channels, &r.height, &r.width, &r.label}) *v = take<int64_t>(at, i);
    const uint64_t pixels = take<uint64_t>(at, i);
    const std::string_view image = bytes(at, pixels > table_ ? table_ : pixels, i);
    r.pixels.assign(image.begin(), image.end());
    return r;
  }
  Json describe() const override { return {{"stage", "cache"}, {"path", file_->path()}}; }
  Json described() const override { return describe_stages(*original_); }
  std::string summary() const override {
    std::string lines;
    for (const Stage* s = original_.get(); s; s = s->upstream()) lines = s->summary() + "\n" + lines;
    return lines + fmt::format("cache: the stages above, {} from {} ({} records)",
                               built_ ? "built into" : "read from", file_->path(), count_);
  }
  const Tokenizer* tokenizer() const override {
    for (const Stage* s = original_.get(); s; s = s->upstream())
      if (s->tokenizer()) return s->tokenizer();
    return nullptr;
  }

 private:
  template <class T>
  T take(uint64_t& at, int64_t i) {
    T value;
    std::memcpy(&value, bytes(at, sizeof(T), i).data(), sizeof(T));
    return value;
  }
  std::string_view bytes(uint64_t& at, uint64_t n, int64_t i) {
    DEW_REQUIRE(at <= table_ && n <= table_ - at,
                "[data] cache: {} is damaged at record {}; delete it to rebuild", file_->path(), i);
    const std::string_view out(reinterpret_cast<const char*>(file_->data()) + at, n);
    at += n;
    return out;
  }
  std::unique_ptr<Stage> original_;  // for its descriptions, lines and tokenizer; never read
  std::unique_ptr<MappedFile> file_;
  bool built_;
  uint64_t count_ = 0, table_ = 0;
};

// Runs the prefix over one epoch of its source in source order, writing each output record.
void build(Stage& prefix, Source& source, const std::string& path) {
  const SourceOptions options = source.options();
  const std::optional<uint64_t> seed = source.shuffle_seed();
  SourceOptions one_epoch = options;
  one_epoch.epochs = 1;
  source.set_reading(one_epoch, std::nullopt);
  prefix.restore(std::vector<int64_t>{0, 0});
  std::vector<uint64_t> offsets(size_t(source.size()), 0);
  AtomicFile file(path);
  file.write("", 1);  // a pad byte, so that no record sits at offset 0, which marks a dropped one
  uint64_t at = 1;
  while (std::optional<Record> r = prefix.pull()) {
    const std::string bytes = encode(*r);
    offsets[size_t(r->index)] = at;
    file.write(bytes.data(), bytes.size());
    at += bytes.size();
  }
  file.write(offsets.data(), offsets.size() * 8);
  const uint64_t footer[2] = {offsets.size(), at};
  file.write(footer, sizeof footer);
  file.write(kMagic, sizeof kMagic);
  file.commit();
  source.set_reading(options, seed);
  prefix.restore(std::vector<int64_t>{0, 0});
}

// Deletes the least recently used cache files until the directory is within its cap, sparing `keep`.
void evict(const CacheSettings& settings, const std::string& keep) {
  std::vector<std::tuple<fs::file_time_type, uintmax_t, fs::path>> files;
  uintmax_t total = 0;
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(settings.dir, error)) {
    if (e.path().extension() != ".records" || !e.is_regular_file(error)) continue;
    files.emplace_back(e.last_write_time(error), e.file_size(error), e.path());
    total += std::get<1>(files.back());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [time, bytes, path] : files) {
    if (total <= uintmax_t(settings.max_bytes)) break;
    if (path == keep) continue;
    fs::remove(path, error);
    total -= bytes;
  }
}

std::unique_ptr<Stage> serve(std::unique_ptr<Stage> prefix, Source& source, const CacheSettings& settings) {
  const std::string fingerprint = describe_stages(*prefix).dump() + "\ndew cache v1";
  const XXH128_hash_t h = XXH3_128bits(fingerprint.data(), fingerprint.size());
  const std::string path =
      (fs::path(settings.dir) / fmt::format("{:016x}{:016x}.records", h.high64, h.low64)).string();
  std::error_code error;
  fs::create_directories(settings.dir, error);
  DEW_REQUIRE(
      !error,
      "[data] cache: cannot create {} ({}); set DEW_DATA_CACHE to a writable directory, or cache = false",
      settings.dir, error.message());
  bool built = false;
  std::unique_ptr<MappedFile> file;
  if (fs::is_regular_file(path)) {
    file = std::make_unique<MappedFile>(path);
    const auto shape = layout(*file);
    if (!shape || shape->first != uint64_t(source.size()))
      file.reset();  // damaged or foreign: build again
    else
      ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used
  }
  if (!file) {
    build(*prefix, source, path);
    file = std::make_unique<MappedFile>(path);
    built = true;
  }
  evict(settings, path);
  return std::make_unique<CachedPrefix>(std::move(prefix), source, std::move(file), built);
}

}  // namespace

CacheSettings resolve_cache(const CacheOptions& options) {
  CacheSettings s;
  s.dir = options.dir;
  if (s.dir.empty()) {
    if (const char* env = std::getenv("DEW_DATA_CACHE"); env && *env)
      s.dir = env;
    else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
      s.dir = std::string(xdg) + "/dew/data";
    else if (const char* home = std::getenv("HOME"); home && *home)
      s.dir = std::string(home) + "/.cache/dew/data";
    else
      s.dir = (fs::temp_directory_path() / "dew-data-cache").string();
  }
  s.max_bytes = options.max_bytes;
  if (s.max_bytes == 0) {
    const char* env = std::getenv("DEW_DATA_CACHE_MAX_BYTES");
    s.max_bytes = env && *env ? std::strtoll(env, nullptr, 10) : int64_t(64) << 30;
  }
  DEW_REQUIRE(s.max_bytes > 0, "[data] cache: max_bytes {}; expected a positive number of bytes",
              s.max_bytes);
  return s;
}

void cache_prefixes(std::unique_ptr<Stage>& head, const CacheSettings& settings) {
  std::vector<std::unique_ptr<Stage>*> slots{&head};  // from the head down to the source
  while ((*slots.back())->upstream()) slots.push_back(&(*slots.back())->upstream_slot());
  Stage& bottom = **slots.back();
  for (std::unique_ptr<Stage>* member : bottom.member_slots()) cache_prefixes(*member, settings);
  auto* source = dynamic_cast<Source*>(&bottom);
  if (!source || dynamic_cast<CachedPrefix*>(source)) return;
  size_t top = slots.size() - 1;
  while (top > 0 && (*slots[top - 1])->cacheable()) --top;
  bool works = false;  // a prefix of only the source and an order is not worth a file
  for (size_t k = top; k + 1 < slots.size(); ++k)
    works = works || (*slots[k])->describe().at("stage") != "shuffle";
  if (works) *slots[top] = serve(std::move(*slots[top]), *source, settings);
}

}  // namespace dew::data::detail
