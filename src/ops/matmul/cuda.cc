// matmul on CUDA through cuBLASLt (cuda.cublaslt): f32 (IEEE, never TF32), bf16 and f16 operands with
// f32 accumulation, f64 in f64; batched with broadcast batch dims. Bias, ReLU and the residual go
// through cuBLASLt's own epilogue when they fit its order, act(scale*AB + bias + beta*C); every other
// epilogue runs on an f32 (f64) product in our kernel (cuda.cu), so the output is rounded once.
#include "ops/matmul/cuda.h"

#include <map>
#include <mutex>

#include "cuda/launch.h"
#include "ops/cuda_view.h"
#include "ops/matmul/cuda_cublaslt.h"
#include "ops/matmul/matmul.h"

namespace dew::ops {
namespace {

void check_lt(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("[matmul] cuBLASLt {} failed: {}", call, cublaslt().status_string(status));
}

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// Per device: the cuBLASLt handle and its workspace (a tensor, so the allocator counts it).
struct LtDevice {
  cublasLtHandle_t handle = nullptr;
  Tensor workspace;
};

LtDevice& lt_device(int device) {
  static std::mutex mutex;
  static std::map<int, LtDevice>* devices = new std::map<int, LtDevice>;  // never destroyed
  std::lock_guard lock(mutex);
  LtDevice& d = (*devices)[device];
  if (!d.handle) {
    cuda::use_device(device);
    check_lt(cublaslt().create(&d.handle), "cublasLtCreate");
    d.workspace = Tensor::empty({int64_t(kWorkspaceBytes)}, DType::u8, Device::cuda(device));
  }
  return d;
}

cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::f64:
      return CUDA_R_64F;
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_16F;
  }
}

// The largest power of two (up to 256) dividing a pointer: what cuBLASLt may assume of it.
uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// One operand as a column-major strided batch: rows x cols with leading dimension ld.
struct LtMatrix {
  const void* data = nullptr;
  DType dtype = DType::f32;
  int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
  int32_t batch = 1;
};

struct LayoutHandle {
  cublasLtMatrixLayout_t layout = nullptr;
  explicit LayoutHandle(const LtMatrix& m) {
    check_lt(cublaslt().layout_create(&layout, lt_type(m.dtype), uint64_t(m.rows), uint64_t(m.cols), m.ld),
             "cublasLtMatrixLayoutCreate");
    if (m.batch > 1) {
      check_lt(cublaslt().layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &m.batch, sizeof(m.batch)),
               "set BATCH_COUNT");
      check_lt(cublaslt().layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m.batch_stride,
                                     sizeof(m.batch_stride)),
               "set STRIDED_BATCH_OFFSET");
    }
  }
  ~LayoutHandle() { cublaslt().layout_destroy(layout); }
  LayoutHandle(const LayoutHandle&) = delete;
  LayoutHandle& operator=(const LayoutHandle&) = delete;
};

// A stored operand (batch..., R, C) made contiguous, with the batch stride that reaches the output's
// batch: 0 when it has one matrix (broadcast), R*C when its batch is the output's; other broadcasts
// are materialized.
Tensor batch_ready(const Tensor& x, const Shape& batch, int64_t* batch_stride) {
  const int64_t R = x.size(-2), C = x.size(-1);
  const Shape own(x.shape().begin(), x.shape().end() - 2);
  if (numel_of(own) == 1) {
    *batch_stride = 0;
    return x.contiguous();
  }
  *batch_stride = R * C;
  if (own == batch) return x.contiguous();
  Shape full = batch;
  full.insert(full.end(), {R, C});
  return x.expand(full).contiguous();
}

// D (col-major N x M per batch entry) = op(A_lt) op(B_lt) with A_lt = b's storage, B_lt = a's: the
// row-major product C = a b is the column-major product C^T = b^T a^T, read without copies.
void run_cublaslt(const MatmulArgs& args, Tensor& out) {
  const int device = args.device().index;
  const MatmulOptions& o = args.options;
  const MatmulGeometry g = matmul_geometry(args);
  const DType dtype = args.dtype();
  if (out.numel() == 0) return;
  if (g.K == 0) {  // an empty sum: the epilogue of zeros
    const Tensor zeros =
        Tensor::zeros(out.shape(), dtype == DType::f64 ? DType::f64 : DType::f32, out.device());
    cuda_kernels::matmul_epilogue(device, dtype, zeros.raw_data(),
                                  o.bias.defined() ? o.bias.contiguous().raw_data() : nullptr,
                                  o.residual.defined() ? o.residual.contiguous().raw_data() : nullptr,
                                  o.activation, o.scale, out.raw_data(), out.numel() / g.N, g.N);
    return;
  }
  int64_t a_stride = 0, b_stride = 0;
  const Tensor a = batch_ready(args.a, g.batch, &a_stride), b = batch_ready(args.b, g.batch, &b_stride);
  int64_t M = g.M, batch = g.batch_count();
  if (b_stride == 0 && !o.transpose_a && batch > 1) {  // one weight for every batch entry: one tall GEMM
    M *= batch;
    batch = 1;
  }
  DEW_REQUIRE(batch <= INT32_MAX, "[matmul] {} batch entries; cuBLASLt takes at most {}", batch, INT32_MAX);
  const int64_t N = g.N, K = g.K;
  const LtMatrix A{b.raw_data(),          dtype,
                   o.transpose_b ? K : N, o.transpose_b ? N : K,
                   o.transpose_b ? K : N, batch > 1 ? b_stride : 0,
                   int32_t(batch)};
  const LtMatrix B{a.raw_data(),          dtype,
                   o.transpose_a ? M : K, o.transpose_a ? K : M,
                   o.transpose_a ? M : K, batch > 1 ? a_stride : 0,
                   int32_t(batch)};

  // cuBLASLt's epilogue order fits when nothing follows a nonlinear activation; f64 has no such path.
  const bool direct = dtype != DType::f64 && (o.activation == Activation::none ||
                                              (o.activation == Activation::relu && !o.residual.defined()));
  const DType acc_dtype = dtype == DType::f64 ? DType::f64 : DType::f32;
  const Tensor product = direct ? out : Tensor::empty(out.shape(), acc_dtype, out.device());
  const Tensor residual = o.residual.defined() ? o.residual.contiguous() : Tensor();
  const Tensor bias = o.bias.defined() ? o.bias.contiguous() : Tensor();
  const LtMatrix D{product.raw_data(), product.dtype(), N, M, N, batch > 1 ? M * N : 0, int32_t(batch)};
  const bool use_c = direct && residual.defined();
  const LtMatrix Cm{use_c ? residual.raw_data() : D.data, D.dtype, N, M, N, D.batch_stride, D.batch};

  cublasLtMatmulDesc_t desc = nullptr;
  const bool f64 = dtype == DType::f64;
  const cublasComputeType_t compute = f64                             ? CUBLAS_COMPUTE_64F
                                      : dtype == DType::f32 && o.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                      : CUBLAS_COMPUTE_32F;
  check_lt(cublaslt().desc_create(&desc, compute, f64 ? CUDA_R_64F : CUDA_R_32F), "cublasLtMatmulDescCreate");
  struct DescGuard {
    cublasLtMatmulDesc_t d;
    ~DescGuard() { cublaslt().desc_destroy(d); }
  } desc_guard{desc};
  const cublasOperation_t op_a = o.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = o.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(cublaslt().desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)), "set TRANSA");
  check_lt(cublaslt().desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)), "set TRANSB");
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (direct) {
    const bool relu = o.activation == Activation::relu;
    if (bias.defined()) {
      epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
      const void* bias_ptr = bias.raw_data();
      check_lt(cublaslt().desc_set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)),
               "set BIAS_POINTER");
    } else if (relu) {
      epilogue = CUBLASLT_EPILOGUE_RELU;
    }
  }
  check_lt(cublaslt().desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
           "set EPILOGUE");

  LayoutHandle la(A), lb(B), lc(Cm), ld(D);
  LtDevice& lt = lt_device(device);
  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublaslt().preference_create(&pref), "cublasLtMatmulPreferenceCreate");
  struct PrefGuard {
    cublasLtMatmulPreference_t p;
    ~PrefGuard() { cublaslt().preference_destroy(p); }
  } pref_guard{pref};
  const size_t workspace_bytes = kWorkspaceBytes;
  check_lt(cublaslt().preference_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                     sizeof(workspace_bytes)),
           "set MAX_WORKSPACE_BYTES");
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, A.data},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, B.data},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, Cm.data},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, D.data}};
  for (const auto& [attribute, pointer] : alignments) {
    const uint32_t alignment = alignment_of(pointer);
    check_lt(cublaslt().preference_set(pref, attribute, &alignment, sizeof(alignment)), "set alignment");
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check_lt(cublaslt().heuristic(lt.handle, desc, la.layout, lb.layout, lc.layout, ld.layout, pref, 1,
                                &heuristic, &found),
           "cublasLtMatmulAlgoGetHeuristic");
  DEW_REQUIRE(found > 0,
              "[matmul] cuBLASLt has no algorithm for {} x {} ({} batch entries, {}); expected one",
              args.a.describe(), args.b.describe(), batch, dtype_name(dtype));

  const double alpha64 = direct ? o.scale : 1.0, beta64 = use_c ? 1.0 : 0.0;
  const float alpha32 = float(alpha64), beta32 = float(beta64);
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  cuda::use_device(device);
  check_lt(cublaslt().matmul(lt.handle, desc, alpha, A.data, la.layout, B.data, lb.layout, beta, Cm.data,
                             lc.layout, const_cast<void*>(D.data), ld.layout, &heuristic.algo,
                             lt.workspace.raw_data(), workspace_bytes, cuda::stream_of(device)),
           "cublasLtMatmul");
  if (!direct)
    cuda_kernels::matmul_epilogue(device, dtype, product.raw_data(),
                                  bias.defined() ? bias.raw_data() : nullptr,
                                  residual.defined() ? residual.raw_data() : nullptr, o.activation, o.scale,
                                  out.raw_data(), numel_of(g.batch) * g.M, N);
}

}  // namespace

void add_matmul_cuda(select::Registry<MatmulArgs>& r) {
  r.add({"cuda.cublaslt", cuda_requirements<MatmulArgs>(kCudaFloating),
         [](const MatmulArgs& a, std::vector<Tensor>& outs) {
           with_glu_after(a, outs[0], [](const MatmulArgs& b, Tensor& y) { run_cublaslt(b, y); });
         }});
}

}  // namespace dew::ops
