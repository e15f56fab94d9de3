// The engine on a thread of its own, for many client threads: submissions and cancellations go
// through an inbox; each request's tokens come back, as text that became final, through its own
// queue (a Stream). The loop steps while anything runs and sleeps while nothing does. Also the
// serving metrics: counters, gauges and latency histograms for /metrics.
#pragma once

#include <dew/serve.h>
#include <dew/tokenizer.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dew::serve {

struct StreamEvent {
  int64_t choice = 0;
  std::string text;  // text that became final (may be empty)
  TokenEvent token;  // the token that made it; token.token = -1 on a finish event
  bool finished = false;
  FinishReason reason = FinishReason::stop;
};

// One request's events, produced by the loop, consumed by one client thread.
class Stream {
 public:
  // The next event, waiting up to `timeout`; false when none came.
  bool next(StreamEvent& event, std::chrono::milliseconds timeout);
  void push(StreamEvent event);

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<StreamEvent> events_;
};

struct TextRequest {
  std::vector<int64_t> prompt;
  RequestOptions options;
  std::vector<std::string> stop;  // stop strings: never part of the text, nor any partial one
};

// Latency histogram in Prometheus' form: cumulative counts at fixed bounds (seconds).
struct Histogram {
  std::vector<double> bounds;
  std::vector<int64_t> counts;  // one per bound, plus +Inf
  double sum = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void observe(double seconds);
};

class EngineLoop {
 public:
  EngineLoop(const CausalLM& model, const Tokenizer& tokenizer, const EngineOptions& options,
             int64_t max_waiting);
  ~EngineLoop();  // cancels what runs and stops the thread

  struct Submitted {
    uint64_t id = 0;
    std::shared_ptr<Stream> stream;
    std::string error;        // the engine's refusal; then no stream
    bool overloaded = false;  // the queue is full: retry later
  };
  Submitted submit(TextRequest request);
  void cancel(uint64_t id);
  // Stops taking requests; lets the running ones finish for up to `grace`, then cancels the rest.
  void drain(std::chrono::milliseconds grace);

  std::string metrics_text();  // Prometheus text exposition
  EngineStats stats();

 private:
  struct Pending;
  void run();
  const Tokenizer& tokenizer_;
  Engine engine_;
  int64_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Pending>> inbox_;
  std::vector<uint64_t> cancels_;
  bool stop_ = false, draining_ = false;
  EngineStats stats_;  // as of the last step (at first, the empty engine's)
  int64_t requests_total_ = 0, unfinished_requests_ = 0;
  double tokens_per_second_ = 0;
  Histogram time_to_first_token_, inter_token_;
  std::thread thread_;
};

}  // namespace dew::serve
