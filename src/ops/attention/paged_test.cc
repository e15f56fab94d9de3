// paged_attention beyond OpSuite: a row's result does not depend on its batch, and bad tables are refused.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

using testing::error_of;

struct Pool {
  Tensor k, v;
};

Pool random_pool(int64_t blocks, int64_t block_size, int64_t Hkv, int64_t D, DType t) {
  Pool p{Tensor::empty({blocks, Hkv, block_size, D}, t), Tensor::empty({blocks, Hkv, block_size, D}, t)};
  fill_normal(p.k, {.seed = 11}, 0, 1);
  fill_normal(p.v, {.seed = 12}, 0, 1);
  return p;
}

// NOTE [paged partitions]: the same query and keys give the same bits alone or beside other sequences
// (the batch-invariant serving mode rests on it), at every length, one partition or several.
TEST(PagedAttention, ARowGetsTheSameBitsAloneAndInABatch) {
  for (DType t : {DType::f32, DType::bf16}) {
    const int64_t H = 4, Hkv = 2, D = 32, bs = 16;
    Pool pool = random_pool(64, bs, Hkv, D, t);
    Tensor q = Tensor::empty({3, H, D}, t);
    fill_normal(q, {.seed = 13}, 0, 1);
    // sequence 1 (700 keys: three partitions) shares no block with the others
    Tensor tables = Tensor::full({3, 44}, 0, DType::i64);
    for (int64_t b = 0; b < 44; ++b) tables.data<int64_t>()[44 + b] = 20 + b % 44;
    for (int64_t b = 0; b < 3; ++b) tables.data<int64_t>()[b] = b, tables.data<int64_t>()[88 + b] = 5 + b;
    Tensor lengths = Tensor::from_values({40, 700, 33}, {3}, DType::i64);
    const AttentionResult batch = paged_attention(q, pool.k, pool.v, tables, lengths);
    const AttentionResult alone =
        paged_attention(q.slice(0, 1, 2).contiguous(), pool.k, pool.v, tables.slice(0, 1, 2).contiguous(),
                        lengths.slice(0, 1, 2).contiguous());
    EXPECT_EQ(batch.out.slice(0, 1, 2).to_f64_vector(), alone.out.to_f64_vector()) << dtype_name(t);
    EXPECT_EQ(batch.lse.slice(0, 1, 2).to_f64_vector(), alone.lse.to_f64_vector()) << dtype_name(t);
  }
}

TEST(PagedAttention, RefusesTablesThatNameNoBlockAndEmptySequences) {
  Pool pool = random_pool(4, 8, 1, 16, DType::f32);
  Tensor q = Tensor::full({1, 2, 16}, 0.5, DType::f32);
  Tensor tables = Tensor::from_values({0, 9}, {1, 2}, DType::i64);
  EXPECT_NE(error_of([&] {
              paged_attention(q, pool.k, pool.v, tables, Tensor::from_values({12}, {1}, DType::i64));
            }).find("sequence 0's block 1 is 9; expected a block of the cache, 0 to 3"),
            std::string::npos);
  // Only the blocks the length covers are read: block 1 is past 8 keys.
  EXPECT_EQ(error_of([&] {
              paged_attention(q, pool.k, pool.v, tables, Tensor::from_values({8}, {1}, DType::i64));
            }),
            "");
  EXPECT_NE(error_of([&] {
              paged_attention(q, pool.k, pool.v, tables, Tensor::from_values({0}, {1}, DType::i64));
            }).find("sequence 0 has length 0; expected 1 to 16"),
            std::string::npos);
  AttentionOptions segments;
  segments.q_segments = Tensor::full({1, 1}, 1, DType::i64);
  segments.k_segments = segments.q_segments;
  EXPECT_NE(error_of([&] {
              paged_attention(q, pool.k, pool.v, tables, Tensor::from_values({8}, {1}, DType::i64), segments);
            }).find("segment ids given"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
