// libFuzzer target for model.safetensors.index.json: the input is the index of a directory that holds
// one valid shard (a.safetensors, tensor "x"). Either the checkpoint opens and every tensor it lists is
// found in its shard, or a dew::Error says what is wrong; a crash, an out-of-bounds read, undefined
// behaviour or a path outside the directory followed is a bug.
#include <dew/error.h>
#include <dew/safetensors.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

// A directory per process with the shard written once; the index is rewritten for each input.
const std::filesystem::path& directory() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    const std::filesystem::path d =
        std::filesystem::path(tmp ? tmp : "/tmp") / ("dew_index_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    std::string bytes(8, '\0');
    for (int b = 0; b < 8; ++b) bytes[size_t(b)] = char(uint8_t(header.size() >> (8 * b)));
    std::ofstream(d / "a.safetensors", std::ios::binary) << bytes << header << std::string(8, '\0');
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = directory();
  std::ofstream(dir / "model.safetensors.index.json", std::ios::binary)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  try {
    const dew::SafetensorsCheckpoint checkpoint = dew::SafetensorsCheckpoint::open(dir.string());
    for (const std::string& name : checkpoint.names())
      if (!checkpoint.find(name)) __builtin_trap();  // listed, so found
  } catch (const dew::Error&) {
  }
  return 0;
}
