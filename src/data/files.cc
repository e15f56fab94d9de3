// Expanding a source's paths, mapping its files and hashing their content (XXH3-64).
#include "data/files.h"

#include <dew/error.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>

namespace dew::data::detail {
SourceFiles::SourceFiles(const std::vector<std::string>& paths, const std::string& kind) {
  for (const std::string& path : expand_paths(paths, "[data] " + kind)) {
    files_.push_back(std::make_unique<MappedFile>(path));
    hashes_.push_back(XXH3_64bits(files_.back()->data(), files_.back()->size()));
  }
  DEW_REQUIRE(files_.size() < (size_t(1) << 32), "[data] {}: {} files; at most 2^32 - 1 per source", kind,
              files_.size());
}

std::string_view SourceFiles::bytes(const FileSpan& span) const {
  const MappedFile& f = *files_[span.file];
  return {reinterpret_cast<const char*>(f.data()) + span.begin, span.end - span.begin};
}

std::string SourceFiles::origin(const FileSpan& span) const {
  return files_[span.file]->path() + ":" + std::to_string(span.line);
}

Json SourceFiles::describe() const {
  Json files = Json::array();
  for (size_t i = 0; i < files_.size(); ++i)
    files.push_back({{"path", files_[i]->path()},
                     {"bytes", files_[i]->size()},
                     {"xxh3", fmt::format("{:016x}", hashes_[i])}});
  return files;
}

}  // namespace dew::data::detail
