// libFuzzer target for config.json: any bytes either parse into a ModelConfig that Dew writes back as a
// config.json it reads again, or are refused with a dew::Error. Any other exception, a crash, an
// out-of-bounds access (AddressSanitizer) or undefined behaviour (UBSan) is a bug.
#include <dew/error.h>
#include <dew/models.h>

#include <string>

#include "models/families.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dew::ModelConfig config =
        dew::parse_model_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz config.json");
    // What Dew writes, it reads: a config that parsed must survive the round trip.
    const std::string written = dew::models::model_config_json(config);
    try {
      (void)dew::parse_model_config(written, "written config.json");
    } catch (const dew::Error&) {
      __builtin_trap();
    }
    return 0;
  } catch (const dew::Error&) {
    return 0;
  }
}
