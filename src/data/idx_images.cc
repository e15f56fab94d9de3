// The IDX image source (MNIST's and Fashion-MNIST's format, gzipped or not): an images file of u8
// pixels (N,H,W) and, optionally, a labels file of u8 classes (N). Both are checked — magic, type,
// dimensions, exact length, matching counts — and inflated once when the source opens.
#include <dew/error.h>
#include <zlib.h>

#include "data/files.h"

#include <cstring>

namespace dew::data::detail {
namespace {

constexpr uint64_t kMostBytes = uint64_t(1) << 34;  // 16 GiB: far past any IDX data set

// The file's bytes, inflated when it is gzip (magic 1f 8b); a corrupt stream is an error naming the file.
std::vector<uint8_t> idx_bytes(const MappedFile& f) {
  if (f.size() < 2 || f.data()[0] != 0x1f || f.data()[1] != 0x8b) return {f.data(), f.data() + f.size()};
  std::vector<uint8_t> out;
  z_stream z{};
  DEW_REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK, "[data] idx images: {}: zlib would not start", f.path());
  z.next_in = const_cast<uint8_t*>(f.data());
  z.avail_in = uInt(std::min<uint64_t>(f.size(), UINT32_MAX));
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    const size_t at = out.size();
    out.resize(at + (size_t(1) << 20));
    z.next_out = out.data() + at;
    z.avail_out = uInt(out.size() - at);
    status = inflate(&z, Z_NO_FLUSH);
    out.resize(out.size() - z.avail_out);
    const bool stuck = status == Z_BUF_ERROR && z.avail_in == 0;
    if (status != Z_OK && status != Z_STREAM_END) {
      const std::string why = stuck ? "the gzip stream ends early" : (z.msg ? z.msg : "corrupt data");
      inflateEnd(&z);
      fail("[data] idx images: {}: {}; expected a whole gzip file (re-download or re-install it)", f.path(),
           why);
    }
    if (out.size() > kMostBytes) {
      inflateEnd(&z);
      fail("[data] idx images: {}: inflates past {} bytes; expected an IDX file", f.path(), kMostBytes);
    }
  }
  inflateEnd(&z);
  return out;
}

uint32_t big_endian(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

struct IdxArray {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> dims;
  uint64_t offset = 0;  // where the values begin
};

// An IDX array of u8 values with `rank` dimensions ("images (N,H,W)" as `what` in messages).
IdxArray read_idx(const MappedFile& f, size_t rank, const char* what) {
  IdxArray a{idx_bytes(f), {}, 4 + 4 * rank};
  const std::vector<uint8_t>& b = a.bytes;
  DEW_REQUIRE(b.size() >= 4 && b[0] == 0 && b[1] == 0,
              "[data] idx images: {}: no IDX magic (two zero bytes, type, rank); expected an IDX file of {}",
              f.path(), what);
  DEW_REQUIRE(b[2] == 0x08 && b[3] == rank,
              "[data] idx images: {}: type 0x{:02x} with {} dimensions; expected unsigned bytes (0x08) with "
              "{} for {}",
              f.path(), b[2], b[3], rank, what);
  DEW_REQUIRE(b.size() >= a.offset, "[data] idx images: {}: the header is cut short ({} bytes)", f.path(),
              b.size());
  uint64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    a.dims.push_back(big_endian(b.data() + 4 + 4 * d));
    count *= a.dims.back();
    DEW_REQUIRE(count <= kMostBytes, "[data] idx images: {}: dimensions too large", f.path());
  }
  DEW_REQUIRE(
      b.size() == a.offset + count,
      "[data] idx images: {}: the header promises {} values after {} header bytes, so {} bytes; the data "
      "has {}",
      f.path(), count, a.offset, a.offset + count, b.size());
  return a;
}

class IdxImageSource : public Source {
 public:
  IdxImageSource(const std::string& images, const std::string& labels, SourceOptions options)
      : Source(options), image_file_({images}, "idx images"), images_(one(image_file_, "images", 3)) {
    DEW_REQUIRE(images_.dims[1] > 0 && images_.dims[2] > 0, "[data] idx images: {}: images of {}x{} pixels",
                image_file_.file(0).path(), images_.dims[1], images_.dims[2]);
    if (labels.empty()) return;
    label_file_ = std::make_unique<SourceFiles>(std::vector<std::string>{labels}, "idx labels");
    labels_ = one(*label_file_, "labels (N)", 1);
    DEW_REQUIRE(labels_.dims[0] == images_.dims[0],
                "[data] idx images: {} has {} labels and {} has {} images; expected one label per image",
                label_file_->file(0).path(), labels_.dims[0], image_file_.file(0).path(), images_.dims[0]);
  }
  int64_t size() const override { return int64_t(images_.dims[0]); }
  std::optional<Record> read(int64_t i) override {
    const uint64_t H = images_.dims[1], W = images_.dims[2];
    Record r;
    r.origin = image_file_.file(0).path() + ":image " + std::to_string(i);
    r.channels = 1, r.height = int64_t(H), r.width = int64_t(W);
    const uint8_t* p = images_.bytes.data() + images_.offset + uint64_t(i) * H * W;
    r.pixels.assign(p, p + H * W);
    if (label_file_) r.label = labels_.bytes[labels_.offset + uint64_t(i)];
    return r;
  }
  Json describe() const override {
    Json d = {{"stage", "idx_images"}, {"images", image_file_.describe()}};
    if (label_file_) d["labels"] = label_file_->describe();
    d.update(describe_options());
    return d;
  }

 private:
  static IdxArray one(const SourceFiles& files, const char* what, size_t rank) {
    DEW_REQUIRE(files.size() == 1, "[data] idx images: the {} path matches {} files; expected one", what,
                files.size());
    return read_idx(files.file(0), rank, rank == 3 ? "images (N,H,W)" : "labels (N)");
  }
  SourceFiles image_file_;
  IdxArray images_;
  std::unique_ptr<SourceFiles> label_file_;
  IdxArray labels_;
};

}  // namespace

std::unique_ptr<Source> make_idx_image_source(const std::string& images, const std::string& labels,
                                              SourceOptions options) {
  return std::make_unique<IdxImageSource>(images, labels, options);
}

}  // namespace dew::data::detail
