// libFuzzer target for the safetensors reader: any bytes either parse into a header whose every
// tensor lies inside the buffer, or are refused with a dew::Error. Any other exception, a crash or an
// out-of-bounds read (AddressSanitizer) is a bug. Built and run by run_fuzz.sh (the test suite).
#include <dew/error.h>
#include <dew/safetensors.h>

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dew::SafetensorsHeader h = dew::parse_safetensors(data, size, "fuzz input");
    uint64_t checksum = 0;
    for (const auto& e : h.tensors)  // every byte the header claims must be readable
      for (uint64_t i = e.begin; i < e.end; ++i) checksum += data[h.data_start + i];
    if (h.tensors.empty() ? h.data_start != size : h.data_start + h.tensors.back().end != size) std::abort();
    return int(checksum & 0);
  } catch (const dew::Error&) {
    return 0;
  }
}
