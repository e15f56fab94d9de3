// libFuzzer target for model.safetensors.index.json: any bytes either give a weight map whose every
// shard is a plain file name in the index's directory (no '/', not "." or ".."), or are refused with a
// dew::Error. A path outside the directory accepted, a crash, an out-of-bounds read or undefined
// behaviour is a bug.
#include <dew/error.h>

#include <string_view>

#include "io/safetensors_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto shards = dew::parse_safetensors_index(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz index");
    for (const auto& [name, shard] : shards)
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
        __builtin_trap();
  } catch (const dew::Error&) {
  }
  return 0;
}
