// StopSignals (NOTE [signals by sigwait]).
#include "cli/stop_signals.h"

#include <fmt/core.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace dew::cli {

StopSignals::StopSignals(std::string first, std::string second) {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, &previous_mask_);
  waiter_ = std::thread([this, first = std::move(first), second = std::move(second)] {
    const timespec poll{0, 100'000'000};  // how soon the thread notices the run is over
    while (!done_.load()) {
      const int signal = sigtimedwait(&signals_, nullptr, &poll);
      if (signal < 0) continue;  // timed out or interrupted
      if (!requested_.exchange(true)) {
        fmt::print(stderr, "\n{} received: {}\n", signal == SIGINT ? "SIGINT" : "SIGTERM", first);
        std::fflush(stderr);
        continue;
      }
      fmt::print(stderr, "\nstopped at once: {}\n", second);
      std::fflush(stderr);
      ::_exit(128 + signal);
    }
  });
}

StopSignals::~StopSignals() {
  done_ = true;
  waiter_.join();
  // A signal that arrived after the waiter's last look is taken here, not by the default action.
  const timespec now{0, 0};
  while (sigtimedwait(&signals_, nullptr, &now) > 0) requested_ = true;
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

}  // namespace dew::cli
