// FileLock: flock(LOCK_EX | LOCK_NB) on a descriptor closed on exec (a child process never inherits
// the lock).
#include "io/file_lock.h"

#include <dew/error.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dew {

std::unique_ptr<FileLock> FileLock::try_acquire(const std::string& path, std::string& holder) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  DEW_REQUIRE(fd >= 0, "cannot open the lock file {}: {}", path, std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    DEW_REQUIRE(error == EWOULDBLOCK, "cannot lock {}: {}", path, std::strerror(error));
    holder = n > 0 ? std::string(pid, size_t(n)) : "unknown";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return nullptr;
  }
  const std::string mine = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) != ssize_t(mine.size())) {
    const int error = errno;
    ::close(fd);
    fail("cannot write the lock file {}: {}", path, std::strerror(error));
  }
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

FileLock::~FileLock() {
  ::close(fd_);
}

}  // namespace dew
