// The text, JSONL and in-memory sources. Each scans its files once when it opens, keeping a span per
// record (24 bytes), so that records can be read in any order (a global shuffle) and a position is an
// index.
#include <dew/error.h>

#include "data/files.h"
#include "io/json.h"

#include <xxhash.h>

#include <cstring>

namespace dew::data::detail {
namespace {

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
}

// Calls on_line(begin, end, line_number) for every line of `file`, without its "\n" or "\r\n".
template <class F>
void for_each_line(const MappedFile& file, F&& on_line) {
  const char* data = reinterpret_cast<const char*>(file.data());
  uint64_t begin = 0;
  for (int64_t number = 1; begin < file.size(); ++number) {
    const void* newline = std::memchr(data + begin, '\n', file.size() - begin);
    const uint64_t end = newline ? uint64_t(static_cast<const char*>(newline) - data) : file.size();
    const uint64_t trimmed = end > begin && data[end - 1] == '\r' ? end - 1 : end;
    on_line(begin, trimmed, number);
    begin = end + 1;
  }
}

class FileRecords : public Source {
 public:
  FileRecords(const std::vector<std::string>& paths, const std::string& kind, SourceOptions options)
      : Source(options), files_(paths, kind), kind_(kind) {}
  int64_t size() const override { return int64_t(spans_.size()); }

 protected:
  // The span's text, or nullopt (skipping) / an error when it is not UTF-8.
  std::optional<std::string_view> checked_text(const FileSpan& span) {
    std::string_view text = files_.bytes(span);
    const size_t bad = invalid_utf8_at(text);
    if (bad == std::string_view::npos) return text;
    DEW_REQUIRE(options_.skip_malformed,
                "[data] {}: {}: not UTF-8 (byte {} of the record); fix the file, or set skip_malformed to "
                "skip such records",
                kind_, files_.origin(span), bad);
    return std::nullopt;
  }
  SourceFiles files_;
  std::string kind_;
  std::vector<FileSpan> spans_;
};

class TextSource : public FileRecords {
 public:
  TextSource(const std::vector<std::string>& paths, TextUnit unit, SourceOptions options)
      : FileRecords(paths, "text source", options), unit_(unit) {
    for (uint32_t f = 0; f < files_.size(); ++f) {
      const MappedFile& file = files_.file(f);
      if (unit == TextUnit::file) {
        if (file.size() > 0) spans_.push_back({f, 0, file.size(), 1});
        continue;
      }
      std::optional<FileSpan> paragraph;
      for_each_line(file, [&](uint64_t begin, uint64_t end, int64_t line) {
        const bool empty = blank(files_.bytes({f, begin, end, line}));
        if (unit == TextUnit::line) {
          if (!empty) spans_.push_back({f, begin, end, line});
        } else if (empty) {
          if (paragraph) spans_.push_back(*paragraph);
          paragraph.reset();
        } else if (paragraph) {
          paragraph->end = end;
        } else {
          paragraph = FileSpan{f, begin, end, line};
        }
      });
      if (paragraph) spans_.push_back(*paragraph);
    }
  }
  std::optional<Record> read(int64_t i) override {
    const FileSpan& span = spans_[size_t(i)];
    std::optional<std::string_view> text = checked_text(span);
    if (!text) return std::nullopt;
    Record r;
    r.text.assign(*text);
    r.origin = files_.origin(span);
    return r;
  }
  Json describe() const override {
    static const char* units[] = {"file", "line", "paragraph"};
    Json d = {{"stage", "text"}, {"unit", units[int(unit_)]}, {"files", files_.describe()}};
    d.update(describe_options());
    return d;
  }

 private:
  TextUnit unit_;
};

class JsonlSource : public FileRecords {
 public:
  JsonlSource(const std::vector<std::string>& paths, const std::string& field, SourceOptions options)
      : FileRecords(paths, "JSONL source", options), field_(field) {
    DEW_REQUIRE(!field.empty(),
                "[data] JSONL source: no field given; expected a dotted path such as \"text\"");
    for (size_t start = 0; start <= field.size();) {
      const size_t dot = std::min(field.find('.', start), field.size());
      path_.push_back(field.substr(start, dot - start));
      DEW_REQUIRE(!path_.back().empty(),
                  "[data] JSONL source: field \"{}\" has an empty part; expected "
                  "names and indices joined by dots (\"messages.0.content\")",
                  field);
      start = dot + 1;
    }
    for (uint32_t f = 0; f < files_.size(); ++f)
      for_each_line(files_.file(f), [&](uint64_t begin, uint64_t end, int64_t line) {
        if (!blank(files_.bytes({f, begin, end, line}))) spans_.push_back({f, begin, end, line});
      });
  }
  std::optional<Record> read(int64_t i) override {
    const FileSpan& span = spans_[size_t(i)];
    std::optional<std::string_view> line = checked_text(span);
    if (!line) return std::nullopt;
    const std::string origin = files_.origin(span);
    std::string problem;
    try {
      const nlohmann::json value = parse_json(*line, origin);
      const nlohmann::json* at = &value;
      for (const std::string& part : path_) {
        const bool index =
            at->is_array() && part.size() <= 18 && part.find_first_not_of("0123456789") == std::string::npos;
        if (index && std::stoull(part) < at->size()) {
          at = &(*at)[std::stoull(part)];
        } else if (at->is_object() && at->contains(part)) {
          at = &(*at)[part];
        } else {
          problem = fmt::format("no \"{}\" in {}", part, json_type_name(at->type()));
          break;
        }
      }
      // A string is the text; an array or object its JSON (a conversation, for the chat stage).
      if (problem.empty() && (at->is_string() || at->is_array() || at->is_object())) {
        Record r;
        r.text = at->is_string() ? at->get<std::string>() : at->dump();
        r.origin = origin;
        return r;
      }
      if (problem.empty())
        problem =
            fmt::format("\"{}\" holds {}, not a string, array or object", field_, json_type_name(at->type()));
    } catch (const Error& e) {
      problem = e.what();
    }
    DEW_REQUIRE(
        options_.skip_malformed,
        "[data] JSONL source: {}: {}; expected a JSON object with a string (or messages) at \"{}\" (or set "
        "skip_malformed to skip such lines)",
        origin, problem, field_);
    return std::nullopt;
  }
  Json describe() const override {
    Json d = {{"stage", "jsonl"}, {"field", field_}, {"files", files_.describe()}};
    d.update(describe_options());
    return d;
  }

 private:
  std::string field_;
  std::vector<std::string> path_;
};

class MemorySource : public Source {
 public:
  MemorySource(std::vector<Record> records, SourceOptions options)
      : Source(options), records_(std::move(records)) {
    // The content is part of the description (hashed once: the records never change), so that a
    // resumed position refuses other records.
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    for (size_t i = 0; i < records_.size(); ++i) {
      Record& r = records_[i];
      if (r.origin.empty()) r.origin = "records[" + std::to_string(i) + "]";
      const uint64_t sizes[2] = {r.text.size(), r.tokens.size()};
      XXH3_64bits_update(state, sizes, sizeof sizes);
      XXH3_64bits_update(state, r.text.data(), r.text.size());
      XXH3_64bits_update(state, r.tokens.data(), r.tokens.size() * sizeof(int32_t));
    }
    hash_ = XXH3_64bits_digest(state);
    XXH3_freeState(state);
  }
  int64_t size() const override { return int64_t(records_.size()); }
  std::optional<Record> read(int64_t i) override { return records_[size_t(i)]; }
  Json describe() const override {
    Json d = {{"stage", "records"}, {"records", records_.size()}, {"xxh3", fmt::format("{:016x}", hash_)}};
    d.update(describe_options());
    return d;
  }

 private:
  std::vector<Record> records_;
  uint64_t hash_ = 0;
};

}  // namespace

std::unique_ptr<Source> make_text_source(const std::vector<std::string>& paths, TextUnit unit,
                                         SourceOptions options) {
  return std::make_unique<TextSource>(paths, unit, options);
}
std::unique_ptr<Source> make_jsonl_source(const std::vector<std::string>& paths, const std::string& field,
                                          SourceOptions options) {
  return std::make_unique<JsonlSource>(paths, field, options);
}
std::unique_ptr<Source> make_memory_source(std::vector<Record> records, SourceOptions options) {
  return std::make_unique<MemorySource>(std::move(records), options);
}

}  // namespace dew::data::detail
