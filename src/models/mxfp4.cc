// MXFP4 expert weights as gpt-oss checkpoints store them, decoded at load: `blocks` (E, R, G, 16) u8
// hold two e2m1 values a byte (the low nibble first), `scales` (E, R, G) u8 one e8m0 exponent (2^(s -
// 127)) for each 32 values. Decoded, (E, R, 32 G) is transposed to (E, 32 G, R): the layout x @ W
// reads (transformers' convert_moe_packed_tensors). Every decoded value is exact in f32 and bf16.
#include <dew/error.h>
#include <dew/tensor.h>

#include <cmath>

#include "models/families.h"

namespace dew::models {

Tensor decode_mxfp4(const Tensor& blocks, const Tensor& scales, const std::string& name) {
  DEW_REQUIRE(blocks.dtype() == DType::u8 && blocks.dim() == 4 && blocks.size(3) == 16,
              "\"{}_blocks\" is {}; expected (E, rows, groups, 16) U8: MXFP4 blocks of 32 values", name,
              blocks.describe());
  DEW_REQUIRE(scales.dtype() == DType::u8 && scales.dim() == 3 && scales.size(0) == blocks.size(0) &&
                  scales.size(1) == blocks.size(1) && scales.size(2) == blocks.size(2),
              "\"{}_scales\" is {}; expected ({}, {}, {}) U8: one exponent for each block of \"{}_blocks\"",
              name, scales.describe(), blocks.size(0), blocks.size(1), blocks.size(2), name);
  static constexpr float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const int64_t E = blocks.size(0), R = blocks.size(1), G = blocks.size(2), cols = 32 * G;
  const Tensor b = blocks.to(Device::cpu()).contiguous(), s = scales.to(Device::cpu()).contiguous();
  const uint8_t* byte = b.data<uint8_t>();
  const uint8_t* exponent = s.data<uint8_t>();
  Tensor out = Tensor::empty({E, cols, R}, DType::f32);
  float* o = out.data<float>();
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t block = (e * R + r) * G + g;
        const float scale = std::ldexp(1.0f, int(exponent[block]) - 127);
        for (int64_t i = 0; i < 16; ++i) {
          const uint8_t v = byte[block * 16 + i];
          const int64_t col = 32 * g + 2 * i;
          o[(e * cols + col) * R + r] = kE2m1[v & 0x0F] * scale;
          o[(e * cols + col + 1) * R + r] = kE2m1[v >> 4] * scale;
        }
      }
  return out;
}

}  // namespace dew::models
