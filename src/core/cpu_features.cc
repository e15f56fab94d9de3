// cpuid-based detection of the instruction sets the selector's cpu_has requirement asks about, capped by
// DEW_MAX_CPU_ISA (runtime.h).
#include <dew/error.h>
#include <dew/runtime.h>

#include <cpuid.h>

#include <cstdlib>
#include <string_view>

namespace dew {
namespace {

// cpuid leaf 1, ECX bit 29: GCC 12 and clang 14 have no __builtin_cpu_supports("f16c") (GCC's answers 0).
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}

// DEW_MAX_CPU_ISA: the instruction sets above the named level are treated as absent.
void cap_to_environment(CpuFeatures& f) {
  const char* env = std::getenv("DEW_MAX_CPU_ISA");
  if (!env) return;
  const std::string_view level = env;
  DEW_REQUIRE(level == "baseline" || level == "avx2" || level == "avx512" || level == "avx512_bf16",
              "DEW_MAX_CPU_ISA='{}' is not a level; expected baseline, avx2, avx512 or avx512_bf16", env);
  if (level == "baseline") f.avx2 = f.fma = f.f16c = false;
  if (level == "baseline" || level == "avx2") f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = false;
  if (level != "avx512_bf16") f.avx512bf16 = false;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.f16c = has_f16c();
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
    f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
    cap_to_environment(f);
    return f;
  }();
  return features;
}

}  // namespace dew
