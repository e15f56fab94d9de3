// paged_attention: validation, output rule, registry, cases, the float64 reference and the public
// function. The reference is attention's own: each sequence's keys gathered through its block table
// into a dense row, then Attention::reference — the paged op is that, read in place.
#include "ops/attention/attention.h"

#include <cmath>

namespace dew::ops {
namespace {

DType stat_dtype(DType q) {
  return q == DType::f64 ? DType::f64 : DType::f32;
}

void validate(const PagedAttentionArgs& a) {
  const Tensor &q = a.q, &k = a.k_cache, &v = a.v_cache;
  const AttentionOptions& o = a.options;
  DEW_REQUIRE(
      is_floating(q.dtype()) && q.dim() == 3 && q.is_contiguous(),
      "[paged_attention] q is {}; expected a contiguous floating (N,H,D) tensor, one query per sequence",
      q.describe());
  DEW_REQUIRE(k.dim() == 4 && k.dtype() == q.dtype() && k.size(3) == q.size(2) && k.is_contiguous(),
              "[paged_attention] k_cache is {}; expected a contiguous {}(blocks,Hkv,block_size,D={})",
              k.describe(), dtype_name(q.dtype()), q.size(2));
  DEW_REQUIRE(v.shape() == k.shape() && v.dtype() == k.dtype() && v.is_contiguous(),
              "[paged_attention] v_cache is {}; expected k_cache's shape and dtype {}", v.describe(),
              k.describe());
  DEW_REQUIRE(
      k.size(1) > 0 && q.size(1) % k.size(1) == 0,
      "[paged_attention] q has {} heads and the cache {}; expected the KV heads to divide the query heads",
      q.size(1), k.size(1));
  DEW_REQUIRE(a.block_tables.dtype() == DType::i64 && a.block_tables.dim() == 2 &&
                  a.block_tables.size(0) == q.size(0) && a.block_tables.is_contiguous(),
              "[paged_attention] block_tables is {}; expected contiguous i64[{},max_blocks]",
              a.block_tables.describe(), q.size(0));
  DEW_REQUIRE(
      a.lengths.dtype() == DType::i64 && a.lengths.shape() == Shape({q.size(0)}) && a.lengths.is_contiguous(),
      "[paged_attention] lengths is {}; expected i64[{}], the keys of each sequence", a.lengths.describe(),
      q.size(0));
  DEW_REQUIRE(
      o.window >= 0 && o.softcap >= 0 && o.scale >= 0 && std::isfinite(o.scale) && std::isfinite(o.softcap),
      "[paged_attention] window {}, softcap {}, scale {}; expected each >= 0 and finite", o.window, o.softcap,
      o.scale);
  DEW_REQUIRE(!o.q_segments.defined() && !o.k_segments.defined(),
              "[paged_attention] segment ids given; a paged sequence is one document (expected none)");
  if (o.sinks.defined())
    DEW_REQUIRE(o.sinks.shape() == Shape({q.size(1)}) && o.sinks.dtype() == stat_dtype(q.dtype()),
                "[paged_attention] sinks is {}; expected {}[{}], one logit per query head",
                o.sinks.describe(), dtype_name(stat_dtype(q.dtype())), q.size(1));
  // The tables and lengths are read by the kernels: every block they name must exist.
  if (q.device().kind != Device::Kind::cpu) return;
  const int64_t blocks = k.size(0), block_size = k.size(2), M = a.block_tables.size(1);
  const int64_t* table = a.block_tables.data<int64_t>();
  const int64_t* lengths = a.lengths.data<int64_t>();
  for (int64_t n = 0; n < q.size(0); ++n) {
    DEW_REQUIRE(
        lengths[n] >= 1 && lengths[n] <= M * block_size,
        "[paged_attention] sequence {} has length {}; expected 1 to {} (max_blocks {} x block_size {})", n,
        lengths[n], M * block_size, M, block_size);
    for (int64_t b = 0; b < (lengths[n] + block_size - 1) / block_size; ++b)
      DEW_REQUIRE(table[n * M + b] >= 0 && table[n * M + b] < blocks,
                  "[paged_attention] sequence {}'s block {} is {}; expected a block of the cache, 0 to {}", n,
                  b, table[n * M + b], blocks - 1);
  }
}

}  // namespace

std::vector<const Tensor*> PagedAttentionArgs::inputs() const {
  std::vector<const Tensor*> v{&q, &k_cache, &v_cache, &block_tables, &lengths};
  if (options.sinks.defined()) v.push_back(&options.sinks);
  return v;
}
std::vector<Tensor*> PagedAttentionArgs::mutable_inputs() {
  std::vector<Tensor*> v{&q, &k_cache, &v_cache};
  if (options.sinks.defined()) v.push_back(&options.sinks);
  return v;
}

std::string PagedAttention::case_label(const Args& a) {
  std::string s(dtype_name(a.q.dtype()));
  if (a.options.window) s += " window";
  if (a.options.softcap > 0) s += " softcap";
  if (a.options.sinks.defined()) s += " sinks";
  return s;
}

std::vector<OutputSpec> PagedAttention::infer(const Args& a) {
  require_same_device("paged_attention", a.inputs());
  validate(a);
  return {{a.q.shape(), a.dtype()}, {{a.q.size(0), a.q.size(1)}, stat_dtype(a.dtype())}};
}

double PagedAttention::flops(const Args& a) {
  double keys = 0;
  for (double len : a.lengths.to_f64_vector())
    keys += len - double(paged_first_key(int64_t(len), a.options.window));
  return 4.0 * double(a.q.size(1) * a.q.size(2)) * keys;
}

std::vector<Truth> PagedAttention::reference(const Args& args) {
  const int64_t N = args.q.size(0), H = args.q.size(1), D = args.q.size(2), Hkv = args.k_cache.size(1),
                block_size = args.k_cache.size(2), M = args.block_tables.size(1);
  const std::vector<double> k = args.k_cache.to_f64_vector(), v = args.v_cache.to_f64_vector();
  const std::vector<double> q = args.q.to_f64_vector();
  const int64_t* table = args.block_tables.data<int64_t>();
  std::vector<double> out, mout, lse, mlse;
  int64_t steps = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t S = args.lengths.data<int64_t>()[n];
    std::vector<double> ks(size_t(S * Hkv * D)), vs(ks.size());
    for (int64_t j = 0; j < S; ++j)  // the dense row of sequence n's keys (S,Hkv,D)
      for (int64_t h = 0; h < Hkv; ++h) {
        const long from = long(paged_key_offset(table + n * M, j, h, Hkv, block_size, D));
        std::copy_n(k.begin() + from, D, ks.begin() + (j * Hkv + h) * D);
        std::copy_n(v.begin() + from, D, vs.begin() + (j * Hkv + h) * D);
      }
    AttentionOptions o = args.options;
    o.causal = true;
    const std::vector<double> qn(q.begin() + n * H * D, q.begin() + (n + 1) * H * D);
    const std::vector<Truth> t =
        Attention::reference(AttentionArgs{Tensor::from_values(qn, {1, 1, H, D}, DType::f64),
                                           Tensor::from_values(ks, {1, S, Hkv, D}, DType::f64),
                                           Tensor::from_values(vs, {1, S, Hkv, D}, DType::f64), o});
    for (auto [from, to] : {std::pair{&t[0].value, &out},
                            {&t[0].magnitude, &mout},
                            {&t[1].value, &lse},
                            {&t[1].magnitude, &mlse}}) {
      const std::vector<double> x = from->to_f64_vector();
      to->insert(to->end(), x.begin(), x.end());
    }
    steps = std::max(steps, t[0].steps);
  }
  const Shape lse_shape{N, H};
  return {{Tensor::from_values(out, args.q.shape(), DType::f64),
           Tensor::from_values(mout, args.q.shape(), DType::f64), steps},
          {Tensor::from_values(lse, lse_shape, DType::f64), Tensor::from_values(mlse, lse_shape, DType::f64),
           steps}};
}

const select::Registry<PagedAttentionArgs>& PagedAttention::registry() {
  static const select::Registry<PagedAttentionArgs> r = [] {
    select::Registry<PagedAttentionArgs> reg;
    avx512::add_paged_attention_cpu(reg);
    avx2::add_paged_attention_cpu(reg);
    add_paged_attention_portable(reg);
    return reg;
  }();
  return r;
}

namespace {

struct PagedCase {
  std::string name;
  std::vector<std::string> tags;
  int64_t H, Hkv, D, block_size, blocks;
  std::vector<int64_t> lengths;
  AttentionOptions options;
  bool sinks;
};

// The pool's blocks handed out in a scattered order (a stride coprime with the pool's size), so a
// kernel that read blocks in table order rather than through the table would read the wrong keys.
PagedAttentionArgs make_paged(const PagedCase& c, DType t, RandomKey key) {
  const int64_t N = int64_t(c.lengths.size());
  int64_t M = 0;
  for (int64_t len : c.lengths) M = std::max(M, (len + c.block_size - 1) / c.block_size);
  PagedAttentionArgs a{random_input({N, c.H, c.D}, t, key),
                       random_input({c.blocks, c.Hkv, c.block_size, c.D}, t, {key.seed, key.stream + 1}),
                       random_input({c.blocks, c.Hkv, c.block_size, c.D}, t, {key.seed, key.stream + 2}),
                       Tensor::full({N, M}, -1, DType::i64),
                       Tensor::empty({N}, DType::i64),
                       c.options};
  int64_t next = int64_t(key.seed % uint64_t(c.blocks));
  for (int64_t n = 0; n < N; ++n) {
    a.lengths.data<int64_t>()[n] = c.lengths[size_t(n)];
    for (int64_t b = 0; b < (c.lengths[size_t(n)] + c.block_size - 1) / c.block_size; ++b) {
      a.block_tables.data<int64_t>()[n * M + b] = next;
      next = (next + 7) % c.blocks;
    }
  }
  if (c.sinks) a.options.sinks = random_input({c.H}, stat_dtype(t), {key.seed, key.stream + 3});
  return a;
}

}  // namespace

std::vector<Case<PagedAttentionArgs>> PagedAttention::cases(std::string_view) {
  AttentionOptions plain, window_cap, scaled;
  window_cap.window = 40;
  window_cap.softcap = 5;
  scaled.scale = 0.3;
  // blocks: at least the sum of the sequences' blocks, coprime with 7.
  const std::vector<PagedCase> table = {
      // lengths across one block, one partition and past it (two partitions with a tail)
      {"gqa_partitions", {"ci"}, 4, 2, 16, 16, 36, {1, 37, 300}, scaled, false},
      {"window_softcap_sinks", {"ci", "edge"}, 6, 2, 8, 8, 100, {70, 600}, window_cap, true},
      {"one_kv_head_long", {"ci"}, 8, 1, 32, 32, 20, {530}, plain, false},
      // a head size of whole vectors and a tail on either tier; a key tile cut short by the length
      {"head_dim_with_tail", {"ci", "edge"}, 3, 3, 40, 8, 9, {21, 45}, plain, false},
      {"llama8b_decode_32", {"bench"}, 32, 8, 128, 16, 2053, std::vector<int64_t>(32, 1024), plain, false},
      {"gpt2_decode_8", {"bench"}, 12, 12, 64, 16, 257, std::vector<int64_t>(8, 512), plain, false},
      // the default model's decode at 32 requests midway through 64 new tokens after prompts of 16
      {"default_decode_32", {"bench"}, 6, 2, 64, 16, 101, std::vector<int64_t>(32, 48), plain, false}};
  std::vector<Case<PagedAttentionArgs>> out;
  for (const PagedCase& c : table) {
    std::vector<DType> dtypes = c.tags[0] == "bench"
                                    ? std::vector<DType>{DType::f32, DType::bf16}
                                    : std::vector<DType>{DType::f64, DType::f32, DType::bf16, DType::f16};
    out.push_back({c.name, c.tags, dtypes, [c](DType t, RandomKey k) { return make_paged(c, t, k); }});
  }
  return out;
}

}  // namespace dew::ops

namespace dew {

AttentionResult paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                const Tensor& block_tables, const Tensor& lengths,
                                const AttentionOptions& options) {
  auto outs = ops::run_op<ops::PagedAttention>(
      ops::PagedAttentionArgs{q, k_cache, v_cache, block_tables, lengths, options});
  return {outs[0], outs[1]};
}

}  // namespace dew
