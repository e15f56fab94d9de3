// conv2d through oneDNN's convolution primitives (forward, backward data, backward weights): f32, and
// bf16 where the CPU has native bf16 dot products (f32 accumulation, one rounding at the end). oneDNN
// picks its own blocked layouts (format any); Dew's (B,C,H,W) tensors are reordered into them and the
// result back, and its scratchpad comes from Dew's allocator. The choice over direct loops and over
// plain layouts is measured in docs/perf.md ("Convolutions").
#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

#include <dew/runtime.h>
#include "ops/conv2d/conv2d.h"

namespace dew::ops {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// One call's engine, stream and the buffers that must outlive its execution.
struct Session {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<Tensor> buffers;

  memory buffer(const memory::desc& md) {
    buffers.push_back(Tensor::empty({std::max<int64_t>(1, int64_t(md.get_size()))}, DType::u8));
    return memory(md, engine, buffers.back().raw_data());
  }
  // `plain` data as the primitive wants it: itself, or a reordered copy.
  memory input(const memory::desc& plain, const memory::desc& want, const Tensor& t) {
    memory user(plain, engine, t.raw_data());
    if (want == plain) return user;
    memory m = buffer(want);
    dnnl::reorder(user, m).execute(stream, user, m);
    return m;
  }
};

struct PlainDescs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, padding;
};

PlainDescs plain_descs(const Conv2dGeometry& g, memory::data_type type) {
  PlainDescs d;
  d.src = memory::desc({g.B, g.C, g.H, g.W}, type, Tag::nchw);
  d.weights = g.groups == 1 ? memory::desc({g.O, g.Cg, g.kh, g.kw}, type, Tag::oihw)
                            : memory::desc({g.groups, g.Og, g.Cg, g.kh, g.kw}, type, Tag::goihw);
  d.bias = memory::desc({g.O}, type, Tag::x);
  d.dst = memory::desc({g.B, g.O, g.OH, g.OW}, type, Tag::nchw);
  d.strides = {g.sh, g.sw};
  d.dilates = {g.dh - 1, g.dw - 1};  // oneDNN counts the gaps
  d.padding = {g.ph, g.pw};
  return d;
}

memory::desc any_like(const memory::desc& md) {
  return memory::desc(md.dims(), md.data_type(), Tag::any);
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_pd(const PlainDescs& d, bool bias,
                                                     const dnnl::engine& engine) {
  using F = dnnl::convolution_forward;
  const memory::desc src = any_like(d.src), weights = any_like(d.weights), dst = any_like(d.dst);
  const F::desc desc = bias ? F::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                      src, weights, d.bias, dst, d.strides, d.dilates, d.padding, d.padding)
                            : F::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                      src, weights, dst, d.strides, d.dilates, d.padding, d.padding);
  return F::primitive_desc(desc, user_scratchpad(), engine);
}

void conv2d_onednn(const Conv2dArgs& a, Tensor& out) {
  const Conv2dGeometry g = conv2d_geometry(a);
  const memory::data_type type = a.dtype() == DType::f32 ? memory::data_type::f32 : memory::data_type::bf16;
  const PlainDescs d = plain_descs(g, type);
  Session s;
  std::unordered_map<int, memory> io;
  memory result, plain_out;
  dnnl::primitive prim;
  memory::desc scratch_md;
  const dnnl::convolution_forward::primitive_desc fwd = forward_pd(d, a.bias.defined(), s.engine);
  switch (a.pass) {
    case ConvPass::forward: {
      io[DNNL_ARG_SRC] = s.input(d.src, fwd.src_desc(), a.x.contiguous());
      io[DNNL_ARG_WEIGHTS] = s.input(d.weights, fwd.weights_desc(), a.weight.contiguous());
      if (a.bias.defined()) io[DNNL_ARG_BIAS] = s.input(d.bias, d.bias, a.bias.contiguous());
      plain_out = memory(d.dst, s.engine, out.raw_data());
      result = fwd.dst_desc() == d.dst ? plain_out : s.buffer(fwd.dst_desc());
      io[DNNL_ARG_DST] = result;
      prim = dnnl::convolution_forward(fwd), scratch_md = fwd.scratchpad_desc();
      break;
    }
    case ConvPass::input_grad: {
      using B = dnnl::convolution_backward_data;
      const B::primitive_desc pd(
          B::desc(dnnl::algorithm::convolution_direct, any_like(d.src), any_like(d.weights), any_like(d.dst),
                  d.strides, d.dilates, d.padding, d.padding),
          user_scratchpad(), s.engine, fwd);
      io[DNNL_ARG_DIFF_DST] = s.input(d.dst, pd.diff_dst_desc(), a.dy.contiguous());
      io[DNNL_ARG_WEIGHTS] = s.input(d.weights, pd.weights_desc(), a.weight.contiguous());
      plain_out = memory(d.src, s.engine, out.raw_data());
      result = pd.diff_src_desc() == d.src ? plain_out : s.buffer(pd.diff_src_desc());
      io[DNNL_ARG_DIFF_SRC] = result;
      prim = B(pd), scratch_md = pd.scratchpad_desc();
      break;
    }
    case ConvPass::weight_grad: {
      using W = dnnl::convolution_backward_weights;
      const W::primitive_desc pd(
          W::desc(dnnl::algorithm::convolution_direct, any_like(d.src), any_like(d.weights), any_like(d.dst),
                  d.strides, d.dilates, d.padding, d.padding),
          user_scratchpad(), s.engine, fwd);
      io[DNNL_ARG_SRC] = s.input(d.src, pd.src_desc(), a.x.contiguous());
      io[DNNL_ARG_DIFF_DST] = s.input(d.dst, pd.diff_dst_desc(), a.dy.contiguous());
      plain_out = memory(d.weights, s.engine, out.raw_data());
      result = pd.diff_weights_desc() == d.weights ? plain_out : s.buffer(pd.diff_weights_desc());
      io[DNNL_ARG_DIFF_WEIGHTS] = result;
      prim = W(pd), scratch_md = pd.scratchpad_desc();
      break;
    }
  }
  io[DNNL_ARG_SCRATCHPAD] = s.buffer(scratch_md);
  prim.execute(s.stream, io);
  if (result.get_data_handle() != plain_out.get_data_handle())
    dnnl::reorder(result, plain_out).execute(s.stream, result, plain_out);
  s.stream.wait();
}

}  // namespace

void add_conv2d_onednn(select::Registry<Conv2dArgs>& r) {
  r.add({"cpu.onednn",
         {select::on_cpu<Conv2dArgs>(), select::dtype_in<Conv2dArgs>({DType::f32, DType::bf16}),
          select::requires_that<Conv2dArgs>(
              "bf16: cpu_has(avx512bf16)",
              [](const Conv2dArgs& a) { return a.dtype() != DType::bf16 || cpu_features().avx512bf16; },
              [](const Conv2dArgs&) { return std::string("this CPU lacks AVX512-BF16"); })},
         [](const Conv2dArgs& a, std::vector<Tensor>& outs) { conv2d_onednn(a, outs[0]); }});
}

}  // namespace dew::ops
