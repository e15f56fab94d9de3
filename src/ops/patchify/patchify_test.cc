// patchify's own tests beyond OpSuite: the token layout (patches row-major, values channel-major, so a
// patch embedding is a Conv2d weight flattened), unpatchify undoing it exactly, and refusals by name.
#include <dew/image_ops.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

using testing::error_of;

Tensor counting(const Shape& shape) {
  std::vector<double> v(size_t(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i);
  return Tensor::from_values(v, shape, DType::f32);
}

TEST(Patchify, TokensArePatchesRowMajorWithValuesChannelMajor) {
  const Tensor x = counting({2, 3, 4, 6});  // x[b,c,r,s] = ((b*3 + c)*4 + r)*6 + s
  const Tensor t = patchify(x, 2);
  ASSERT_EQ(t.shape(), Shape({2, 6, 12}));
  const std::vector<double> tv = t.to_f64_vector(), xv = x.to_f64_vector();
  // Token 4 of image 1 is the patch at patch-row 1, patch-column 1: pixels rows 2-3, columns 2-3.
  // Its value (c, i, j) = (2, 1, 0) sits at 2*4 + 1*2 + 0.
  EXPECT_EQ(tv[size_t((1 * 6 + 4) * 12 + 2 * 4 + 1 * 2 + 0)], xv[size_t(((1 * 3 + 2) * 4 + 3) * 6 + 2)]);
  // A patch embedding: each token dotted with a Conv2d weight (out, C, p, p) flattened is that
  // convolution's output at the patch (the weight of ones over channel 1 sums the channel's 4 pixels).
  std::vector<double> w(12, 0.0);
  for (int k = 4; k < 8; ++k) w[size_t(k)] = 1.0;
  const Tensor emb = matmul(t, Tensor::from_values(w, {12, 1}, DType::f32));
  const double want = xv[size_t(((0 * 3 + 1) * 4 + 0) * 6 + 4)] + xv[size_t(((0 * 3 + 1) * 4 + 0) * 6 + 5)] +
                      xv[size_t(((0 * 3 + 1) * 4 + 1) * 6 + 4)] + xv[size_t(((0 * 3 + 1) * 4 + 1) * 6 + 5)];
  EXPECT_EQ(emb.to_f64_vector()[2], want);  // image 0, token 2: patch-row 0, patch-column 2
}

TEST(Patchify, UnpatchifyUndoesItExactly) {
  const Tensor x = counting({3, 2, 6, 4});
  EXPECT_EQ(unpatchify(patchify(x, 2), 2, 6, 4).to_f64_vector(), x.to_f64_vector());
  EXPECT_EQ(unpatchify(patchify(x, 1), 1, 6, 4).to_f64_vector(), x.to_f64_vector());
}

TEST(Patchify, BadShapesAreRefusedByName) {
  EXPECT_NE(error_of([] {
              patchify(counting({1, 1, 28, 27}), 2);
            }).find("images of 28x27 pixels; expected H and W multiples of the patch size 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              patchify(counting({28, 28}), 2);
            }).find("expected images (B,C,H,W)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              unpatchify(counting({1, 195, 4}), 2, 28, 28);
            }).find("expected 196 tokens"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
