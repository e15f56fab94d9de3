// The token-file source: llm.c's .bin shards and 1-D .npy arrays of token ids, checked (header,
// dtype, exact length) before any token is read. Documents end after each separator id when one is
// given; otherwise a file is one document, read in pieces marked `continues`.
#include <dew/error.h>

#include "core/printable.h"
#include "data/files.h"

#include <cstring>
#include <regex>

namespace dew::data::detail {
namespace {

constexpr int64_t kPieceTokens = 8192;  // pieces of a file read without separators
constexpr int32_t kLlmcMagic = 20240520;

struct TokenArray {  // where a file's ids lie
  uint64_t offset = 0, count = 0;
  int width = 0;  // bytes per id
  bool is_signed = false;
};

TokenArray read_llmc_header(const MappedFile& f) {
  DEW_REQUIRE(f.size() >= 1024, "[data] token files: {}: {} bytes, shorter than llm.c's 1024-byte header",
              f.path(), f.size());
  int32_t header[3];
  std::memcpy(header, f.data(), sizeof header);
  DEW_REQUIRE(header[0] == kLlmcMagic, "[data] token files: {}: magic {} in the header; expected llm.c's {}",
              f.path(), header[0], kLlmcMagic);
  DEW_REQUIRE(header[1] == 1 || header[1] == 2,
              "[data] token files: {}: version {}; expected 1 (uint16 ids) or 2 (uint32 ids)", f.path(),
              header[1]);
  TokenArray a{1024, uint64_t(uint32_t(header[2])), header[1] == 1 ? 2 : 4, false};
  DEW_REQUIRE(
      f.size() == 1024 + a.count * uint64_t(a.width),
      "[data] token files: {}: the header counts {} ids of {} bytes, so {} bytes, but the file has {}",
      f.path(), a.count, a.width, 1024 + a.count * uint64_t(a.width), f.size());
  return a;
}

TokenArray read_npy_header(const MappedFile& f) {
  const char* data = reinterpret_cast<const char*>(f.data());
  DEW_REQUIRE(f.size() >= 10 && std::memcmp(data, "\x93NUMPY", 6) == 0,
              "[data] token files: {}: not a .npy file (no \\x93NUMPY magic)", f.path());
  const int major = uint8_t(data[6]);
  DEW_REQUIRE(major >= 1 && major <= 3, "[data] token files: {}: .npy version {}; expected 1, 2 or 3",
              f.path(), major);
  uint64_t header_length = 0, header_begin = major == 1 ? 10 : 12;
  DEW_REQUIRE(f.size() >= header_begin, "[data] token files: {}: truncated .npy header", f.path());
  for (uint64_t i = header_begin; i-- > 8;) header_length = header_length << 8 | uint8_t(data[i]);
  DEW_REQUIRE(header_length <= f.size() - header_begin,
              "[data] token files: {}: the .npy header claims {} bytes; the file has {}", f.path(),
              header_length, f.size());
  const std::string header(data + header_begin, header_length);
  // The header as a message shows it: on one line, without its padding and newline.
  const std::string shown = printable(header.substr(0, header.find_last_not_of(" \n") + 1));
  std::smatch descr, shape;
  DEW_REQUIRE(std::regex_search(header, descr, std::regex("'descr':\\s*'([<|=])([uif])([1248])'")),
              "[data] token files: {}: no little-endian integer 'descr' in the .npy header {}", f.path(),
              shown);
  DEW_REQUIRE(header.find("'fortran_order': False") != std::string::npos ||
                  header.find("'fortran_order':False") != std::string::npos,
              "[data] token files: {}: a Fortran-ordered array; expected a C-ordered 1-D array", f.path());
  DEW_REQUIRE(std::regex_search(header, shape, std::regex("'shape':\\s*\\((\\d{1,18}),?\\)")),
              "[data] token files: {}: the .npy array is not 1-D (header {}); expected a shape (N,)",
              f.path(), shown);
  TokenArray a{header_begin + header_length, std::stoull(shape[1].str()), descr[3].str()[0] - '0',
               descr[2].str() == "i"};
  DEW_REQUIRE(descr[2].str() != "f" && a.width >= 2 && !(a.is_signed && a.width == 2),
              "[data] token files: {}: dtype {}{}; expected token ids as u2, u4, i4, u8 or i8", f.path(),
              descr[2].str(), descr[3].str());
  DEW_REQUIRE(
      f.size() - a.offset == a.count * uint64_t(a.width),
      "[data] token files: {}: shape ({},) of {}-byte ids needs {} bytes after the header; the file has {}",
      f.path(), a.count, a.width, a.count * uint64_t(a.width), f.size() - a.offset);
  return a;
}

class TokenSource : public Source {
 public:
  TokenSource(const std::vector<std::string>& paths, std::optional<int32_t> separator, SourceOptions options)
      : Source(options), files_(paths, "token files"), separator_(separator) {
    for (uint32_t f = 0; f < files_.size(); ++f) {
      const MappedFile& file = files_.file(f);
      const bool npy = file.path().size() >= 4 && file.path().compare(file.path().size() - 4, 4, ".npy") == 0;
      arrays_.push_back(npy ? read_npy_header(file) : read_llmc_header(file));
      const TokenArray& a = arrays_.back();
      uint64_t begin = 0;
      for (uint64_t i = 0; i < a.count; ++i) {
        const bool end = separator ? id(f, i) == *separator : i + 1 - begin == uint64_t(kPieceTokens);
        if (end) spans_.push_back({f, begin, i + 1, int64_t(begin)}), begin = i + 1;
      }
      if (begin < a.count) spans_.push_back({f, begin, a.count, int64_t(begin)});
    }
  }
  int64_t size() const override { return int64_t(spans_.size()); }
  std::optional<Record> read(int64_t i) override {
    const FileSpan& span = spans_[size_t(i)];
    Record r;
    r.origin = files_.file(span.file).path() + ":token " + std::to_string(span.begin);
    r.continues = !separator_ && span.begin > 0;
    r.tokens.reserve(span.end - span.begin);
    for (uint64_t t = span.begin; t < span.end; ++t) {
      const int64_t value = id(span.file, t);
      if (value < 0 || value > INT32_MAX) {
        DEW_REQUIRE(options_.skip_malformed, "[data] token files: {}:token {}: id {} is not in [0, 2^31)",
                    files_.file(span.file).path(), t, value);
        return std::nullopt;
      }
      r.tokens.push_back(int32_t(value));
    }
    return r;
  }
  bool records_are_documents() const override { return separator_.has_value(); }
  Json describe() const override {
    Json d = {{"stage", "tokens"}, {"files", files_.describe()}};
    if (separator_) d["separator"] = *separator_;
    d.update(describe_options());
    return d;
  }

 private:
  int64_t id(uint32_t file, uint64_t i) const {
    const TokenArray& a = arrays_[file];
    const uint8_t* p = files_.file(file).data() + a.offset + i * uint64_t(a.width);
    switch (a.width) {
      case 2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      case 4: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return a.is_signed ? int64_t(int32_t(v)) : int64_t(v);
      }
      default: {
        int64_t v;
        std::memcpy(&v, p, 8);
        return v;
      }
    }
  }
  SourceFiles files_;
  std::optional<int32_t> separator_;
  std::vector<TokenArray> arrays_;
  std::vector<FileSpan> spans_;  // FileSpan's begin/end count ids here, not bytes
};

}  // namespace

std::unique_ptr<Source> make_token_source(const std::vector<std::string>& paths,
                                          std::optional<int32_t> separator, SourceOptions options) {
  return std::make_unique<TokenSource>(paths, separator, options);
}

}  // namespace dew::data::detail
