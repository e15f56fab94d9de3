// environment.h: versions from each library's own version call or header, the machine from
// /proc/cpuinfo, sysconf and uname (Linux).
#include "train/environment.h"

#include <dew/runtime.h>
#include <dew_commit.h>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>
#define PCRE2_CODE_UNIT_WIDTH 8  // pcre2.h asks for it; only its version macros are used
#include <pcre2.h>
#include <sys/utsname.h>
#include <toml++/impl/version.h>
#include <unistd.h>
#include <utf8proc.h>
#include <xxhash.h>

#include <fstream>
#include <string>
#include <thread>

namespace dew::train {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

nlohmann::json instruction_sets() {
  const CpuFeatures& f = cpu_features();
  nlohmann::json out = nlohmann::json::array();
  const std::pair<bool, const char*> sets[] = {{f.avx2, "avx2"},
                                               {f.fma, "fma"},
                                               {f.avx512f, "avx512f"},
                                               {f.avx512bw, "avx512bw"},
                                               {f.avx512vl, "avx512vl"},
                                               {f.avx512dq, "avx512dq"},
                                               {f.avx512bf16, "avx512bf16"}};
  for (const auto& [has, name] : sets)
    if (has) out.push_back(name);
  return out;
}

}  // namespace

nlohmann::json environment_description() {
  const dnnl_version_t* dnnl = dnnl_version();
  utsname os{};
  ::uname(&os);
  const double memory = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  return {
      {"build",
       {{"dew", DEW_VERSION},
        {"commit", DEW_COMMIT},
        {"build_type", DEW_BUILD_TYPE},
        {"compiler", __VERSION__},
        {"cuda_backend", DEW_CUDA_BACKEND ? "built" : "not built"}}},
      {"libraries",
       {{"onednn", fmt::format("{}.{}.{}", dnnl->major, dnnl->minor, dnnl->patch)},
        {"fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
        {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                      NLOHMANN_JSON_VERSION_PATCH)},
        {"tomlplusplus", fmt::format("{}.{}.{}", TOML_LIB_MAJOR, TOML_LIB_MINOR, TOML_LIB_PATCH)},
        {"pcre2", fmt::format("{}.{}", PCRE2_MAJOR, PCRE2_MINOR)},
        {"utf8proc", utf8proc_version()},
        {"xxhash", fmt::format("{}.{}.{}", XXH_VERSION_MAJOR, XXH_VERSION_MINOR, XXH_VERSION_RELEASE)}}},
      {"machine",
       {{"cpu", cpu_model()},
        {"logical_cores", std::thread::hardware_concurrency()},
        {"threads", num_threads()},
        {"memory_bytes", memory},
        {"instruction_sets", instruction_sets()},
        {"cuda_devices", cuda_device_count()},
        {"os", fmt::format("{} {} {}", os.sysname, os.release, os.machine)}}},
  };
}

}  // namespace dew::train
