// Philox-4x32-10 (Salmon et al., 2011): the counter-based generator behind every random draw
// (runtime.h). Apart from the tensor fills (random.cc), so that code without tensors can use it.
#include <dew/runtime.h>

namespace dew {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(M0) * c[0], p1 = uint64_t(M1) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
    k = {k[0] + W0, k[1] + W1};
  }
  return c;
}

}  // namespace dew
