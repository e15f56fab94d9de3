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

// One call of a primitive: its engine and stream, its inputs and output in the layouts it wants
// (reordered from Dew's plain ones where they differ) and the buffers that must outlive it.
struct OneDnnCall {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::unordered_map<int, memory> io;

  memory buffer(const memory::desc& md) {
    buffers_.push_back(Tensor::empty({std::max<int64_t>(1, int64_t(md.get_size()))}, DType::u8));
    return memory(md, engine, buffers_.back().raw_data());
  }
  // `t`, in the layout `plain`, as argument `arg` in the layout `want`.
  void input(int arg, const memory::desc& plain, const memory::desc& want, const Tensor& t) {
    buffers_.push_back(t);  // a contiguous copy made for the call lives as long as the call
    memory user(plain, engine, t.raw_data());
    if (want == plain) {
      io[arg] = user;
      return;
    }
    memory m = buffer(want);
    dnnl::reorder(user, m).execute(stream, user, m);
    io[arg] = m;
  }
  // The output argument `arg`, written in `want` and left in `out` in the layout `plain` by run().
  void output(int arg, const memory::desc& plain, const memory::desc& want, Tensor& out) {
    plain_out_ = memory(plain, engine, out.raw_data());
    result_ = want == plain ? plain_out_ : buffer(want);
    io[arg] = result_;
  }
  void run(const dnnl::primitive& prim, const memory::desc& scratchpad) {
    io[DNNL_ARG_SCRATCHPAD] = buffer(scratchpad);
    prim.execute(stream, io);
    if (result_.get_data_handle() != plain_out_.get_data_handle())
      dnnl::reorder(result_, plain_out_).execute(stream, result_, plain_out_);
    stream.wait();
  }

 private:
  std::vector<Tensor> buffers_;  // the call's inputs and oneDNN-layout buffers
  memory plain_out_, result_;
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

// Backward data and backward weights take the same descriptor arguments, and the forward's as a hint.
template <class Primitive>
typename Primitive::primitive_desc backward_pd(const PlainDescs& d, const dnnl::engine& engine,
                                               const dnnl::convolution_forward::primitive_desc& forward) {
  return {typename Primitive::desc(dnnl::algorithm::convolution_direct, any_like(d.src), any_like(d.weights),
                                   any_like(d.dst), d.strides, d.dilates, d.padding, d.padding),
          user_scratchpad(), engine, forward};
}

void conv2d_onednn(const Conv2dArgs& a, Tensor& out) {
  const Conv2dGeometry g = conv2d_geometry(a);
  const memory::data_type type = a.dtype() == DType::f32 ? memory::data_type::f32 : memory::data_type::bf16;
  const PlainDescs d = plain_descs(g, type);
  OneDnnCall call;
  const dnnl::convolution_forward::primitive_desc fwd = forward_pd(d, a.bias.defined(), call.engine);
  switch (a.pass) {
    case ConvPass::forward:
      call.input(DNNL_ARG_SRC, d.src, fwd.src_desc(), a.x.contiguous());
      call.input(DNNL_ARG_WEIGHTS, d.weights, fwd.weights_desc(), a.weight.contiguous());
      if (a.bias.defined()) call.input(DNNL_ARG_BIAS, d.bias, d.bias, a.bias.contiguous());
      call.output(DNNL_ARG_DST, d.dst, fwd.dst_desc(), out);
      return call.run(dnnl::convolution_forward(fwd), fwd.scratchpad_desc());
    case ConvPass::input_grad: {
      const auto pd = backward_pd<dnnl::convolution_backward_data>(d, call.engine, fwd);
      call.input(DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), a.dy.contiguous());
      call.input(DNNL_ARG_WEIGHTS, d.weights, pd.weights_desc(), a.weight.contiguous());
      call.output(DNNL_ARG_DIFF_SRC, d.src, pd.diff_src_desc(), out);
      return call.run(dnnl::convolution_backward_data(pd), pd.scratchpad_desc());
    }
    case ConvPass::weight_grad: {
      const auto pd = backward_pd<dnnl::convolution_backward_weights>(d, call.engine, fwd);
      call.input(DNNL_ARG_SRC, d.src, pd.src_desc(), a.x.contiguous());
      call.input(DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), a.dy.contiguous());
      call.output(DNNL_ARG_DIFF_WEIGHTS, d.weights, pd.diff_weights_desc(), out);
      return call.run(dnnl::convolution_backward_weights(pd), pd.scratchpad_desc());
    }
  }
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
