// PNG files through libpng (Debian's libpng-dev): 8-bit grayscale or RGB images, written atomically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dew {

// `pixels` row-major, `channels` (1: gray, 3: RGB) bytes a pixel, height x width x channels of them.
void write_png(const std::string& path, const std::vector<uint8_t>& pixels, int64_t width, int64_t height,
               int64_t channels);
// A PNG file's size and channels (1 or 3) and its pixels; anything else is refused naming the file.
struct PngImage {
  int64_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;
};
PngImage read_png(const std::string& path);

}  // namespace dew
