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
