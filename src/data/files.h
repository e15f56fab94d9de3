// The files of a source: paths and glob patterns expanded (sorted, each pattern must match), each
// file mapped read-only and hashed by content, so that a chain's description changes when a file
// does. Records are spans of these files found by one scan when the source opens.
#pragma once

#include "data/stage.h"
#include "io/files.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dew::data::detail {

struct FileSpan {  // a record's bytes: [begin, end) of file `file`, starting on line `line` (1-based)
  uint32_t file = 0;
  uint64_t begin = 0, end = 0;
  int64_t line = 0;
};

class SourceFiles {
 public:
  // `kind` names the source in errors ("text source").
  SourceFiles(const std::vector<std::string>& paths, const std::string& kind);
  size_t size() const { return files_.size(); }
  const MappedFile& file(size_t i) const { return *files_[i]; }
  std::string_view bytes(const FileSpan& span) const;
  std::string origin(const FileSpan& span) const;  // "path:line"
  Json describe() const;                           // [{"path", "bytes", "xxh3"}, ...]

 private:
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<uint64_t> hashes_;
};

}  // namespace dew::data::detail
