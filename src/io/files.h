// Files as Dew reads and writes them: a read-only memory map, and a file written whole or not at all
// (a temporary name, flushed, renamed: docs/architecture.md, "Errors and bad input"). Errors name the path
// and the system's reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dew {

// A whole file mapped read-only; the bytes live as long as this object.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// Writes to a temporary file beside `path`; commit() flushes it to disk, renames it over `path` and
// flushes the directory. Destroyed without commit() (an error on the way), it removes the temporary
// file and leaves `path` as it was.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* bytes, uint64_t size);
  void commit();

 private:
  void flush_buffer();
  std::string path_, temporary_;
  int fd_ = -1;
  std::string buffer_;  // writes are gathered into large ones
};

// Flushes a directory's entries (a rename into it, a new file) to disk.
void flush_directory(const std::string& dir);

// Files and glob patterns (* ? [) to the files they name: a pattern's matches sorted, each pattern
// required to match and each plain path to exist; `what` names the list in errors.
std::vector<std::string> expand_paths(const std::vector<std::string>& paths, const std::string& what);

// Reads a whole (small) file: config.json, an index, a tokenizer.
std::string read_text_file(const std::string& path);
// Writes a whole file through AtomicFile: `path` holds all of `text` or is left as it was.
void write_text_file(const std::string& path, std::string_view text);

}  // namespace dew
