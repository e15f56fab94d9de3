// EngineLoop: the engine's thread, its inbox, each request's text streams (stop strings matched on the
// decoded text) and the metrics.
#include "serve/engine_loop.h"

#include <dew/error.h>
#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <map>

namespace dew::serve {

using Clock = std::chrono::steady_clock;

bool Stream::next(StreamEvent& event, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  event = std::move(events_.front());
  events_.pop_front();
  return true;
}

void Stream::push(StreamEvent event) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

void Histogram::observe(double seconds) {
  sum += seconds;
  size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i]) ++i;
  ++counts[i];
}

struct EngineLoop::Pending {
  TextRequest request;
  Clock::time_point arrived = Clock::now();
  std::promise<Submitted> result;
};

namespace {

// What one request's callbacks share: its stream, a text stream per choice, and latency marks.
struct RequestText {
  std::shared_ptr<Stream> stream;
  std::vector<TextStream> texts;
  std::vector<Clock::time_point> last_token;
  Clock::time_point arrived;
  bool first = true;
};

}  // namespace

EngineLoop::EngineLoop(const CausalLM& model, const Tokenizer& tokenizer, const EngineOptions& options,
                       int64_t max_waiting)
    : tokenizer_(tokenizer),
      engine_(model, options),
      max_waiting_(max_waiting),
      time_to_first_token_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      inter_token_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      thread_([this] { run(); }) {}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

EngineLoop::Submitted EngineLoop::submit(TextRequest request) {
  auto pending = std::make_shared<Pending>();
  pending->request = std::move(request);
  std::future<Submitted> result = pending->result.get_future();
  {
    std::lock_guard lock(mutex_);
    if (draining_ || stop_) return {0, nullptr, "the server is shutting down", true};
    if (int64_t(inbox_.size()) + stats_.waiting >= max_waiting_)
      return {0, nullptr, "the queue is full", true};
    inbox_.push_back(pending);
  }
  wake_.notify_all();
  return result.get();
}

void EngineLoop::cancel(uint64_t id) {
  {
    std::lock_guard lock(mutex_);
    cancels_.push_back(id);
  }
  wake_.notify_all();
}

void EngineLoop::drain(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
  }
  const auto until = Clock::now() + grace;
  while (Clock::now() < until) {
    {
      std::lock_guard lock(mutex_);
      if (unfinished_requests_ == 0 && inbox_.empty()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::lock_guard lock(mutex_);
  cancels_.push_back(0);  // 0: every request
  wake_.notify_all();
}

void EngineLoop::run() {
  std::map<uint64_t, std::shared_ptr<RequestText>> live;
  for (;;) {
    std::deque<std::shared_ptr<Pending>> inbox;
    std::vector<uint64_t> cancels;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !inbox_.empty() || !cancels_.empty() || !engine_.idle(); });
      if (stop_) break;
      inbox.swap(inbox_);
      cancels.swap(cancels_);
    }
    for (uint64_t id : cancels) {
      if (id != 0) {
        engine_.cancel(id);
        continue;
      }
      std::vector<uint64_t> all;
      for (const auto& [request, text] : live) all.push_back(request);
      for (uint64_t request : all) engine_.cancel(request);
    }
    for (const auto& pending : inbox) {
      auto text = std::make_shared<RequestText>();
      text->stream = std::make_shared<Stream>();
      text->arrived = pending->arrived;
      const TextRequest& r = pending->request;
      for (int64_t c = 0; c < r.options.n; ++c)
        text->texts.emplace_back(tokenizer_, r.stop, DecodeOptions{.skip_special_tokens = true});
      text->last_token.assign(size_t(r.options.n), pending->arrived);
      const std::vector<int64_t> eos =
          r.options.ignore_eos ? std::vector<int64_t>() : engine_.options().eos_ids;
      RequestCallbacks callbacks;
      callbacks.on_token = [this, text, eos](const TokenEvent& ev) {
        const auto now = Clock::now();
        {
          std::lock_guard lock(mutex_);
          if (text->first)
            time_to_first_token_.observe(std::chrono::duration<double>(now - text->arrived).count());
          else
            inter_token_.observe(
                std::chrono::duration<double>(now - text->last_token[size_t(ev.choice)]).count());
        }
        text->first = false;
        text->last_token[size_t(ev.choice)] = now;
        TextStream& stream = text->texts[size_t(ev.choice)];
        const bool end = std::count(eos.begin(), eos.end(), ev.token) > 0;  // its text is not the answer's
        std::string piece;
        bool go_on = true;
        try {
          if (!end) piece = stream.push(ev.token);
          go_on = !stream.stopped();
        } catch (const Error& e) {  // an id the tokenizer cannot write (a padded vocabulary): the choice ends
          std::cerr << "dew serve: request " << ev.request << ": " << e.what() << "\n";
          go_on = false;
        }
        text->stream->push({ev.choice, piece, ev, false, FinishReason::stop});
        return go_on;
      };
      callbacks.on_finish = [text](int64_t choice, FinishReason reason) {
        std::string rest;
        try {
          rest = text->texts[size_t(choice)].finish();
        } catch (const Error&) {  // reported by on_token already
        }
        StreamEvent ev{choice, rest, {}, true, reason};
        ev.token.token = -1;
        text->stream->push(std::move(ev));
      };
      try {
        const uint64_t id = engine_.submit(r.prompt, r.options, callbacks);
        live[id] = text;
        pending->result.set_value({id, text->stream, "", false});
        std::lock_guard lock(mutex_);
        ++requests_total_;
      } catch (const Error& e) {
        pending->result.set_value({0, nullptr, e.what(), false});
      }
    }
    try {
      if (!engine_.idle()) engine_.step();
    } catch (const std::exception& e) {  // never take the server down: the requests of the step end
      std::cerr << "dew serve: a step failed: " << e.what() << "; cancelling the running requests\n";
      for (const auto& [request, text] : live) engine_.cancel(request);
    }
    // A request the engine has let go of (its callbacks, which share `text`, are gone) is done.
    const EngineStats now = engine_.stats();
    for (auto it = live.begin(); it != live.end();)
      it = it->second.use_count() == 1 ? live.erase(it) : std::next(it);
    std::lock_guard lock(mutex_);
    stats_ = now;
    unfinished_requests_ = int64_t(live.size());
  }
  for (const auto& [request, text] : live) engine_.cancel(request);
}

EngineStats EngineLoop::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string EngineLoop::metrics_text() {
  std::lock_guard lock(mutex_);
  std::string out;
  const auto gauge = [&](const char* name, const char* help, double value, const char* type = "gauge") {
    out +=
        fmt::format("# HELP dew_{} {}\n# TYPE dew_{} {}\ndew_{} {}\n", name, help, name, type, name, value);
  };
  gauge("requests_running", "sequences in the running batch", double(stats_.running));
  gauge("requests_waiting", "sequences waiting for a slot or blocks", double(stats_.waiting));
  gauge("kv_blocks_total", "blocks in the paged KV cache", double(stats_.kv_blocks));
  gauge("kv_blocks_in_use", "blocks held by sequences", double(stats_.kv_blocks_in_use));
  gauge("prefix_cache_queries_total", "full prompt blocks looked up in the prefix cache",
        double(stats_.prefix_lookups), "counter");
  gauge("prefix_cache_hits_total", "full prompt blocks found in the prefix cache", double(stats_.prefix_hits),
        "counter");
  gauge("preemptions_total", "sequences that gave their blocks back to be recomputed",
        double(stats_.preemptions), "counter");
  gauge("prompt_tokens_total", "prompt tokens computed", double(stats_.prompt_tokens_computed), "counter");
  gauge("generation_tokens_total", "tokens generated (rate() of it is the output tokens/s)",
        double(stats_.generated_tokens), "counter");
  gauge("requests_total", "requests accepted", double(requests_total_), "counter");
  const auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    out += fmt::format("# HELP dew_{} {}\n# TYPE dew_{} histogram\n", name, help, name);
    int64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      out += fmt::format("dew_{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], cumulative);
    }
    cumulative += h.counts.back();
    out += fmt::format("dew_{}_bucket{{le=\"+Inf\"}} {}\ndew_{}_sum {}\ndew_{}_count {}\n", name, cumulative,
                       name, h.sum, name, cumulative);
  };
  histogram("time_to_first_token_seconds", "from a request's arrival to its first token",
            time_to_first_token_);
  histogram("inter_token_latency_seconds", "between a choice's consecutive tokens", inter_token_);
  return out;
}

}  // namespace dew::serve
