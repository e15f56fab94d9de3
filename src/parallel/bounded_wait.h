// NOTE [bounded waits]: a rank that died or hangs leaves the others in a collective forever, so every
// backend's wait polls its collective (spinning first, then sleeping 50 us between polls) and gives up
// after the communicator's timeout with a CollectiveTimeout naming the rank and the collective; the
// caller then aborts the job (abort_launched). A WaitClock says, to a watchdog on another thread, how
// long this rank has been waiting (the Trainer's heartbeats).
#pragma once

#include <dew/parallel.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace dew::parallel {

inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct WaitClock {
  std::atomic<double> since{0};  // when the current wait began; 0: not waiting
  double seconds_waiting() const {
    const double t = since.load();
    return t > 0 ? seconds_now() - t : 0;
  }
};

[[noreturn]] void timed_out(int rank, double waited, const char* what, double timeout_s);  // communicator.cc

// Polls done() until it returns true, or throws past timeout_s (0: never).
template <class Done>
void wait_bounded(Done done, double timeout_s, int rank, const char* what, WaitClock& clock) {
  const double start = seconds_now();
  clock.since = start;
  struct Reset {
    WaitClock& clock;
    ~Reset() { clock.since = 0; }
  } reset{clock};
  for (int polls = 0; !done(); ++polls) {
    if (polls < 2000) continue;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    const double waited = seconds_now() - start;
    if (timeout_s > 0 && waited > timeout_s) timed_out(rank, waited, what, timeout_s);
  }
}

}  // namespace dew::parallel
