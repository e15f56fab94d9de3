// The KV pool's storage: a cache of a few MiB a layer lies in 2 MiB pages once written (observed through
// /proc/self/smaps; skipped where transparent huge pages are off).
#include <dew/models.h>
#include <gtest/gtest.h>

#include <string>

#include "huge_pages.h"
#include "serve/kv_block_pool.h"

namespace dew {
namespace {

TEST(KvBlockPool, ACacheOfAFewMiBALayerLiesInHugePages) {
  if (const std::string why = testing::why_no_huge_pages(); !why.empty()) GTEST_SKIP() << why;
  const ModelConfig c = parse_model_config(
      R"({"model_type":"llama","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"max_position_embeddings":256})",
      "llama config");
  // 640 blocks of 16 tokens: 1.25 MiB of keys and as much of values a layer, 5 MiB in all.
  serve::KvBlockPool pool(c, DType::f32, 640, 16);
  for (int64_t layer = 0; layer < 2; ++layer) {
    Tensor(pool.keys(layer)).fill(1.0);
    Tensor(pool.values(layer)).fill(2.0);
  }
  EXPECT_GE(testing::anon_huge_kb_at(pool.keys(0).raw_data()), 2048);
  EXPECT_GE(testing::anon_huge_kb_at(pool.values(1).raw_data()), 2048);
  EXPECT_EQ(pool.keys(1).to_f64_vector()[0], 1.0);  // the layers' views do not overlap
  EXPECT_EQ(pool.values(0).to_f64_vector().back(), 2.0);
}

}  // namespace
}  // namespace dew
