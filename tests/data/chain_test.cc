// The data chain: sources read exactly what their files hold, stages do what they say (checked
// against plain recomputations), and a position resumes exactly, whatever the workers and prefetch.
#include <dew/data.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "data/stage.h"
#include "data_files.h"
#include "error_of.h"

namespace dew::data {
namespace {

using testing::DataDir;
using testing::error_of;

std::vector<Record> drain_records(Chain& chain) {
  std::vector<Record> out;
  while (std::optional<Record> r = chain.next_record()) out.push_back(std::move(*r));
  return out;
}

std::vector<std::string> texts(const std::vector<Record>& records) {
  std::vector<std::string> out;
  for (const Record& r : records) out.push_back(r.text);
  return out;
}

// A batch's tensors as one comparable vector.
std::vector<int64_t> flat(const Batch& b) {
  std::vector<int64_t> out;
  for (const Tensor* t : {&b.tokens, &b.segment_ids, &b.positions})
    out.insert(out.end(), t->data<int64_t>(), t->data<int64_t>() + t->numel());
  return out;
}

TEST(DataSources, TextFilesByFileLineAndParagraph) {
  DataDir dir("text_units");
  dir.write("b.txt", "second file\n");
  dir.write("a.txt", "one\r\n\n  \ntwo\nthree\n\n\nfour");
  Chain files = Chain::text_files({dir.path("*.txt")}, TextUnit::file);
  EXPECT_EQ(texts(drain_records(files)),
            (std::vector<std::string>{"one\r\n\n  \ntwo\nthree\n\n\nfour", "second file\n"}));
  Chain lines = Chain::text_files({dir.path("*.txt")}, TextUnit::line);
  std::vector<Record> l = drain_records(lines);
  EXPECT_EQ(texts(l), (std::vector<std::string>{"one", "two", "three", "four", "second file"}));
  EXPECT_EQ(l[1].origin, dir.path("a.txt") + ":4");
  Chain paragraphs = Chain::text_files({dir.path("a.txt")}, TextUnit::paragraph);
  std::vector<Record> p = drain_records(paragraphs);
  EXPECT_EQ(texts(p), (std::vector<std::string>{"one", "two\nthree", "four"}));
  EXPECT_EQ(p[2].origin, dir.path("a.txt") + ":8");
}

TEST(DataSources, MissingFilesAndEmptyPatternsAreNamed) {
  DataDir dir("missing");
  EXPECT_NE(error_of([&] {
              Chain::text_files({dir.path("nope.txt")}, TextUnit::line);
            }).find(dir.path("nope.txt") + " does not exist"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Chain::jsonl({dir.path("*.jsonl")}, "text");
            }).find("the pattern " + dir.path("*.jsonl") + " matches no file"),
            std::string::npos);
}

TEST(DataSources, JsonlFieldPathsAndMalformedLines) {
  DataDir dir("jsonl");
  dir.write("d.jsonl",
            "{\"messages\": [{\"content\": \"hi\"}, {\"content\": \"there\"}]}\n"
            "\n"
            "{\"messages\": [{\"content\": \"again\"}]}\n");
  Chain ok = Chain::jsonl({dir.path("d.jsonl")}, "messages.0.content");
  EXPECT_EQ(texts(drain_records(ok)), (std::vector<std::string>{"hi", "again"}));
  Chain second = Chain::jsonl({dir.path("d.jsonl")}, "messages.1.content");
  EXPECT_NE(error_of([&] { drain_records(second); }).find(dir.path("d.jsonl") + ":3: no \"1\" in array"),
            std::string::npos);

  dir.write("bad.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"\n{\"text\": 5}\n{\"text\": \"c\"}\n");
  Chain strict = Chain::jsonl({dir.path("bad.jsonl")}, "text");
  const std::string e = error_of([&] { drain_records(strict); });
  EXPECT_NE(e.find(dir.path("bad.jsonl") + ":2"), std::string::npos) << e;
  Chain lenient = Chain::jsonl({dir.path("bad.jsonl")}, "text", {.skip_malformed = true});
  EXPECT_EQ(texts(drain_records(lenient)), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(lenient.stats()[0].dropped, 2);
}

TEST(DataSources, BadUtf8IsNamedOrSkipped) {
  DataDir dir("utf8");
  dir.write("t.txt",
            "good\nba\xff"
            "d\nfine\n");
  Chain strict = Chain::text_files({dir.path("t.txt")}, TextUnit::line);
  EXPECT_NE(error_of([&] { drain_records(strict); }).find(dir.path("t.txt") + ":2: not UTF-8 (byte 2"),
            std::string::npos);
  Chain lenient = Chain::text_files({dir.path("t.txt")}, TextUnit::line, {.skip_malformed = true});
  EXPECT_EQ(texts(drain_records(lenient)), (std::vector<std::string>{"good", "fine"}));
  // Repeating a source whose records are all skipped would yield nothing forever.
  dir.write("all_bad.txt", "\xff\n\xfe\n");
  Chain forever =
      Chain::text_files({dir.path("all_bad.txt")}, TextUnit::line, {.epochs = 0, .skip_malformed = true});
  EXPECT_NE(error_of([&] { forever.next_record(); }).find("every record of epoch 0 was skipped"),
            std::string::npos);
}

TEST(DataSources, TokenFilesLlmcBinAndNpy) {
  DataDir dir("tokens");
  dir.write_llmc("a.bin", 1, {5, 6, 0, 7, 0, 8});
  dir.write_llmc("b.bin", 2, {70000, 0});
  dir.write_npy("c.npy", "<i8", {9, 10, 0});
  Chain docs = Chain::token_files({dir.path("*.bin"), dir.path("c.npy")}, 0);
  std::vector<std::vector<int32_t>> got;
  for (const Record& r : drain_records(docs)) got.push_back(r.tokens);
  EXPECT_EQ(got, (std::vector<std::vector<int32_t>>{{5, 6, 0}, {7, 0}, {8}, {70000, 0}, {9, 10, 0}}));
  // Without a separator a file is one document: its pieces continue one another.
  Chain whole = Chain::token_files({dir.path("a.bin")}, std::nullopt);
  std::vector<Record> pieces = drain_records(whole);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_FALSE(pieces[0].continues);
  EXPECT_NE(error_of([&] { whole.shuffle(1); }).find("without a document separator"), std::string::npos);
}

TEST(DataSources, MalformedTokenFilesAreRefusedByName) {
  DataDir dir("bad_tokens");
  dir.write_llmc("short.bin", 1, {1, 2, 3});
  std::string bytes = dir.read("short.bin");
  dir.write("short.bin", bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(error_of([&] { Chain::token_files({dir.path("short.bin")}, 0); }).find("the header counts 3 ids"),
            std::string::npos);
  bytes[0] = 1;
  dir.write("magic.bin", bytes);
  EXPECT_NE(
      error_of([&] { Chain::token_files({dir.path("magic.bin")}, 0); }).find("expected llm.c's 20240520"),
      std::string::npos);
  dir.write("tiny.bin", "abc");
  EXPECT_NE(error_of([&] { Chain::token_files({dir.path("tiny.bin")}, 0); }).find("shorter than llm.c's"),
            std::string::npos);
  dir.write_npy("f.npy", "<f4", {1, 2});
  EXPECT_NE(error_of([&] { Chain::token_files({dir.path("f.npy")}, 0); }).find("dtype f4"),
            std::string::npos);
  // The header is quoted on one line, without its padding and newline (the message was split in two).
  dir.write_npy("big.npy", ">i8", {1, 2});
  const std::string big = error_of([&] { Chain::token_files({dir.path("big.npy")}, 0); });
  EXPECT_NE(big.find("no little-endian integer 'descr' in the .npy header {'descr': '>i8', 'fortran_order': "
                     "False, 'shape': (2,), }"),
            std::string::npos)
      << big;
  EXPECT_EQ(big.find('\n'), std::string::npos) << big;
}

TEST(DataShuffle, PermutedIndexIsABijectionForManySizes) {
  for (int64_t n : {1, 2, 3, 7, 64, 100, 1000, 4097}) {
    std::vector<char> seen(size_t(n), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = detail::permuted_index(i, n, 42, 3);
      ASSERT_TRUE(j >= 0 && j < n);
      ASSERT_FALSE(seen[size_t(j)]) << "n " << n << " repeats " << j;
      seen[size_t(j)] = 1;
    }
  }
}

std::vector<Record> numbered(int n) {
  std::vector<Record> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[size_t(i)].text = std::to_string(i);
  return out;
}

TEST(DataShuffle, GlobalAndWindowedShuffleEachRecordOncePerEpoch) {
  for (int64_t window : {0, 16}) {
    Chain chain = Chain::records(numbered(100), {.epochs = 2});
    chain.shuffle(7, window);
    std::vector<std::string> got = texts(drain_records(chain));
    ASSERT_EQ(got.size(), 200u);
    std::vector<std::string> first(got.begin(), got.begin() + 100), second(got.begin() + 100, got.end());
    EXPECT_NE(first, texts(numbered(100))) << "window " << window;
    if (window == 0) {  // a new permutation each epoch, each a permutation of all records
      EXPECT_NE(first, second);
      std::sort(first.begin(), first.end());
      std::sort(second.begin(), second.end());
      EXPECT_EQ(first, second);
      std::vector<std::string> all = texts(numbered(100));
      std::sort(all.begin(), all.end());
      EXPECT_EQ(first, all);
    }
    std::multiset<std::string> counts(got.begin(), got.end());
    for (const std::string& t : texts(numbered(100))) EXPECT_EQ(counts.count(t), 2u);
    Chain again = Chain::records(numbered(100), {.epochs = 2});
    again.shuffle(7, window);
    EXPECT_EQ(texts(drain_records(again)), got) << "same seed, same order";
  }
}

// Documents of tokens, some continuing the one before, to pack.
std::vector<Record> token_documents() {
  std::vector<Record> docs;
  for (int d = 0; d < 40; ++d) {
    Record r;
    for (int i = 0; i < 1 + (d * 7) % 23; ++i) r.tokens.push_back(1000 * d + i);
    r.continues = d % 5 == 4;
    docs.push_back(r);
  }
  return docs;
}

TEST(DataPack, WindowsMatchAPlainRecomputation) {
  const int64_t T = 16;
  // The stream of all tokens, each with its document number and position in it.
  std::vector<int64_t> stream, doc, pos;
  int64_t number = 0, base = 0;
  for (const Record& r : token_documents()) {
    if (!r.continues) ++number, base = 0;
    for (size_t i = 0; i < r.tokens.size(); ++i)
      stream.push_back(r.tokens[i]), doc.push_back(number), pos.push_back(base + int64_t(i));
    base += int64_t(r.tokens.size());
  }
  Chain chain = Chain::records(token_documents());
  chain.pack(T);
  std::vector<Record> windows = drain_records(chain);
  size_t k = 0;
  for (int64_t start = 0; start + 1 < int64_t(stream.size()); start += T, ++k) {
    ASSERT_LT(k, windows.size());
    const Record& w = windows[k];
    ASSERT_EQ(w.tokens.size(), size_t(T + 1));
    std::vector<int64_t> docs_seen;
    for (int64_t t = 0; t <= T; ++t) {
      const int64_t at = start + t;
      if (at >= int64_t(stream.size())) {
        EXPECT_EQ(w.segment_ids[size_t(t)], 0);
        EXPECT_EQ(w.tokens[size_t(t)], 0);
        continue;
      }
      if (docs_seen.empty() || docs_seen.back() != doc[size_t(at)]) docs_seen.push_back(doc[size_t(at)]);
      EXPECT_EQ(w.tokens[size_t(t)], stream[size_t(at)]) << "window " << k << " token " << t;
      EXPECT_EQ(w.segment_ids[size_t(t)], int64_t(docs_seen.size())) << "window " << k << " token " << t;
      EXPECT_EQ(w.positions[size_t(t)], pos[size_t(at)]) << "window " << k << " token " << t;
    }
  }
  EXPECT_EQ(k, windows.size());
}

// A chain from token documents to batches; every stage that keeps state is in it.
Chain batched_chain(int64_t prefetch, Shard shard = {}) {
  Chain chain = Chain::records(token_documents(), {.epochs = 0});
  chain.shuffle(5, 0).pack(12).shuffle(9, 7).batch(4, shard);
  if (prefetch) chain.prefetch(prefetch);
  return chain;
}

TEST(DataResume, EveryPositionOfA50BatchRunContinuesExactly) {
  for (int64_t prefetch : {0, 3}) {
    Chain chain = batched_chain(prefetch);
    std::vector<std::string> positions{chain.position()};
    std::vector<std::vector<int64_t>> batches;
    for (int i = 0; i < 50; ++i) {
      std::optional<Batch> b = chain.next_batch();
      ASSERT_TRUE(b) << i;
      EXPECT_EQ(b->index, i);
      batches.push_back(flat(*b));
      positions.push_back(chain.position());
    }
    for (size_t k = 0; k < positions.size(); ++k) {
      Chain resumed = batched_chain(prefetch);
      resumed.resume(positions[k]);
      for (size_t i = k; i < std::min(batches.size(), k + 6); ++i) {
        std::optional<Batch> b = resumed.next_batch();
        ASSERT_TRUE(b);
        EXPECT_EQ(b->index, int64_t(i));
        ASSERT_EQ(flat(*b), batches[i]) << "resumed at " << k << ", batch " << i << ", prefetch " << prefetch;
      }
    }
    if (prefetch) {  // the position after N batches does not depend on what was built ahead
      Chain plain = batched_chain(0);
      for (int i = 0; i < 50; ++i) plain.next_batch();
      EXPECT_EQ(plain.position(), positions.back());
    }
  }
}

TEST(DataResume, APositionTranslatesToAnotherProcessCount) {
  Chain global = batched_chain(0);
  for (int i = 0; i < 5; ++i) global.next_batch();
  const std::string position = global.position();
  const Batch whole = *global.next_batch();
  for (int64_t index = 0; index < 4; ++index) {
    Chain share = batched_chain(0, {index, 4});
    share.resume(position);
    const Batch mine = *share.next_batch();
    ASSERT_EQ(mine.tokens.shape()[0], 1);
    const int64_t width = whole.tokens.shape()[1];
    EXPECT_TRUE(std::equal(mine.tokens.data<int64_t>(), mine.tokens.data<int64_t>() + width,
                           whole.tokens.data<int64_t>() + index * width));
  }
}

TEST(DataResume, AChangedChainIsRefusedNamingTheChange) {
  Chain chain = batched_chain(0);
  chain.next_batch();
  const std::string position = chain.position();
  Chain other = Chain::records(token_documents(), {.epochs = 0});
  other.shuffle(6, 0).pack(12).shuffle(9, 7).batch(4);
  const std::string e = error_of([&] { other.resume(position); });
  EXPECT_NE(e.find("stage 1 (shuffle).seed: 5, now 6"), std::string::npos) << e;
  Chain fewer = Chain::records(token_documents(), {.epochs = 0});
  fewer.pack(12).batch(4);
  EXPECT_NE(error_of([&] { fewer.resume(position); }).find("stages: 4 entries, now 2"), std::string::npos);
  EXPECT_NE(error_of([&] { fewer.resume("{\"format\": 1}"); }).find("not a version-1"), std::string::npos);
}

TEST(DataResume, AChangedFileIsRefused) {
  DataDir dir("changed");
  dir.write("t.txt", "a\nb\nc\n");
  Chain chain = Chain::text_files({dir.path("t.txt")}, TextUnit::line);
  chain.next_record();
  const std::string position = chain.position();
  dir.write("t.txt", "a\nb\nC\n");
  Chain changed = Chain::text_files({dir.path("t.txt")}, TextUnit::line);
  const std::string e = error_of([&] { changed.resume(position); });
  EXPECT_NE(e.find("stage 0 (text).files[0].xxh3"), std::string::npos) << e;
}

TEST(DataStages, QualityPredicatesDropAndCount) {
  std::vector<Record> records(4);
  records[0].text = "A fine sentence of words.";
  records[1].text = "12345 67890 !!!";
  records[2].text = "same line\nsame line\nsame line\nother";
  records[3].text = "tiny";
  Chain chain = Chain::records(records);
  chain.cache({.enabled = false});  // these stages' own counts, not the cache's
  chain.quality({.min_chars = 5, .min_letter_fraction = 0.5, .max_repeated_line_fraction = 0.3});
  EXPECT_EQ(texts(drain_records(chain)), (std::vector<std::string>{records[0].text}));
  EXPECT_EQ(chain.stats()[1].dropped, 3);
  EXPECT_EQ(chain.stats()[1].records_in, 4);
}

TEST(DataStages, StripTagsTurnsTaggedTokensIntoPlainText) {
  // Two sentences of the Brown corpus's file ca01 as the file holds them.
  std::vector<Record> records(2);
  records[0].text =
      "\n\n\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd Friday/nr an/at "
      "investigation/nn of/in Atlanta's/np$ recent/jj primary/nn election/nn produced/vbd ``/`` no/at "
      "evidence/nn ''/'' that/cs any/dti irregularities/nns took/vbd place/nn ./.\n\n\n";
  records[1].text =
      "\t``/`` Only/rb a/at relative/jj handful/nn (/( such/jj )/) was/bedz received/vbn ''/'' ,/, "
      "the/at jury/nn said/vbd ;/. 1/2/cd inch/nn ?/.\n\n\tNext/ap line/nn !/.";
  Chain chain = Chain::records(records);
  chain.strip_tags();
  EXPECT_EQ(texts(drain_records(chain)),
            (std::vector<std::string>{
                "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary "
                "election produced \"no evidence\" that any irregularities took place.",
                "\"Only a relative handful (such) was received\", the jury said; 1/2 inch?\nNext line!"}));
  EXPECT_NE(chain.show().find("{\"separator\":\"/\",\"stage\":\"strip_tags\"}"), std::string::npos)
      << chain.show();
  EXPECT_NE(error_of([] { Chain::records({}).strip_tags({"//"}); }).find("expected one character"),
            std::string::npos);
}

TEST(DataStages, MapAndFilterRunInOrder) {
  Chain chain = Chain::records(numbered(10));
  chain.filter("even", [](const Record& r) { return std::stoi(r.text) % 2 == 0; }).map("tag", [](Record r) {
    r.text += "!";
    return r;
  });
  EXPECT_EQ(texts(drain_records(chain)), (std::vector<std::string>{"0!", "2!", "4!", "6!", "8!"}));
  EXPECT_NE(chain.show().find("{\"name\":\"tag\",\"stage\":\"map\"}"), std::string::npos) << chain.show();
}

TEST(DataStages, StageOrderMistakesAreRefused) {
  Chain chain = Chain::records(token_documents());
  chain.pack(8).batch(2);
  EXPECT_NE(error_of([&] { chain.pack(4); }).find("already ends in batch"), std::string::npos);
  EXPECT_NE(error_of([&] { chain.next_record(); }).find("use next_batch"), std::string::npos);
  Chain unpacked = Chain::records(numbered(3));
  unpacked.batch(2);
  EXPECT_NE(error_of([&] { unpacked.next_batch(); }).find("records[0] is not packed"), std::string::npos);
  EXPECT_NE(error_of([&] {
              Chain::records(numbered(3)).batch(3, {0, 2});
            }).find("does not divide among 2"),
            std::string::npos);
  Chain packed = Chain::records(token_documents());
  packed.pack(8);
  EXPECT_NE(error_of([&] { packed.shuffle(1, 0); }).find("and pack does not; give a window"),
            std::string::npos);
}

}  // namespace
}  // namespace dew::data

namespace dew::data {
namespace {

std::vector<Record> whole_documents() {
  std::vector<Record> docs = token_documents();
  for (Record& d : docs) d.continues = false;
  return docs;
}

TEST(DataPack, FirstFitPlacesWholeDocumentsAndResumes) {
  const int64_t T = 16;
  const size_t length = T + 1;
  Chain chain = Chain::records(whole_documents());
  chain.pack_first_fit(T, 16);
  std::vector<Record> windows = drain_records(chain);
  // Every document (cut to window-sized pieces) appears whole, once, with positions from its offset.
  std::multiset<std::vector<int32_t>> pieces, found;
  int64_t total = 0;
  for (const Record& d : whole_documents()) {
    total += int64_t(d.tokens.size());
    for (size_t at = 0; at < d.tokens.size(); at += length)
      pieces.insert(std::vector<int32_t>(d.tokens.begin() + long(at),
                                         d.tokens.begin() + long(std::min(d.tokens.size(), at + length))));
  }
  int64_t real = 0;
  for (const Record& w : windows) {
    ASSERT_EQ(w.tokens.size(), length);
    for (size_t t = 0; t < length;) {
      const int32_t segment = w.segment_ids[t];
      size_t end = t;
      while (end < length && w.segment_ids[end] == segment) ++end;
      if (segment != 0) {
        found.insert(std::vector<int32_t>(w.tokens.begin() + long(t), w.tokens.begin() + long(end)));
        EXPECT_EQ(w.positions[t] % int32_t(length), 0) << "a piece starts at its offset in the document";
        real += int64_t(end - t);
      }
      t = end;
    }
  }
  EXPECT_EQ(found, pieces);
  EXPECT_EQ(real, total);
  EXPECT_EQ(chain.stats()[1].padding_tokens, int64_t(windows.size() * length) - total);
  // Resuming at every window continues exactly.
  Chain again = Chain::records(whole_documents());
  again.pack_first_fit(T, 16);
  std::vector<std::string> positions;
  for (size_t i = 0; i < windows.size(); ++i) {
    positions.push_back(again.position());
    again.next_record();
  }
  for (size_t k = 0; k < positions.size(); ++k) {
    Chain resumed = Chain::records(whole_documents());
    resumed.pack_first_fit(T, 16);
    resumed.resume(positions[k]);
    for (size_t i = k; i < windows.size(); ++i)
      ASSERT_EQ(resumed.next_record()->tokens, windows[i].tokens) << k;
  }
  Chain pieces_chain = Chain::records(token_documents());
  pieces_chain.pack_first_fit(T);
  EXPECT_NE(error_of([&] { drain_records(pieces_chain); }).find("first-fit packing places whole documents"),
            std::string::npos);
}

}  // namespace
}  // namespace dew::data
