// Views share storage and address the right elements; bad geometry is refused with a message.
#include <dew/runtime.h>
#include <dew/tensor.h>
#include <gtest/gtest.h>

#include "error_of.h"

#include <numeric>

namespace dew {
namespace {

Tensor iota(const Shape& shape) {
  std::vector<double> v(size_t(numel_of(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::from_values(v, shape, DType::f32);
}

using testing::error_of;

TEST(Tensor, SliceSelectAndStepAddressTheRightElements) {
  Tensor t = iota({4, 5});
  EXPECT_EQ(t.slice(1, 1, 4).to_f64_vector(),
            (std::vector<double>{1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18}));
  EXPECT_EQ(t.slice(0, 0, 4, 2).select(1, -1).to_f64_vector(), (std::vector<double>{4, 14}));
  EXPECT_TRUE(t.slice(0, 1, 3).shares_storage_with(t));
  EXPECT_FALSE(t.slice(1, 1, 4).is_contiguous());
}

// A strided tensor reshapes into a view wherever strides can say the new shape (torch's view rules):
// an axis of a column range splits; axes that are not one run do not merge.
TEST(Tensor, ReshapeViewsStridedDataWhereStridesCanSayIt) {
  const Tensor t = iota({3, 8});
  const Tensor columns = t.slice(1, 2, 6);  // (3,4), rows 8 apart
  const Tensor heads = columns.reshape({3, 2, 2});
  EXPECT_TRUE(heads.shares_storage_with(t));
  EXPECT_EQ(heads.strides(), (Strides{8, 2, 1}));
  EXPECT_EQ(heads.to_f64_vector(), columns.contiguous().to_f64_vector());
  EXPECT_EQ(columns.reshape({1, 3, 4, 1}).to_f64_vector(), columns.contiguous().to_f64_vector());
  EXPECT_EQ(t.reshape({3, 2, 4}).slice(1, 1, 2).reshape({3, 4}).to_f64_vector(),
            t.slice(1, 4, 8).contiguous().to_f64_vector());
  EXPECT_NE(error_of([&] { columns.reshape({12}); }).find("cannot be viewed as [12]"), std::string::npos);
  EXPECT_NE(error_of([&] { columns.reshape({2, 6}); }).find("call contiguous() first"), std::string::npos);
}

// Rows packed one after another join into one view of them in order; anything else is not joined.
TEST(Tensor, JoinedViewCoversAdjacentRowBlocksOnly) {
  const Tensor t = iota({6, 2});
  const Tensor a = t.slice(0, 0, 1), b = t.slice(0, 1, 4), c = t.slice(0, 4, 6);
  const Tensor abc = Tensor::joined_view({a, b, c});
  ASSERT_TRUE(abc.defined());
  EXPECT_EQ(abc.shape(), (Shape{6, 2}));
  EXPECT_EQ(abc.to_f64_vector(), t.to_f64_vector());
  EXPECT_TRUE(abc.shares_storage_with(t));
  EXPECT_EQ(Tensor::joined_view({b, c}).to_f64_vector(), t.slice(0, 1, 6).to_f64_vector());
  EXPECT_FALSE(Tensor::joined_view({a, c}).defined());                                // a gap
  EXPECT_FALSE(Tensor::joined_view({b, a}).defined());                                // out of order
  EXPECT_FALSE(Tensor::joined_view({a, iota({1, 2})}).defined());                     // another storage
  EXPECT_FALSE(Tensor::joined_view({t.slice(1, 0, 1), t.slice(1, 1, 2)}).defined());  // columns
  EXPECT_FALSE(Tensor::joined_view({}).defined());
  Tensor grad_leaf = iota({2, 2});
  grad_leaf.requires_grad_(true);
  const Tensor plain = grad_leaf.detach();  // the same storage, outside every graph
  ASSERT_TRUE(plain.shares_storage_with(grad_leaf));
  EXPECT_TRUE(Tensor::joined_view({plain.slice(0, 0, 1), plain.slice(0, 1, 2)}).defined());
  EXPECT_FALSE(Tensor::joined_view({plain.slice(0, 0, 1), grad_leaf.slice(0, 1, 2)}).defined());
}

TEST(Tensor, WritesThroughAViewAreSeenByTheBase) {
  Tensor t = Tensor::zeros({3, 3}, DType::f32);
  Tensor col = t.transpose(0, 1).select(0, 2);  // column 2
  float* base = t.data<float>();
  for (int64_t i = 0; i < 3; ++i) base[col.offset() + i * col.strides()[0]] = float(i + 1);
  EXPECT_EQ(t.to_f64_vector(), (std::vector<double>{0, 0, 1, 0, 0, 2, 0, 0, 3}));
}

TEST(Tensor, PermuteTransposeAndContiguous) {
  Tensor t = iota({2, 3, 4});
  Tensor p = t.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  Tensor c = p.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage_with(t));
  EXPECT_EQ(c.to_f64_vector()[1], 4.0);   // p[0][0][1] = t[0][1][0]
  EXPECT_EQ(c.to_f64_vector()[3], 12.0);  // p[0][1][0] = t[1][0][0]
  EXPECT_EQ(t.transpose(-1, 0).shape(), (Shape{4, 3, 2}));
}

// Copies of at least 256 KB run in chunks of rows over the threads (NOTE [copies over the threads]): a
// permuted view, a stepped slice and a clone of 2.8 MB, each element checked by index arithmetic, at one
// thread and at three (more chunks than this machine's cores).
TEST(Tensor, ContiguousCopiesOfLargeViewsAddressEveryElementAtAnyThreadCount) {
  const int threads = num_threads();
  const Tensor t = iota({6, 70, 50, 33});  // t[b][d][a][c] = ((b 70 + d) 50 + a) 33 + c
  for (int n : {1, 3}) {
    set_num_threads(n);
    const std::vector<double> p = t.permute({2, 0, 3, 1}).contiguous().to_f64_vector();  // (50, 6, 33, 70)
    int64_t i = 0, wrong = 0;
    for (int64_t a = 0; a < 50; ++a)
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t c = 0; c < 33; ++c)
          for (int64_t d = 0; d < 70; ++d)
            wrong += p[size_t(i++)] != double(((b * 70 + d) * 50 + a) * 33 + c);
    EXPECT_EQ(wrong, 0) << "permuted copy at " << n << " threads";
    const std::vector<double> s = t.slice(1, 1, 70, 3).contiguous().to_f64_vector();  // (6, 23, 50, 33)
    i = 0, wrong = 0;
    for (int64_t b = 0; b < 6; ++b)
      for (int64_t d = 1; d < 70; d += 3)
        for (int64_t a = 0; a < 50; ++a)
          for (int64_t c = 0; c < 33; ++c)
            wrong += s[size_t(i++)] != double(((b * 70 + d) * 50 + a) * 33 + c);
    EXPECT_EQ(wrong, 0) << "stepped slice at " << n << " threads";
    EXPECT_EQ(t.clone().to_f64_vector(), t.to_f64_vector()) << "clone at " << n << " threads";
  }
  set_num_threads(threads);
}

TEST(Tensor, ReshapeInfersOneDimAndRefusesStridedData) {
  Tensor t = iota({2, 6});
  EXPECT_EQ(t.reshape({3, -1}).shape(), (Shape{3, 4}));
  EXPECT_TRUE(t.reshape({12}).shares_storage_with(t));
  EXPECT_NE(error_of([&] { t.transpose(0, 1).reshape({12}); }).find("cannot be viewed"), std::string::npos);
  EXPECT_NE(error_of([&] { t.reshape({5, -1}); }).find("cannot infer"), std::string::npos);
  EXPECT_NE(error_of([&] { t.reshape({5, 2}); }).find("expected a shape of 12 elements"), std::string::npos);
}

TEST(Tensor, ExpandBroadcastsWithZeroStrides) {
  Tensor row = iota({1, 3});
  Tensor e = row.expand({2, 4, 3});
  EXPECT_EQ(e.strides()[0], 0);
  EXPECT_EQ(e.strides()[1], 0);
  EXPECT_EQ(e.contiguous().to_f64_vector()[10], 1.0);
  EXPECT_NE(error_of([&] { iota({2, 3}).expand({4, 3}); }).find("expected 1 or 4"), std::string::npos);
}

TEST(Tensor, SqueezeAndUnsqueeze) {
  Tensor t = iota({3, 1, 2});
  EXPECT_EQ(t.squeeze(1).shape(), (Shape{3, 2}));
  EXPECT_EQ(t.unsqueeze(-1).shape(), (Shape{3, 1, 2, 1}));
  EXPECT_EQ(t.unsqueeze(0).shape(), (Shape{1, 3, 1, 2}));
  EXPECT_NE(error_of([&] { t.squeeze(0); }).find("expected 1"), std::string::npos);
}

TEST(Tensor, BroadcastShapesFollowNumpy) {
  EXPECT_EQ(broadcast_shapes({3, 1, 5}, {4, 1}, "t"), (Shape{3, 4, 5}));
  EXPECT_NE(error_of([] {
              broadcast_shapes({3, 2}, {4, 2}, "add");
            }).find("[add] shapes [3,2] and [4,2]"),
            std::string::npos);
}

TEST(Tensor, AxisAndDeviceErrorsNameWhatWouldBeRight) {
  EXPECT_NE(error_of([] { iota({2, 2}).slice(2, 0, 1); }).find("expected -2 <= axis < 2"), std::string::npos);
  EXPECT_NE(error_of([] { Device::parse("gpu0"); }).find("expected 'cpu', 'cuda' or 'cuda:N'"),
            std::string::npos);
  EXPECT_EQ(Device::parse("cuda:1").str(), "cuda:1");
  // A CUDA tensor without a device: tests/core/device_test.cc.
}

// NOTE [released storage]: the bytes leave the allocator's count; every tensor sharing the storage
// sees the refilled bytes afterwards, and none can be read in between.
TEST(Tensor, ReleasedStorageIsRefusedUntilAcquiredAgainAndSharersSeeTheRefill) {
  const Tensor t = Tensor::full({256, 256}, 1.0, DType::f32);
  const Tensor view = t.reshape({65536});  // as the tape keeps a saved parameter
  const int64_t in_use = cpu_memory_stats().bytes_in_use;
  t.release_storage();
  EXPECT_TRUE(view.storage_released());
  EXPECT_EQ(cpu_memory_stats().bytes_in_use, in_use - 256 * 256 * 4);
  EXPECT_NE(error_of([&] { view.to_f64_vector(); }).find("bytes are released"), std::string::npos);
  t.release_storage();  // idempotent
  t.acquire_storage();
  EXPECT_EQ(cpu_memory_stats().bytes_in_use, in_use);
  Tensor(t).copy_from(Tensor::full({256, 256}, 2.0, DType::f32));
  EXPECT_EQ(view.to_f64_vector()[65535], 2.0);
  EXPECT_NE(error_of([&] { t.slice(0, 1, 2).release_storage(); }).find("at its storage's start"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
