// PNG writing and reading with libpng's simplified API (png_image), which handles the format's
// checks; written into memory, then to disk through AtomicFile.
#include "io/png.h"

#include <dew/error.h>
#include <png.h>

#include "io/files.h"

namespace dew {

void write_png(const std::string& path, const std::vector<uint8_t>& pixels, int64_t width, int64_t height,
               int64_t channels) {
  DEW_REQUIRE(
      width > 0 && height > 0 && width < (1 << 24) && height < (1 << 24) &&
          (channels == 1 || channels == 3) && int64_t(pixels.size()) == width * height * channels,
      "[png] {}: {}x{} pixels of {} channel(s) from {} bytes; expected 1 or 3 channels and exactly the bytes "
      "they need",
      path, width, height, channels, pixels.size());
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  DEW_REQUIRE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, nullptr),
              "[png] {}: libpng could not size the image: {}", path, image.message);
  std::vector<uint8_t> bytes(size);
  DEW_REQUIRE(png_image_write_to_memory(&image, bytes.data(), &size, 0, pixels.data(), 0, nullptr),
              "[png] {}: libpng could not encode the image: {}", path, image.message);
  AtomicFile file(path);
  file.write(bytes.data(), size);
  file.commit();
}

PngImage read_png(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  DEW_REQUIRE(png_image_begin_read_from_file(&image, path.c_str()),
              "[png] {}: not a PNG file libpng reads: {}", path, image.message);
  PngImage out;
  out.channels = (image.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
  image.format = out.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  out.width = image.width, out.height = image.height;
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    fail("[png] {}: a damaged PNG: {}", path, why);
  }
  return out;
}

}  // namespace dew
