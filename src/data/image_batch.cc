// Batches of image records: this process's rows as (rows,C,H,W) f32 in [-1, 1] and labels (rows) i64.
// Every image of a batch has one size; a chain ending inside a batch fills it with padding rows (zero
// images, label -1), as text batches are, so that every process gets its rows.
#include <dew/error.h>

#include "data/stage.h"

namespace dew::data::detail {

Batch image_batch(const std::vector<Record>& rows, int64_t global_size, Shard shard) {
  const Record& first_row = rows[0];
  const int64_t C = first_row.channels, H = first_row.height, W = first_row.width, size = C * H * W;
  for (const Record& r : rows)
    DEW_REQUIRE(!r.pixels.empty() && r.channels == C && r.height == H && r.width == W &&
                    int64_t(r.pixels.size()) == size,
                "[data] batch: {} is {}; the batch's first image ({}) is {}x{}x{} (C,H,W), and a batch holds "
                "images of one size",
                r.origin,
                r.pixels.empty() ? std::string("not an image")
                                 : fmt::format("{}x{}x{}", r.channels, r.height, r.width),
                first_row.origin, C, H, W);
  const int64_t local = global_size / shard.count, first = shard.index * local;
  Batch batch;
  batch.images = Tensor::zeros({local, C, H, W}, DType::f32);
  batch.labels = Tensor::full({local}, -1, DType::i64);
  float* images = batch.images.data<float>();
  int64_t* labels = batch.labels.data<int64_t>();
  for (int64_t r = 0; r < local && first + r < int64_t(rows.size()); ++r) {
    const Record& row = rows[size_t(first + r)];
    for (int64_t i = 0; i < size; ++i) images[r * size + i] = float(row.pixels[size_t(i)]) / 127.5f - 1.0f;
    labels[r] = row.label;
    ++batch.real_rows;
  }
  return batch;
}

}  // namespace dew::data::detail
