// An advisory exclusive lock on a file (flock), held for the object's lifetime: one process at a time
// (a run directory's trainer). The kernel releases it when the process ends, however it ends, so a
// killed holder never leaves it stale. The file holds the holder's PID, for the refusal's message.
#pragma once

#include <memory>
#include <string>

namespace dew {

class FileLock {
 public:
  // Takes the lock on `path` (created if absent) without waiting and writes this process's PID into
  // it; null when another process holds it, with `holder` set to that process's PID as it wrote it.
  static std::unique_ptr<FileLock> try_acquire(const std::string& path, std::string& holder);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace dew
