// The op profile's timer: wraps one kernel run in run_op. Off (the default), it costs one relaxed
// atomic load; on (set_op_profiling), it sums the kernel's wall time by (phase, op, label).
// Times are the host's: a CUDA kernel's is its launch unless the caller synchronizes.
#pragma once

#include <dew/runtime.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

namespace dew::select {

extern std::atomic<bool> op_profiling_on;

// Records a kernel's time; the bookkeeping from `ended` (the kernel's end) on is summed apart.
void record_op_time(std::string_view op, const std::string& label, double seconds, double flops,
                    std::chrono::steady_clock::time_point ended);

// Times its scope when profiling is on; label() and flops() are only called then.
template <class Label, class Flops>
class OpTimer {
 public:
  OpTimer(std::string_view op, Label label, Flops flops)
      : on_(op_profiling_on.load(std::memory_order_relaxed)), op_(op), label_(label), flops_(flops) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (!on_) return;
    const auto ended = std::chrono::steady_clock::now();
    record_op_time(op_, label_(), std::chrono::duration<double>(ended - start_).count(), flops_(), ended);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  bool on_;
  std::string_view op_;
  Label label_;
  Flops flops_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace dew::select
