// Expanding a source's paths, mapping its files and hashing their content (XXH3-64).
#include "data/files.h"

#include <dew/error.h>
#include <glob.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>

namespace dew::data::detail {
namespace {

bool is_pattern(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> expand(const std::vector<std::string>& paths, const std::string& kind) {
  DEW_REQUIRE(!paths.empty(), "[data] {}: no paths given; expected files or glob patterns", kind);
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    if (!is_pattern(path)) {
      DEW_REQUIRE(std::filesystem::is_regular_file(path), "[data] {}: {} does not exist or is not a file",
                  kind, path);
      files.push_back(path);
      continue;
    }
    glob_t matches{};
    const int rc = ::glob(path.c_str(), GLOB_ERR, nullptr, &matches);
    std::vector<std::string> found;
    for (size_t i = 0; rc == 0 && i < matches.gl_pathc; ++i)
      if (std::filesystem::is_regular_file(matches.gl_pathv[i])) found.emplace_back(matches.gl_pathv[i]);
    ::globfree(&matches);
    DEW_REQUIRE(!found.empty(), "[data] {}: the pattern {} matches no file", kind, path);
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

}  // namespace

SourceFiles::SourceFiles(const std::vector<std::string>& paths, const std::string& kind) {
  for (const std::string& path : expand(paths, kind)) {
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
