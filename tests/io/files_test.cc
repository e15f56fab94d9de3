// Reading files: what is not a regular file is refused by kind, at once: a FIFO used to wait forever
// for a writer, and /dev/zero (or a link to it) was refused as "(Success)".
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "error_of.h"
#include "io/files.h"

namespace dew {
namespace {

TEST(Files, WhatIsNotARegularFileIsRefusedByKindWithoutWaiting) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "dew_files_kinds";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "model.safetensors").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir / "zero.safetensors");
  const auto refusal = [](const std::string& path) {
    return testing::error_of([&] { MappedFile file(path); });
  };
  EXPECT_NE(refusal(fifo).find(fifo + " is a FIFO; expected a regular file"), std::string::npos)
      << refusal(fifo);
  const std::string link = (dir / "zero.safetensors").string();
  EXPECT_NE(refusal(link).find(link + " is a character device; expected a regular file"), std::string::npos)
      << refusal(link);
  EXPECT_NE(refusal(dir.string()).find(" is a directory; expected a regular file"), std::string::npos);
  EXPECT_NE(refusal((dir / "missing").string()).find("cannot open (No such file or directory)"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
