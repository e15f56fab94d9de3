// dew serve's HTTP front: Boost.Beast's parser and serializer over one thread per connection, the
// OpenAI routes, an API key, limits (body, header, connections, queue) and timeouts (idle keep-alive,
// a whole request's arrival, each write), errors as OpenAI error objects. A client that goes away
// mid-answer cancels its request. Listens on loopback unless told otherwise.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "serve/engine_loop.h"
#include "serve/openai_api.h"

namespace dew::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: any free port (port() says which)
  std::string api_key;  // empty: no key required
  int64_t max_body_bytes = int64_t(1) << 20;
  int64_t max_header_bytes = 16 << 10;
  int64_t max_connections = 256;
  std::chrono::milliseconds idle_timeout{60000};     // a kept-alive connection waiting for its next request
  std::chrono::milliseconds request_timeout{10000};  // a request's header and body, from its first byte
  std::chrono::milliseconds write_timeout{30000};    // each response write
  std::chrono::milliseconds drain_grace{30000};      // on stop: how long running requests may finish
};

class HttpServer {
 public:
  HttpServer(EngineLoop& loop, ApiContext context,
             ServerOptions options);  // binds, or throws naming the address
  ~HttpServer();
  int port() const { return port_; }
  // Serves until `stop` is set; then stops accepting, lets running requests finish (drain_grace),
  // cancels the rest, waits for the connections to close and returns.
  void run(const std::atomic<bool>& stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace dew::serve
