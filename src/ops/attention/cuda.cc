// attention, attention_backward and attention_jvp on CUDA: registration of cuda.flash_simt (kernels in
// cuda_simt.cu; head dims up to 32 lanes x kMaxDimsPerLane) and cuda.flash_mma (cuda_mma.cu; bf16, D 64
// or 128). flash_mma comes second: it becomes the default once a GPU run has gated and timed it
// (docs/cuda.md; tools/gpu-qualify.sh); until then DEW_IMPL=attention:cuda.flash_mma selects it.
#include "ops/attention/cuda.h"

#include "ops/attention/attention.h"
#include "ops/cuda_view.h"

namespace dew::ops {
namespace {

const void* data_or_null(const Tensor& t) {
  return t.defined() ? t.raw_data() : nullptr;
}

// The call's geometry and mask for the kernels; the tensors it points into are kept in `keep`.
cuda_kernels::AttentionCall make_call(const Tensor& q, const Tensor& k, const AttentionOptions& o,
                                      std::vector<Tensor>& keep) {
  const AttentionGeometry g(q, k, o);
  cuda_kernels::AttentionCall c;
  c.B = g.B, c.T = g.T, c.S = g.S, c.H = g.H, c.Hkv = g.Hkv, c.D = g.D, c.group = g.group;
  c.scale = g.scale, c.cap = g.cap, c.causal = o.causal, c.window = o.window;
  if (o.q_segments.defined()) {
    keep.push_back(o.q_segments.contiguous());
    keep.push_back(o.k_segments.contiguous());
    c.q_segments = keep[keep.size() - 2].data<int64_t>();
    c.k_segments = keep.back().data<int64_t>();
  }
  if (o.sinks.defined()) {
    keep.push_back(o.sinks.contiguous());
    c.sinks = keep.back().raw_data();
  }
  return c;
}

template <class Args>
std::vector<select::Requirement<Args>> attention_requirements() {
  auto r = cuda_requirements<Args>(kCudaFloating);
  constexpr int64_t max_d = 32 * cuda_kernels::kMaxDimsPerLane;
  r.push_back(select::requires_that<Args>(
      fmt::format("D <= {}", max_d), [](const Args& a) { return a.q.size(-1) <= max_d; },
      [](const Args& a) { return fmt::format("D is {}", a.q.size(-1)); }));
  return r;
}

// The tensor-core kernels' cases: bf16, D 64 or 128, and inputs the kernels can read 16 bytes at a time
// (a non-contiguous input is copied, so only a contiguous one's address matters).
template <class Args>
std::vector<select::Requirement<Args>> mma_requirements() {
  auto r = cuda_requirements<Args>({DType::bf16});
  r.push_back(select::requires_that<Args>(
      "D in {64, 128}", [](const Args& a) { return a.q.size(-1) == 64 || a.q.size(-1) == 128; },
      [](const Args& a) { return fmt::format("D is {}", a.q.size(-1)); }));
  r.push_back(select::requires_that<Args>(
      "inputs 16-byte aligned",
      [](const Args& a) {
        for (const Tensor* t : a.inputs())
          if (t->defined() && t->is_contiguous() && reinterpret_cast<uintptr_t>(t->raw_data()) % 16 != 0)
            return false;
        return true;
      },
      [](const Args&) { return std::string("a contiguous input starts off a 16-byte boundary"); }));
  return r;
}

// The launchers' calls: contiguous inputs, the call's geometry, the outputs in order. cuda.flash_simt
// and cuda.flash_mma share each launcher's signature.
template <auto launch>
void run_forward(const AttentionArgs& a, std::vector<Tensor>& outs) {
  std::vector<Tensor> keep;
  const auto c = make_call(a.q, a.k, a.options, keep);
  const Tensor q = a.q.contiguous(), k = a.k.contiguous(), v = a.v.contiguous();
  launch(a.device().index, a.dtype(), c, q.raw_data(), k.raw_data(), v.raw_data(), outs[0].raw_data(),
         outs[1].raw_data());
}
template <auto launch>
void run_backward(const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
  std::vector<Tensor> keep;
  const auto c = make_call(a.q, a.k, a.options, keep);
  const Tensor dout = a.dout.contiguous(), q = a.q.contiguous(), k = a.k.contiguous(), v = a.v.contiguous(),
               out = a.out.contiguous(), lse = a.lse.contiguous();
  launch(a.device().index, a.dtype(), c, dout.raw_data(), q.raw_data(), k.raw_data(), v.raw_data(),
         out.raw_data(), lse.raw_data(), outs[0].raw_data(), outs[1].raw_data(), outs[2].raw_data(),
         outs.size() > 3 ? outs[3].raw_data() : nullptr);
}

}  // namespace

void add_attention_cuda(select::Registry<AttentionArgs>& r) {
  r.add({"cuda.flash_simt", attention_requirements<AttentionArgs>(),
         run_forward<cuda_kernels::attention_forward>});
  r.add({"cuda.flash_mma", mma_requirements<AttentionArgs>(),
         run_forward<cuda_kernels::attention_forward_mma>});
}

void add_attention_backward_cuda(select::Registry<AttentionBackwardArgs>& r) {
  r.add({"cuda.flash_simt", attention_requirements<AttentionBackwardArgs>(),
         run_backward<cuda_kernels::attention_backward>});
  r.add({"cuda.flash_mma", mma_requirements<AttentionBackwardArgs>(),
         run_backward<cuda_kernels::attention_backward_mma>});
}

void add_attention_jvp_cuda(select::Registry<AttentionJvpArgs>& r) {
  r.add({"cuda.flash_simt", attention_requirements<AttentionJvpArgs>(),
         [](const AttentionJvpArgs& a, std::vector<Tensor>& outs) {
           std::vector<Tensor> keep;
           const auto c = make_call(a.q, a.k, a.options, keep);
           const Tensor q = a.q.contiguous(), k = a.k.contiguous(), v = a.v.contiguous(),
                        tq = a.tq.contiguous(), tk = a.tk.contiguous(), tv = a.tv.contiguous(),
                        lse = a.lse.contiguous();
           const Tensor t_sinks = a.t_sinks.defined() ? a.t_sinks.contiguous() : Tensor();
           cuda_kernels::attention_jvp(a.device().index, a.dtype(), c, q.raw_data(), k.raw_data(),
                                       v.raw_data(), tq.raw_data(), tk.raw_data(), tv.raw_data(),
                                       data_or_null(t_sinks), lse.raw_data(), outs[0].raw_data(),
                                       outs[1].raw_data());
         }});
}

}  // namespace dew::ops
