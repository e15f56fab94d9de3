// HttpServer: accept loop, one thread per connection running its own io_context (so every read and
// write has a deadline: Beast's tcp_stream timeouts), request parsing by Beast's parser under header
// and body limits, routes, whole and streamed (server-sent events, chunked) answers.
#include "serve/http_server.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <system_error>
#include <thread>

namespace dew::serve {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Runs one asynchronous operation on the connection's own io_context to completion, under a deadline.
template <class Start>
beast::error_code run_for(net::io_context& io, beast::tcp_stream& stream, std::chrono::milliseconds limit,
                          Start start) {
  beast::error_code result;
  stream.expires_after(limit);
  start([&](beast::error_code ec, std::size_t) { result = ec; });
  io.restart();
  io.run();
  return result;
}

// True when the peer has closed or reset its side (checked while an answer is being computed).
bool peer_gone(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

// JSON text for the wire: a string that is not UTF-8 (a token's partial bytes) is written with U+FFFD.
std::string wire_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

using Response = http::response<http::string_body>;

Response json_response(http::status status, const json& body, unsigned version, bool keep_alive) {
  Response r{status, version};
  r.set(http::field::content_type, "application/json");
  r.set(http::field::server, "dew");
  r.keep_alive(keep_alive);
  r.body() = wire_json(body);
  r.prepare_payload();
  return r;
}

// One client's socket on its own io_context, and every write to it under the write timeout.
struct Connection {
  net::io_context io;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  int fd;
  std::chrono::milliseconds write_timeout;

  Connection(int native, bool v6, std::chrono::milliseconds timeout)
      : stream(tcp::socket(io, v6 ? tcp::v6() : tcp::v4(), native)), fd(native), write_timeout(timeout) {}
  template <class Start>
  bool write(Start start) {
    return !run_for(io, stream, write_timeout, start);
  }
  bool send(Response& r) {
    return write([&](auto h) { http::async_write(stream, r, h); });
  }
  // An OpenAI error object with its status (503s with Retry-After).
  bool reply(const ApiError& e, unsigned version, bool keep_alive) {
    Response r = json_response(http::status(e.status), e.body(), version, keep_alive);
    if (e.status == 503) r.set(http::field::retry_after, "1");
    return send(r);
  }
};

bool same_key(const std::string& a, const std::string& b) {  // constant time in the key's length
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct HttpServer::Impl {
  EngineLoop& loop;
  ApiContext context;
  ServerOptions options;
  net::io_context accept_io;
  tcp::acceptor acceptor{accept_io};
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> next_id{1};
  std::mutex mutex;
  std::condition_variable closed;
  int64_t connections = 0;

  Impl(EngineLoop& l, ApiContext c, ServerOptions o)
      : loop(l), context(std::move(c)), options(std::move(o)) {}

  void serve_connection(int fd, bool v6);
  // A completion or chat request: parsed, submitted, answered whole or streamed. False when the
  // connection is to close (the client went away or a write failed).
  bool answer(Endpoint endpoint, const std::string& text, unsigned version, bool keep_alive, Connection& c);
};

HttpServer::HttpServer(EngineLoop& loop, ApiContext context, ServerOptions options)
    : impl_(std::make_unique<Impl>(loop, std::move(context), std::move(options))) {
  beast::error_code ec;
  const auto address = net::ip::make_address(impl_->options.host, ec);
  DEW_REQUIRE(!ec, "[serve] --host {} is not an IP address; expected one such as 127.0.0.1 or ::1",
              impl_->options.host);
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(impl_->options.port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  DEW_REQUIRE(!ec, "[serve] cannot listen on {}:{}: {}; expected a free port on a local address",
              impl_->options.host, impl_->options.port, ec.message());
  port_ = a.local_endpoint().port();
}

HttpServer::~HttpServer() = default;

void HttpServer::run(const std::atomic<bool>& stop) {
  Impl& s = *impl_;
  const int listen_fd = s.acceptor.native_handle();
  while (!stop) {
    pollfd p{listen_fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    beast::error_code ec;
    tcp::socket socket = s.acceptor.accept(ec);
    if (ec) continue;
    const bool v6 = socket.local_endpoint(ec).address().is_v6();
    const int fd = socket.release(ec);
    if (ec) continue;
    {
      std::lock_guard lock(s.mutex);
      ++s.connections;
    }
    try {
      std::thread([&s, fd, v6] {
        s.serve_connection(fd, v6);
        std::lock_guard lock(s.mutex);
        if (--s.connections == 0) s.closed.notify_all();
      }).detach();
    } catch (const std::system_error&) {  // no thread to be had: this connection is dropped, not the server
      ::close(fd);
      std::lock_guard lock(s.mutex);
      --s.connections;
    }
  }
  s.stopping = true;
  s.acceptor.close();
  s.loop.drain(s.options.drain_grace);  // running requests finish or are cancelled with a reason
  std::unique_lock lock(s.mutex);
  s.closed.wait_for(lock, s.options.write_timeout + std::chrono::seconds(5),
                    [&] { return s.connections == 0; });
}

void HttpServer::Impl::serve_connection(int fd, bool v6) {
  Connection c(fd, v6, options.write_timeout);
  bool over_capacity;
  {
    std::lock_guard lock(mutex);
    over_capacity = connections > options.max_connections;
  }
  if (over_capacity) {
    c.reply({503, "too many connections; retry later", "", "server_error"}, 11, false);
    return;
  }
  for (;;) {
    // Idle: wait for the next request's first byte in slices, so that a stop is seen.
    const auto idle_until = Clock::now() + options.idle_timeout;
    while (c.buffer.size() == 0) {
      if (stopping || Clock::now() >= idle_until) return;
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, 200);
      if (ready < 0) return;
      if (ready > 0) break;
    }
    http::request_parser<http::string_body> parser;
    parser.header_limit(std::uint32_t(options.max_header_bytes));
    parser.body_limit(std::uint64_t(options.max_body_bytes));
    const beast::error_code ec = run_for(c.io, c.stream, options.request_timeout,
                                         [&](auto h) { http::async_read(c.stream, c.buffer, parser, h); });
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof)
      return;
    if (ec) {
      const bool header = ec == http::error::header_limit, body = ec == http::error::body_limit;
      ApiError e{header ? 431
                 : body ? 413
                        : 400,
                 header ? fmt::format("the request's header is over {} bytes", options.max_header_bytes)
                 : body ? fmt::format("the request's body is over {} bytes", options.max_body_bytes)
                        : fmt::format("malformed HTTP request: {}", ec.message())};
      c.reply(e, 11, false);
      return;
    }
    const http::request<http::string_body>& req = parser.get();
    const bool keep_alive = req.keep_alive() && !stopping;
    const unsigned version = req.version();
    const std::string target(req.target().substr(0, req.target().find('?')));
    const auto reply = [&](const ApiError& e) { return c.reply(e, version, keep_alive); };
    const bool api = target.rfind("/v1/", 0) == 0;
    if (api && !options.api_key.empty()) {
      const std::string given(req[http::field::authorization]);
      if (!same_key(given, "Bearer " + options.api_key)) {
        if (!reply(
                {401, "a valid API key is required: Authorization: Bearer KEY", "", "authentication_error"}))
          return;
        if (!keep_alive) return;
        continue;
      }
    }
    bool ok = true;
    const bool get = req.method() == http::verb::get, post = req.method() == http::verb::post;
    if (target == "/health" && get) {
      Response r = json_response(http::status::ok, {{"status", "ok"}}, version, keep_alive);
      ok = c.send(r);
    } else if (target == "/metrics" && get) {
      Response r{http::status::ok, version};
      r.set(http::field::content_type, "text/plain; version=0.0.4");
      r.keep_alive(keep_alive);
      r.body() = loop.metrics_text();
      r.prepare_payload();
      ok = c.send(r);
    } else if (target == "/v1/models" && get) {
      json model = {{"id", context.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "dew"}};
      if (context.context > 0) model["max_model_len"] = context.context;
      Response r = json_response(http::status::ok, {{"object", "list"}, {"data", json::array({model})}},
                                 version, keep_alive);
      ok = c.send(r);
    } else if ((target == "/v1/completions" || target == "/v1/chat/completions") && post) {
      ok = answer(target == "/v1/chat/completions" ? Endpoint::chat : Endpoint::completions, req.body(),
                  version, keep_alive, c);
    } else if (target == "/health" || target == "/metrics" || target == "/v1/models" ||
               target == "/v1/completions" || target == "/v1/chat/completions") {
      ok = reply({405, fmt::format("{} does not take {}", target, std::string(req.method_string())), "",
                  "invalid_request_error"});
    } else {
      ok = reply(
          {404,
           fmt::format("no route {}; this server has /v1/completions, /v1/chat/completions, /v1/models, "
                       "/health and /metrics",
                       target),
           "", "invalid_request_error"});
    }
    if (!ok || !keep_alive) return;
  }
}

bool HttpServer::Impl::answer(Endpoint endpoint, const std::string& text, unsigned version, bool keep_alive,
                              Connection& c) {
  const auto reply = [&](const ApiError& e) { return c.reply(e, version, keep_alive); };
  const json body = json::parse(text, nullptr, false);  // also refuses ill-formed UTF-8 in strings
  if (body.is_discarded()) return reply({400, "the request body is not valid JSON (UTF-8)"});
  ApiRequest request;
  try {
    request = parse_request(endpoint, body, context);
  } catch (const ApiError& e) {
    return reply(e);
  } catch (const Error& e) {  // the tokenizer's refusals
    return reply({400, e.what()});
  }
  const EngineLoop::Submitted submitted = loop.submit(request.text);
  if (submitted.overloaded) return reply({503, submitted.error + "; retry later", "", "server_error"});
  if (!submitted.stream) return reply({400, submitted.error});
  const std::string id =
      fmt::format("{}-{:016x}", endpoint == Endpoint::chat ? "chatcmpl" : "cmpl", next_id++);
  AnswerBuilder builder(request, context, id, int64_t(std::time(nullptr)));
  int64_t open = request.text.options.n;
  StreamEvent event;
  // The next event; false (and the request cancelled) when the client has gone away meanwhile.
  const auto next = [&]() {
    while (!submitted.stream->next(event, std::chrono::milliseconds(100)))
      if (peer_gone(c.fd)) {
        loop.cancel(submitted.id);
        return false;
      }
    return true;
  };
  if (!request.stream) {
    while (open > 0) {
      if (!next()) return false;
      builder.add(event);
      open -= event.finished;
    }
    Response r = json_response(http::status::ok, builder.answer(), version, keep_alive);
    return c.send(r);
  }
  http::response<http::empty_body> head{http::status::ok, version};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  head.set(http::field::server, "dew");
  head.keep_alive(keep_alive);
  head.chunked(true);
  http::response_serializer<http::empty_body> serializer{head};
  // One server-sent event; a failed write (a client that went away mid-stream) cancels the request.
  const auto send_event = [&](const std::string& data) {
    const std::string line = "data: " + data + "\n\n";
    const bool ok =
        c.write([&](auto h) { net::async_write(c.stream, http::make_chunk(net::buffer(line)), h); });
    if (!ok) loop.cancel(submitted.id);
    return ok;
  };
  if (!c.write([&](auto h) { http::async_write_header(c.stream, serializer, h); })) {
    loop.cancel(submitted.id);
    return false;
  }
  while (open > 0) {
    if (!next()) return false;
    open -= event.finished;
    const json chunk = builder.chunk(event);
    if (!chunk.is_null() && !send_event(wire_json(chunk))) return false;
  }
  if (request.include_usage && !send_event(wire_json(builder.usage_chunk()))) return false;
  if (!send_event("[DONE]")) return false;
  return c.write([&](auto h) { net::async_write(c.stream, http::make_chunk_last(), h); });
}

}  // namespace dew::serve
