// cuBLASLt opened with dlopen on first use (cuda_cublaslt.h says why).
#include "ops/matmul/cuda_cublaslt.h"

#include <dew/error.h>
#include <dlfcn.h>

#include <mutex>

namespace dew::ops {
namespace {

template <class F>
void resolve(void* library, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(library, name));
  DEW_REQUIRE(f, "[matmul] cuBLASLt has no {} ({}); expected the CUDA 13 library", name, dlerror());
}

CublasLt open_cublaslt() {
  void* library = dlopen("libcublasLt.so." DEW_CUBLASLT_SOVERSION, RTLD_NOW | RTLD_LOCAL);
  if (!library) library = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
  DEW_REQUIRE(library,
              "[matmul] cannot open cuBLASLt (libcublasLt.so.{}): {}; install the CUDA toolkit's "
              "libraries or put their folder on LD_LIBRARY_PATH",
              DEW_CUBLASLT_SOVERSION, dlerror());
  CublasLt f{};
  resolve(library, "cublasLtCreate", f.create);
  resolve(library, "cublasLtGetStatusString", f.status_string);
  resolve(library, "cublasLtMatmulDescCreate", f.desc_create);
  resolve(library, "cublasLtMatmulDescDestroy", f.desc_destroy);
  resolve(library, "cublasLtMatmulDescSetAttribute", f.desc_set);
  resolve(library, "cublasLtMatrixLayoutCreate", f.layout_create);
  resolve(library, "cublasLtMatrixLayoutDestroy", f.layout_destroy);
  resolve(library, "cublasLtMatrixLayoutSetAttribute", f.layout_set);
  resolve(library, "cublasLtMatmulPreferenceCreate", f.preference_create);
  resolve(library, "cublasLtMatmulPreferenceDestroy", f.preference_destroy);
  resolve(library, "cublasLtMatmulPreferenceSetAttribute", f.preference_set);
  resolve(library, "cublasLtMatmulAlgoGetHeuristic", f.heuristic);
  resolve(library, "cublasLtMatmul", f.matmul);
  return f;  // the library stays open for the process
}

}  // namespace

const CublasLt& cublaslt() {
  static const CublasLt functions = open_cublaslt();
  return functions;
}

}  // namespace dew::ops
