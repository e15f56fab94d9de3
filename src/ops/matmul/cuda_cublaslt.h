// cuBLASLt, opened on first use (dlopen), not linked: its static initializers touch about 100 MB at
// load, which every process linking it would pay (0.4 s per test process here) though most never
// run a GPU product. The functions Dew calls, by the header's own types.
#pragma once

#include <cublasLt.h>

namespace dew::ops {

struct CublasLt {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtGetStatusString) status_string;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
};

// The library's functions; throws dew::Error naming the library when it cannot be opened.
const CublasLt& cublaslt();

}  // namespace dew::ops
