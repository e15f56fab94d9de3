// rope_tables: the rows a call asks for, and refusals.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

TEST(RopeTables, RowsFromFirstPositionEqualTheFullTables) {
  const RopeTables full = rope_tables(10000.0, 8, 40, DType::f32);
  const RopeTables tail = rope_tables(10000.0, 8, 40, DType::f32, {}, 33);
  EXPECT_EQ(tail.cos.slice(0, 33, 40).contiguous().to_f64_vector(),
            full.cos.slice(0, 33, 40).contiguous().to_f64_vector());
  EXPECT_EQ(tail.sin.slice(0, 33, 40).contiguous().to_f64_vector(),
            full.sin.slice(0, 33, 40).contiguous().to_f64_vector());
  // One position rotated with either table gives the same values.
  Tensor x = Tensor::empty({1, 1, 2, 8}, DType::f32);
  fill_normal(x, {5, 1, 0}, 0.0, 1.0);
  const Tensor at = Tensor::from_values({37}, {1, 1}, DType::i64);
  EXPECT_EQ(rope(x, at, tail).to_f64_vector(), rope(x, at, full).to_f64_vector());
  EXPECT_NE(
      testing::error_of([] { rope_tables(10000.0, 8, 40, DType::f32, {}, 40); }).find("first_position 40"),
      std::string::npos);
}

}  // namespace
}  // namespace dew
