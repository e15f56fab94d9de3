// Test helper: a fresh directory of data files for one test, with writers for the token formats.
#pragma once

#include <dew/tokenizer.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dew::testing {

class DataDir {
 public:
  explicit DataDir(const std::string& name)
      : root_(std::filesystem::temp_directory_path() /
              ("dew_data_" + std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~DataDir() { std::filesystem::remove_all(root_); }
  std::string path(const std::string& name) const { return (root_ / name).string(); }
  void write(const std::string& name, const std::string& bytes) const {
    std::filesystem::create_directories((root_ / name).parent_path());
    std::ofstream(root_ / name, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string read(const std::string& name) const {
    std::ostringstream out;
    out << std::ifstream(root_ / name, std::ios::binary).rdbuf();
    return out.str();
  }
  // A byte-level BPE trained on `text`, with `eos` as its eos_token, in directory `name`.
  void write_tokenizer(const std::string& name, const std::string& text, const std::string& eos) const {
    write(name + "/tokenizer.json",
          train_byte_level_bpe({text}, {.vocab_size = 400, .special_tokens = {eos}}));
    write(name + "/tokenizer_config.json", "{\"eos_token\": \"" + eos + "\"}");
  }
  // IDX files of `count` side x side gray images (pixel(n, p) for image n's pixel p) and their labels
  // n % classes, as the idx_images source reads them.
  template <class Pixel>
  void write_idx_images(const std::string& images_name, const std::string& labels_name, int count, int side,
                        int classes, Pixel pixel) const {
    const auto be32 = [](uint32_t v) {
      return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    };
    std::string images =
        std::string("\0\0\x08\x03", 4) + be32(uint32_t(count)) + be32(uint32_t(side)) + be32(uint32_t(side));
    std::string labels = std::string("\0\0\x08\x01", 4) + be32(uint32_t(count));
    for (int n = 0; n < count; ++n) {
      labels.push_back(char(n % classes));
      for (int p = 0; p < side * side; ++p) images.push_back(char(pixel(n, p)));
    }
    write(images_name, images);
    write(labels_name, labels);
  }
  // llm.c's format: 256 x i32 header (magic, version, count), then u16 (version 1) or u32 ids.
  void write_llmc(const std::string& name, int32_t version, const std::vector<uint32_t>& ids) const {
    std::vector<int32_t> header(256, 0);
    header[0] = 20240520, header[1] = version, header[2] = int32_t(ids.size());
    std::string bytes(reinterpret_cast<const char*>(header.data()), 1024);
    for (uint32_t id : ids) bytes.append(reinterpret_cast<const char*>(&id), version == 1 ? 2 : 4);
    write(name, bytes);
  }
  // A 1-D .npy (version 1.0) of `descr` ("<u2", "<i8", "<f4") holding `values`.
  void write_npy(const std::string& name, const std::string& descr,
                 const std::vector<int64_t>& values) const {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" +
                         std::to_string(values.size()) + ",), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY\x01";
    bytes += '\0';
    bytes += char(header.size() & 0xff);
    bytes += char(header.size() >> 8);
    bytes += header;
    const int width = descr[2] - '0';
    for (int64_t v : values) {
      if (descr[1] == 'f') {
        const float f = float(v);
        bytes.append(reinterpret_cast<const char*>(&f), 4);
      } else {
        bytes.append(reinterpret_cast<const char*>(&v), size_t(width));  // little-endian low bytes
      }
    }
    write(name, bytes);
  }

 private:
  std::filesystem::path root_;
};

}  // namespace dew::testing
