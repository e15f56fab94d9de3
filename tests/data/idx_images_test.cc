// The IDX image source, the flip stage and image batches: records are exactly the files' pixels and
// labels, gzipped or not; damaged files are refused by name; flips are a function of (seed, epoch,
// record) and survive a resume; batches scale pixels to [-1, 1] and pad the last one.
#include <dew/data.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "data_files.h"
#include "error_of.h"

namespace dew::data {
namespace {

using testing::DataDir;
using testing::error_of;

std::string be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// N images of H x W where pixel (n, r, c) = 10 n + 3 r + c, and labels n % 10.
std::string idx_images(uint32_t N, uint32_t H, uint32_t W) {
  std::string out = std::string("\0\0\x08\x03", 4) + be32(N) + be32(H) + be32(W);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t r = 0; r < H; ++r)
      for (uint32_t c = 0; c < W; ++c) out.push_back(char(uint8_t(10 * n + 3 * r + c)));
  return out;
}
std::string idx_labels(uint32_t N) {
  std::string out = std::string("\0\0\x08\x01", 4) + be32(N);
  for (uint32_t n = 0; n < N; ++n) out.push_back(char(n % 10));
  return out;
}
std::string gzipped(const std::string& bytes) {
  uLongf size = compressBound(uLong(bytes.size())) + 64;
  std::string out(size, '\0');
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // a gzip wrapper, as .gz files have
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<Record> drain(Chain& chain) {
  std::vector<Record> out;
  while (std::optional<Record> r = chain.next_record()) out.push_back(std::move(*r));
  return out;
}

TEST(IdxImages, RecordsHoldTheFilesPixelsAndLabelsGzippedOrNot) {
  DataDir dir("idx_plain");
  dir.write("images", idx_images(5, 3, 4));
  dir.write("labels", idx_labels(5));
  dir.write("images.gz", gzipped(idx_images(5, 3, 4)));
  dir.write("labels.gz", gzipped(idx_labels(5)));
  for (const char* suffix : {"", ".gz"}) {
    Chain chain =
        Chain::idx_images(dir.path(std::string("images") + suffix), dir.path(std::string("labels") + suffix));
    chain.cache({.enabled = false});
    std::vector<Record> records = drain(chain);
    ASSERT_EQ(records.size(), 5u);
    const Record& r = records[3];
    EXPECT_EQ(r.label, 3);
    EXPECT_EQ(r.channels, 1);
    EXPECT_EQ(r.height, 3);
    EXPECT_EQ(r.width, 4);
    ASSERT_EQ(r.pixels.size(), 12u);
    EXPECT_EQ(r.pixels[2 * 4 + 1], 10 * 3 + 3 * 2 + 1);  // row 2, column 1
  }
  Chain unlabelled = Chain::idx_images(dir.path("images"));
  EXPECT_EQ(unlabelled.next_record()->label, -1);
}

TEST(IdxImages, DamagedFilesAreRefusedByName) {
  DataDir dir("idx_bad");
  const std::string good = idx_images(4, 2, 2);
  dir.write("short", good.substr(0, good.size() - 1));
  dir.write("magic", std::string("\x01") + good.substr(1));
  dir.write("rank", idx_labels(4));
  dir.write("images", good);
  dir.write("labels3", idx_labels(3));
  std::string gz = gzipped(good);
  dir.write("cut.gz", gz.substr(0, gz.size() / 2));
  gz[gz.size() / 2] = char(gz[gz.size() / 2] ^ 0x55);
  dir.write("flipped.gz", gz);
  auto refusal = [&](const std::string& images, const std::string& labels = {}) {
    return error_of([&] { Chain::idx_images(dir.path(images), labels.empty() ? "" : dir.path(labels)); });
  };
  EXPECT_NE(refusal("short").find("so 32 bytes; the data has 31"), std::string::npos) << refusal("short");
  EXPECT_NE(refusal("magic").find("no IDX magic"), std::string::npos) << refusal("magic");
  EXPECT_NE(refusal("rank").find("with 1 dimensions; expected unsigned bytes (0x08) with 3"),
            std::string::npos)
      << refusal("rank");
  EXPECT_NE(refusal("images", "labels3").find("3 labels and"), std::string::npos);
  EXPECT_NE(refusal("cut.gz").find("cut.gz"), std::string::npos) << refusal("cut.gz");
  EXPECT_NE(refusal("flipped.gz").find("expected a whole gzip file"), std::string::npos)
      << refusal("flipped.gz");
  EXPECT_NE(refusal("missing").find("missing"), std::string::npos);
}

TEST(IdxImages, BatchesScalePixelsAndPadTheLastBatch) {
  DataDir dir("idx_batch");
  dir.write("images", idx_images(5, 2, 3));
  dir.write("labels", idx_labels(5));
  Chain chain = Chain::idx_images(dir.path("images"), dir.path("labels"));
  chain.batch(4);
  std::optional<Batch> first = chain.next_batch();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->images.shape(), Shape({4, 1, 2, 3}));
  EXPECT_EQ(first->images.to_f64_vector()[6 + 4], double(14.0f / 127.5f - 1.0f));  // image 1, (1, 1)
  std::optional<Batch> last = chain.next_batch();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->real_rows, 1);
  EXPECT_EQ(last->labels.to_f64_vector(), (std::vector<double>{4, -1, -1, -1}));
  EXPECT_FALSE(chain.next_batch());

  std::vector<Record> rows(2);
  rows[0].pixels.assign(6, 1), rows[0].channels = 1, rows[0].height = 2, rows[0].width = 3;
  rows[0].origin = "first";
  rows[1] = rows[0], rows[1].width = 2, rows[1].pixels.resize(4), rows[1].origin = "second";
  EXPECT_NE(error_of([&] {
              Chain::records(rows).batch(2).next_batch();
            }).find("second is 1x2x2; the batch's first image (first) is 1x2x3 (C,H,W)"),
            std::string::npos);
}

// Each image's flip, as a bit, for the records of `epochs` epochs.
std::vector<int> flips(Chain& chain, const std::vector<Record>& originals) {
  std::vector<int> out;
  while (std::optional<Record> r = chain.next_record()) {
    const Record& o = originals[size_t(r->index)];
    std::vector<uint8_t> mirrored = o.pixels;
    for (int64_t row = 0; row < o.height; ++row)
      std::reverse(mirrored.begin() + row * o.width, mirrored.begin() + (row + 1) * o.width);
    EXPECT_TRUE(r->pixels == o.pixels || r->pixels == mirrored);
    out.push_back(r->pixels == mirrored);
  }
  return out;
}

TEST(IdxImages, FlipsDependOnSeedEpochAndRecordAndSurviveAResume) {
  DataDir dir("idx_flip");
  dir.write("images", idx_images(40, 2, 3));
  const std::vector<Record> originals = [&] {
    Chain c = Chain::idx_images(dir.path("images"));
    return drain(c);
  }();
  auto chain = [&](uint64_t seed) {
    Chain c = Chain::idx_images(dir.path("images"), "", {.epochs = 2});
    c.shuffle(3).flip_horizontal(seed);
    return c;
  };
  Chain a = chain(7), b = chain(7), other = chain(8);
  const std::vector<int> fa = flips(a, originals);
  ASSERT_EQ(fa.size(), 80u);
  EXPECT_EQ(flips(b, originals), fa);
  EXPECT_NE(flips(other, originals), fa);
  const int flipped = std::count(fa.begin(), fa.end(), 1);
  EXPECT_GT(flipped, 20);
  EXPECT_LT(flipped, 60);
  // The same image flips independently in its two epochs: some do in one epoch and not the other.
  Chain c = chain(7);
  std::map<int64_t, std::vector<int>> by_image;
  while (std::optional<Record> r = c.next_record())
    by_image[r->index].push_back(r->pixels != originals[size_t(r->index)].pixels);
  int differ = 0;
  for (const auto& [i, f] : by_image) differ += f[0] != f[1];
  EXPECT_GT(differ, 5);
  // Resumed after 50 records, the rest flip as they did.
  Chain first = chain(7);
  for (int i = 0; i < 50; ++i) first.next_record();
  Chain resumed = chain(7);
  resumed.resume(first.position());
  const std::vector<int> rest = flips(resumed, originals);
  EXPECT_EQ(rest, std::vector<int>(fa.begin() + 50, fa.end()));
  EXPECT_NE(error_of([] {
              Chain::records({Record{.text = "a"}}).flip_horizontal(1).next_record();
            }).find("is not an image"),
            std::string::npos);
}

TEST(IdxImages, AConfigBuildsTheSameChain) {
  DataDir dir("idx_config");
  dir.write("images.gz", gzipped(idx_images(10, 2, 3)));
  dir.write("labels.gz", gzipped(idx_labels(10)));
  dir.write("images.toml", R"([data.source]
kind = "idx_images"
images = "images.gz"
labels = "labels.gz"
[[data.stage]]
kind = "shuffle"
seed = 4
[[data.stage]]
kind = "flip_horizontal"
seed = 9
[[data.stage]]
kind = "batch"
size = 5
)");
  Chain from_config = chain_from_config(dir.path("images.toml"));
  Chain built = Chain::idx_images(dir.path("images.gz"), dir.path("labels.gz"));
  built.shuffle(4).flip_horizontal(9).batch(5);
  for (int b = 0; b < 2; ++b) {
    const Batch x = *from_config.next_batch(), y = *built.next_batch();
    EXPECT_EQ(x.images.to_f64_vector(), y.images.to_f64_vector());
    EXPECT_EQ(x.labels.to_f64_vector(), y.labels.to_f64_vector());
  }
  EXPECT_NE(error_of([&] { chain_from_config(dir.path("images.toml"), {"data.stage.1.probability=2"}); })
                .find("probability 2; expected 0 to 1"),
            std::string::npos);
}

TEST(IdxImages, FashionMnistFromDebianReads) {
  const std::string images = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz",
                    labels = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(images)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  Chain chain = Chain::idx_images(images, labels);
  chain.cache({.enabled = false});
  int64_t count = 0;
  std::vector<int64_t> per_class(10);
  while (std::optional<Record> r = chain.next_record()) {
    ASSERT_EQ(r->pixels.size(), 784u);
    ASSERT_TRUE(r->label >= 0 && r->label < 10);
    ++per_class[size_t(r->label)], ++count;
  }
  EXPECT_EQ(count, 60000);
  EXPECT_EQ(per_class, std::vector<int64_t>(10, 6000));
}

}  // namespace
}  // namespace dew::data
