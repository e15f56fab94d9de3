// `dew tokenize --tokenizer PATH [--special] [--decode] [--skip-special] [--chat]`: JSONL strings on stdin,
// one JSON array of ids per line on stdout; with --decode, arrays of ids in and strings out; with
// --chat, conversations in, the ids of their chat-template prompts out.
#include <dew/error.h>
#include <dew/tokenizer.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "io/files.h"
#include "io/json.h"

namespace dew::cli {

std::optional<std::string> TextArgument::get() const {
  if (text) return text;
  if (!file.empty()) return read_text_file(file);
  return std::nullopt;
}

void TextArgument::add_to(CLI::App& command, const char* what) {
  CLI::Option* given =
      command.add_option("--text", text, fmt::format("{} this text instead of JSONL on stdin", what));
  command.add_option("--file", file, fmt::format("{} this file's text instead of JSONL on stdin", what))
      ->excludes(given);
}

namespace {

struct TokenizeOptions {
  std::string tokenizer;
  bool special = false, decode = false, skip_special = false;
  bool chat = false;  // lines are conversations {"messages": [...], ...} rendered by the chat template
  TextArgument text;  // one text's ids instead of JSONL records
};

// --chat: {"messages": [...], "tools": [...], "add_generation_prompt": bool, "continue_final_message":
// bool, other keys: template
// variables} → the ids of the rendered prompt (the template writes the special tokens).
std::vector<int64_t> chat_ids(const Tokenizer& tokenizer, const std::string& line, const std::string& where) {
  const nlohmann::ordered_json record = parse_ordered_json(line, where);
  DEW_REQUIRE(record.is_object() && record.contains("messages"),
              "{}: expected a conversation {{\"messages\": [...], ...}}", where);
  ChatOptions options;
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  for (const auto& [key, value] : record.items()) {
    if (key == "messages") continue;
    if (key == "tools")
      options.tools_json = value.is_null() ? "" : value.dump();
    else if (key == "add_generation_prompt" || key == "continue_final_message") {
      DEW_REQUIRE(value.is_boolean(), "{}: {} is {}; expected true or false", where, key, value.dump());
      (key == "add_generation_prompt" ? options.add_generation_prompt : options.continue_final_message) =
          value.get<bool>();
    } else
      variables[key] = value;
  }
  options.variables_json = variables.dump();
  return tokenizer.encode(tokenizer.apply_chat_template(record["messages"].dump(), options).text);
}

int run_tokenize(const TokenizeOptions& o) {
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  if (const std::optional<std::string> text = o.text.get()) {
    DEW_REQUIRE(!o.decode && !o.chat,
                "tokenize: --text and --file give text to encode; without --decode or --chat");
    std::cout << nlohmann::json(tokenizer.encode(*text, {.add_special_tokens = o.special})).dump() << "\n";
    return 0;
  }
  std::string line;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("stdin line {}", number);
    if (o.chat) {
      std::cout << nlohmann::json(chat_ids(tokenizer, line, where)).dump() << "\n";
      continue;
    }
    const nlohmann::json record = parse_json(line, where);
    if (!o.decode) {
      DEW_REQUIRE(record.is_string(), "{}: expected a JSON string (the text to encode), got {}", where,
                  json_type_name(record.type()));
      const nlohmann::json ids =
          tokenizer.encode(record.get<std::string>(), {.add_special_tokens = o.special});
      std::cout << ids.dump() << "\n";
      continue;
    }
    DEW_REQUIRE(record.is_array(), "{}: expected a JSON array of token ids, got {}", where,
                json_type_name(record.type()));
    std::vector<int64_t> ids;
    for (const auto& id : record) {
      DEW_REQUIRE(id.is_number_integer(), "{}: {} is not a token id; expected an integer", where, id.dump());
      ids.push_back(id.get<int64_t>());
    }
    const nlohmann::json text = tokenizer.decode(ids, {.skip_special_tokens = o.skip_special});
    std::cout << text.dump() << "\n";
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

void add_tokenize(CLI::App& app, int& status) {
  auto* tokenize_cmd = app.add_subcommand(
      "tokenize", "JSONL strings in, one JSON array of token ids per line out (--decode: the other way)");
  TokenizeOptions& tokenize = runs(tokenize_cmd, status, run_tokenize);
  tokenize_cmd->add_option("--tokenizer", tokenize.tokenizer, "a tokenizer.json, or a directory holding one")
      ->required();
  auto* special_flag = tokenize_cmd->add_flag("--special", tokenize.special,
                                              "add the special tokens of the post-processor (BOS, ...)");
  auto* decode_flag =
      tokenize_cmd->add_flag("--decode", tokenize.decode, "read arrays of ids, write strings");
  tokenize_cmd->add_flag("--skip-special", tokenize.skip_special, "with --decode: leave special tokens out");
  tokenize_cmd
      ->add_flag("--chat", tokenize.chat,
                 "read conversations {\"messages\": [...], \"tools\", \"add_generation_prompt\", ...} "
                 "and write the ids of their chat-template prompts (the template writes the special tokens)")
      ->excludes(special_flag)
      ->excludes(decode_flag);
  tokenize.text.add_to(*tokenize_cmd, "encode");
}

}  // namespace dew::cli
