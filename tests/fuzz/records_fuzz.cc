// libFuzzer target for the data sources' record parsers: the input's first byte picks the reader (text
// by line or paragraph, JSONL, llm.c .bin or .npy token files, each failing or skipping what is
// malformed), the rest is the file. Every record either reads or is refused with a dew::Error naming the
// file; a crash, an out-of-bounds read or undefined behaviour is a bug.
#include <dew/error.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "data/stage.h"

namespace {

// One file per process, rewritten for each input: the readers take paths.
std::string scratch_path(const char* suffix) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/dew_records_fuzz_" + std::to_string(::getpid()) + suffix;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int kind = data[0] % 5;
  const bool skip = (data[0] / 5) % 2 == 1;
  const char* suffixes[] = {".txt", ".txt", ".jsonl", ".bin", ".npy"};
  const std::string path = scratch_path(suffixes[kind]);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data + 1), std::streamsize(size - 1));
  const dew::data::SourceOptions options{.epochs = 1, .skip_malformed = skip};
  try {
    std::unique_ptr<dew::data::detail::Source> source =
        kind == 0   ? dew::data::detail::make_text_source({path}, dew::data::TextUnit::line, options)
        : kind == 1 ? dew::data::detail::make_text_source({path}, dew::data::TextUnit::paragraph, options)
        : kind == 2 ? dew::data::detail::make_jsonl_source({path}, "text", options)
                    : dew::data::detail::make_token_source(
                          {path}, kind == 3 ? std::optional<int32_t>(0) : std::nullopt, options);
    for (int64_t i = 0; i < source->size(); ++i) (void)source->read(i);
    (void)source->describe();
  } catch (const dew::Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
