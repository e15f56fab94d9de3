// safetensors: the Hugging Face tensor file format, read (memory-mapped, validated as the format's
// reference implementation validates) and written (the reference writer's layout, atomically), and
// checkpoints sharded over several files by model.safetensors.index.json. Not a model loader: names
// and shapes are the caller's to check. Contract: a file that opens is entirely well-formed.
#pragma once

#include <dew/tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dew {

// One tensor of a file: its safetensors dtype name ("F32", "BF16", "F8_E4M3", ...), shape, and byte
// range [begin, end) in the data section that follows the header.
struct SafetensorsEntry {
  std::string name, dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
  uint64_t nbytes() const { return end - begin; }
};

// A validated header: entries ordered by offset, the `__metadata__` strings, and where the data
// section starts in the file (8 + the header's length).
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;
};

// Validates a whole file's bytes: the header length (≤ 100,000,000, inside the file), UTF-8 JSON that
// starts with '{', no duplicate keys, known dtypes, shapes whose byte count (overflow checked) equals
// the offsets' span, offsets contiguous from 0 to exactly the end of the file, `__metadata__` of
// strings. `source` names the bytes in errors.
SafetensorsHeader parse_safetensors(const uint8_t* bytes, uint64_t size, const std::string& source);

// Bytes per element of a safetensors dtype name; 0 for a name the format does not define.
uint64_t safetensors_dtype_size(std::string_view dtype);
// The Dew dtype a safetensors dtype name loads as; nullopt for those Dew cannot hold (I8, F8_*, ...).
std::optional<DType> safetensors_dtype(std::string_view dtype);

class MappedFile;

// One .safetensors file, mapped read-only; tensors are copied out on load.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);
  const std::string& path() const;
  const SafetensorsHeader& header() const { return header_; }
  const SafetensorsEntry* find(std::string_view name) const;  // nullptr when absent
  // A new contiguous CPU tensor with the entry's bytes; refuses names not in the file and dtypes Dew
  // does not hold (the message names both).
  Tensor load(std::string_view name) const;

 private:
  std::shared_ptr<const MappedFile> file_;
  SafetensorsHeader header_;
};

// Writes tensors (any layout, CPU) as the reference writer does: header JSON with `__metadata__`
// first, tensors ordered by decreasing element size then name (each aligned to its size), padded
// with spaces to a multiple of 8. Written under a temporary name, flushed and renamed: an existing
// file is replaced whole or not at all. Duplicate names are refused.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// A checkpoint's tensors: a single .safetensors file, or a directory holding model.safetensors or
// model.safetensors.index.json and its shards. Every file is opened and checked against the index
// before any tensor is loaded.
class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open(const std::string& path);
  std::vector<std::string> names() const;  // sorted
  const SafetensorsEntry* find(std::string_view name) const;
  Tensor load(std::string_view name) const;
  const std::vector<SafetensorsFile>& files() const { return files_; }

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t, std::less<>> file_of_;  // tensor name -> index into files_
};

// Writes a checkpoint into `directory` as Hugging Face does: model.safetensors when everything fits in
// one shard of `max_shard_bytes`, else model-0000i-of-0000n.safetensors (tensors in the given order,
// a new shard when the next tensor would overflow the current one) and model.safetensors.index.json
// ({"metadata": {"total_size": bytes}, "weight_map": {name: file}}), written last.
//
// With `by_rank`, the processes of a sharded run write it together (parameter sharding,
// docs/parallel.md): each writes the tensors `owner` gives it as model-{rank+1}-of-{ranks}.safetensors
// (none when it owns none; the others' tensors are not read), and rank 0 the index of them all. The
// caller makes the directory whole (every rank written) before anyone reads it.
struct RankShards {
  int rank = 0, ranks = 1;
  std::function<int(const std::string& name)> owner;
};
void save_safetensors_checkpoint(
    const std::string& directory, const std::vector<std::pair<std::string, Tensor>>& tensors,
    uint64_t max_shard_bytes = 5'000'000'000,  // "5GB", as transformers counts it
    const RankShards* by_rank = nullptr);

}  // namespace dew
