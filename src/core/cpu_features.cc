// cpuid-based detection of the instruction sets the selector's cpu_has requirement asks about.
#include <dew/runtime.h>

namespace dew {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
    f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
    return f;
  }();
  return features;
}

}  // namespace dew
