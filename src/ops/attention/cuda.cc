// attention, attention_backward and attention_jvp on CUDA: registration of cuda.flash_simt (kernels in
// cuda_simt.cu). Head dims up to 32 lanes x kMaxDimsPerLane.
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

}  // namespace

void add_attention_cuda(select::Registry<AttentionArgs>& r) {
  r.add({"cuda.flash_simt", attention_requirements<AttentionArgs>(),
         [](const AttentionArgs& a, std::vector<Tensor>& outs) {
           std::vector<Tensor> keep;
           const auto c = make_call(a.q, a.k, a.options, keep);
           const Tensor q = a.q.contiguous(), k = a.k.contiguous(), v = a.v.contiguous();
           cuda_kernels::attention_forward(a.device().index, a.dtype(), c, q.raw_data(), k.raw_data(),
                                           v.raw_data(), outs[0].raw_data(), outs[1].raw_data());
         }});
}

void add_attention_backward_cuda(select::Registry<AttentionBackwardArgs>& r) {
  r.add({"cuda.flash_simt", attention_requirements<AttentionBackwardArgs>(),
         [](const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
           std::vector<Tensor> keep;
           const auto c = make_call(a.q, a.k, a.options, keep);
           const Tensor dout = a.dout.contiguous(), q = a.q.contiguous(), k = a.k.contiguous(),
                        v = a.v.contiguous(), out = a.out.contiguous(), lse = a.lse.contiguous();
           cuda_kernels::attention_backward(a.device().index, a.dtype(), c, dout.raw_data(), q.raw_data(),
                                            k.raw_data(), v.raw_data(), out.raw_data(), lse.raw_data(),
                                            outs[0].raw_data(), outs[1].raw_data(), outs[2].raw_data(),
                                            outs.size() > 3 ? outs[3].raw_data() : nullptr);
         }});
}

void add_attention_jvp_cuda(select::Registry<AttentionJvpArgs>& r) {
  r.add({"cuda.flash_simt", attention_requirements<AttentionJvpArgs>(),
         [](const AttentionJvpArgs& a, std::vector<Tensor>& outs) {
           std::vector<Tensor> keep;
           const auto c = make_call(a.q, a.k, a.options, keep);
           const Tensor q = a.q.contiguous(), k = a.k.contiguous(), v = a.v.contiguous(),
                        tq = a.tq.contiguous(), tk = a.tk.contiguous(), tv = a.tv.contiguous(),
                        out = a.out.contiguous(), lse = a.lse.contiguous();
           const Tensor t_sinks = a.t_sinks.defined() ? a.t_sinks.contiguous() : Tensor();
           cuda_kernels::attention_jvp(a.device().index, a.dtype(), c, q.raw_data(), k.raw_data(),
                                       v.raw_data(), tq.raw_data(), tk.raw_data(), tv.raw_data(),
                                       data_or_null(t_sinks), out.raw_data(), lse.raw_data(),
                                       outs[0].raw_data(), outs[1].raw_data());
         }});
}

}  // namespace dew::ops
