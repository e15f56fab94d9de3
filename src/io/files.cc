// MappedFile and AtomicFile over POSIX calls.
#include "io/files.h"

#include <dew/error.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace dew {
namespace {

std::string reason() {
  return std::strerror(errno);
}

constexpr size_t kWriteChunk = size_t(4) << 20;

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  DEW_REQUIRE(fd >= 0, "{}: cannot open ({})", path, reason());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = reason();
    ::close(fd);
    fail("{}: cannot read it as a file ({})", path, why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    fail("{} is {}; expected a regular file", path, kind);
  }
  size_ = uint64_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const std::string why = reason();
      ::close(fd);
      fail("{}: cannot map {} bytes ({})", path, size_, why);
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  static std::atomic<uint64_t> serial{0};
  temporary_ = fmt::format("{}.tmp-{}-{}", path, ::getpid(), serial++);
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  DEW_REQUIRE(fd_ >= 0, "{}: cannot create a file beside it to write ({})", path, reason());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temporary_.c_str());
  }
}

void AtomicFile::flush_buffer() {
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    DEW_REQUIRE(n > 0, "{}: writing failed ({}); the file was left as it was", path_, reason());
    p += n;
    left -= size_t(n);
  }
  buffer_.clear();
}

void AtomicFile::write(const void* bytes, uint64_t size) {
  DEW_REQUIRE(fd_ >= 0, "{}: written after commit", path_);
  const char* p = static_cast<const char*>(bytes);
  while (size > 0) {
    const size_t take = std::min<uint64_t>(size, kWriteChunk - buffer_.size());
    buffer_.append(p, take);
    p += take;
    size -= take;
    if (buffer_.size() == kWriteChunk) flush_buffer();
  }
}

void AtomicFile::commit() {
  flush_buffer();
  DEW_REQUIRE(::fsync(fd_) == 0, "{}: flushing to disk failed ({}); the file was left as it was", path_,
              reason());
  ::close(fd_);
  fd_ = -1;
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const std::string why = reason();
    ::unlink(temporary_.c_str());
    fail("{}: renaming the finished file into place failed ({}); the file was left as it was", path_, why);
  }
  // The rename is durable once the directory is flushed.
  flush_directory(std::filesystem::path(path_).parent_path().string());
}

void flush_directory(const std::string& dir) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

static bool is_pattern(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> expand_paths(const std::vector<std::string>& paths, const std::string& what) {
  DEW_REQUIRE(!paths.empty(), "{}: no paths given; expected files or glob patterns", what);
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    if (!is_pattern(path)) {
      DEW_REQUIRE(std::filesystem::is_regular_file(path), "{}: {} does not exist or is not a file", what,
                  path);
      files.push_back(path);
      continue;
    }
    glob_t matches{};
    const int rc = ::glob(path.c_str(), GLOB_ERR, nullptr, &matches);
    std::vector<std::string> found;
    for (size_t i = 0; rc == 0 && i < matches.gl_pathc; ++i)
      if (std::filesystem::is_regular_file(matches.gl_pathv[i])) found.emplace_back(matches.gl_pathv[i]);
    ::globfree(&matches);
    DEW_REQUIRE(!found.empty(), "{}: the pattern {} matches no file", what, path);
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::string read_text_file(const std::string& path) {
  MappedFile file(path);
  return std::string(reinterpret_cast<const char*>(file.data()), file.size());
}

void write_text_file(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.write(text.data(), text.size());
  file.commit();
}

}  // namespace dew
