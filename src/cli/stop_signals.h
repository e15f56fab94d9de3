// SIGINT and SIGTERM as a request to stop `dew train` or `dew serve`, received by one dedicated thread.
// NOTE [signals by sigwait]: a signal handler runs on whichever thread the kernel picks, inside
// oneDNN's JIT code or malloc alike, and a run stopped so could corrupt its heap. So both signals are
// blocked in every thread (the mask is set before any other thread exists, and threads inherit it) and
// one thread takes them with sigtimedwait, outside any signal context: the first sets the stop flag
// (the trainer finishes its step and checkpoints); a second exits at once, as a user pressing Ctrl-C
// twice expects.
#pragma once

#include <signal.h>

#include <atomic>
#include <string>
#include <thread>

namespace dew::cli {

class StopSignals {
 public:
  // Call before any other thread is started; `first` says what the first signal does, `second` what
  // stopping at once loses.
  StopSignals(std::string first = "finishing this step and writing a checkpoint (again to stop at once)",
              std::string second = "the steps since the last checkpoint are lost");
  ~StopSignals();  // stops the waiting thread and restores the signal mask
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  const std::atomic<bool>& requested() const { return requested_; }

 private:
  sigset_t signals_{}, previous_mask_{};
  std::atomic<bool> requested_{false}, done_{false};
  std::thread waiter_;
};

}  // namespace dew::cli
