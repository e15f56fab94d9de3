// dew serve over HTTP: the official OpenAI client against it (tools/openai-client, skipped without
// Node or the package), a bounded load with disconnects, malformed and slow requests, the API key,
// and SIGTERM ending the process with 0.
#include <arpa/inet.h>
#include <dew/models.h>
#include <dew/tokenizer.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace dew {
namespace {

namespace fs = std::filesystem;

// A tiny llama with a byte-level tokenizer and a chat template; its head scaled so that its greedy
// choices are far from ties (a batch's rounding must not flip them).
std::string tiny_model() {
  const std::string dir = ::testing::TempDir() + "dew_serve_tiny";
  if (fs::exists(dir + "/tokenizer_config.json")) return dir;
  const ModelConfig config = parse_model_config(
      R"({"model_type":"llama","vocab_size":258,"hidden_size":32,"intermediate_size":48,"num_hidden_layers":2,
        "num_attention_heads":2,"num_key_value_heads":1,"max_position_embeddings":256})",
      "config");
  CausalLM model = CausalLM::init(config, DType::f32, 5);
  Tensor& head = model.parameters().at("lm_head.weight");
  for (int64_t i = 0; i < head.numel(); ++i) head.data<float>()[i] *= 100;
  model.save(dir);
  BpeTrainOptions options;
  options.min_frequency = 1 << 30;  // bytes only
  options.special_tokens = {"<|endoftext|>"};
  std::ofstream(dir + "/tokenizer.json") << train_byte_level_bpe({"x"}, options);
  std::ofstream(dir + "/tokenizer_config.json")
      << R"({"eos_token": "<|endoftext|>", "chat_template": "{% for m in messages %}<{{ m.role }}>{{ m.content }})"
         R"(\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"})";
  return dir;
}

// `dew serve` on a free port, stopped by SIGTERM.
class Server {
 public:
  explicit Server(std::vector<std::string> extra = {}) {
    log_ = ::testing::TempDir() + "dew_serve_" + std::to_string(::getpid()) + ".log";
    std::vector<std::string> args = {DEW_BINARY,  "serve",  "-m",          tiny_model(), "--port",       "0",
                                     "--api-key", "secret", "--kv-blocks", "160",        "--block-size", "8"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 300 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::smatch m;
      const std::string text = log();
      if (std::regex_search(text, m, listening)) port_ = std::stoi(m[1]);
    }
  }
  ~Server() {
    if (pid_ > 0) stop();
  }
  int port() const { return port_; }
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // SIGTERM, then the exit status (-1: it had to be killed).
  int stop() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 400; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
    return -1;
  }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  std::string log_;
};

// Sends `request` on a new connection and reads until the server closes it or `wait` passes.
std::string ask(int port, const std::string& request,
                std::chrono::milliseconds wait = std::chrono::seconds(10)) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return "(no connection)";
  }
  timeval tv{long(wait.count() / 1000), long(wait.count() % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) answer.append(buffer, size_t(n));
  ::close(fd);
  return answer;
}

std::string post(const std::string& path, const std::string& body, bool key = true) {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
         (key ? "Authorization: Bearer secret\r\n" : "") + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string get(const std::string& path, bool key = true) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
         (key ? "Authorization: Bearer secret\r\n" : "") + "\r\n";
}

bool has_client() {
  return std::system("node --version >/dev/null 2>&1") == 0 &&
         fs::exists(fs::path(DEW_SOURCE_DIR) / "tools/openai-client/node_modules/openai/package.json");
}

// Runs check.mjs in `mode`; its output, and whether it passed.
std::pair<bool, std::string> run_client(int port, const std::string& mode) {
  const std::string command =
      "node " + (fs::path(DEW_SOURCE_DIR) / "tools/openai-client/check.mjs").string() +
      " http://127.0.0.1:" + std::to_string(port) + "/v1 secret dew_serve_tiny " + mode + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  return {::pclose(pipe) == 0, out};
}

TEST(Http, TheOpenAiClientGetsWhatItExpects) {
  if (!has_client())
    GTEST_SKIP() << "no node or tools/openai-client/node_modules (tools/setup-debian.sh installs them)";
  Server server;
  ASSERT_GT(server.port(), 0) << server.log();
  const auto [passed, out] = run_client(server.port(), "api");
  EXPECT_TRUE(passed) << out;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// 64 concurrent streams, a quarter of them cut off mid-stream: the completed ones equal their solo
// answers, and afterwards no sequence runs, no block is held and the live tensor memory is what it was.
TEST(Http, ABoundedLoadWithDisconnectsLeaksNoBlocks) {
  if (!has_client())
    GTEST_SKIP() << "no node or tools/openai-client/node_modules (tools/setup-debian.sh installs them)";
  Server server;
  ASSERT_GT(server.port(), 0) << server.log();
  const auto bytes_in_use = [&] {
    const std::string m = ask(server.port(), get("/metrics", false));
    const size_t at = m.find("\ndew_tensor_bytes_in_use ");
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + 26));
  };
  const double baseline = bytes_in_use();
  const auto [passed, out] = run_client(server.port(), "load");
  EXPECT_TRUE(passed) << out;
  std::string metrics;
  for (int i = 0; i < 50; ++i) {  // a cancelled stream's request ends within a step or two
    metrics = ask(server.port(), get("/metrics", false));
    if (metrics.find("\ndew_kv_blocks_in_use 0\n") != std::string::npos &&
        metrics.find("\ndew_requests_running 0\n") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(metrics.find("\ndew_kv_blocks_in_use 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ndew_requests_running 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dew_time_to_first_token_seconds_count"), std::string::npos) << metrics;
  EXPECT_GT(baseline, 0);
  EXPECT_EQ(bytes_in_use(), baseline);  // the KV pool and nothing else, as before the load
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(Http, MalformedAndUnauthorizedRequestsAreRefusedAndTheServerLivesOn) {
  Server server({"--request-timeout", "1"});
  const int port = server.port();
  ASSERT_GT(port, 0) << server.log();
  const auto status_of = [](const std::string& answer) { return answer.substr(0, answer.find("\r\n")); };
  EXPECT_EQ(status_of(ask(port, get("/health", false))), "HTTP/1.1 200 OK");
  EXPECT_EQ(status_of(ask(port, get("/v1/models", false))), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(
      status_of(ask(
          port,
          "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer nope\r\n\r\n")),
      "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(status_of(ask(port, get("/v1/nothing"))), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(status_of(ask(port, get("/v1/completions"))), "HTTP/1.1 405 Method Not Allowed");
  const std::string bad_json = ask(port, post("/v1/completions", "{\"model\": \"dew_serve_tiny\", "));
  EXPECT_EQ(status_of(bad_json), "HTTP/1.1 400 Bad Request");
  EXPECT_NE(bad_json.find("\"type\":\"invalid_request_error\""), std::string::npos) << bad_json;
  EXPECT_EQ(
      status_of(ask(port, post("/v1/completions", "{\"model\":\"dew_serve_tiny\",\"prompt\":\"\xff\xfe\"}"))),
      "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_of(ask(port, post("/v1/completions",
                                     "{\"model\":\"dew_serve_tiny\",\"prompt\":\"a\",\"n\":\"2\"}"))),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_of(ask(
                port, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n")),
            "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(
      status_of(ask(port, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n{")),
      "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(status_of(ask(port, "GARBAGE\r\n\r\nMORE GARBAGE\r\n\r\n")), "HTTP/1.1 400 Bad Request");
  // A chunked request body, split mid-JSON, is read whole.
  const std::string chunked =
      ask(port,
          "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
          "Authorization: Bearer secret\r\nTransfer-Encoding: chunked\r\n\r\n"
          "14\r\n{\"model\":\"dew_serve_\r\n23\r\ntiny\",\"prompt\":\"hi\",\"max_tokens\":2}\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(chunked), "HTTP/1.1 200 OK") << chunked;
  EXPECT_NE(chunked.find("\"completion_tokens\":2"), std::string::npos) << chunked;
  EXPECT_EQ(ask(port, "GET /health HTTP/1.1\r\nHost"), "");  // truncated, then a silent close (timeout)
  // A client that stops sending mid-header is cut off after the request timeout (1 s here), not held.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ask(port, "GET /health HTTP/1.1\r\nHo", std::chrono::seconds(20)), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(status_of(ask(port, get("/health", false))), "HTTP/1.1 200 OK");
  EXPECT_EQ(server.stop(), 0) << server.log();
  EXPECT_NE(server.log().find("SIGTERM received"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace dew
