// back_with_huge_pages: memory the kernel backed with 4 KiB pages comes back in 2 MiB pages, its
// contents unchanged. Observed through /proc/self/smaps; skipped where the kernel cannot (THP off, or
// a kernel before MADV_COLLAPSE).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <string>

#include "core/allocator.h"
#include "huge_pages.h"

namespace dew {
namespace {

using testing::anon_huge_kb_at;
using testing::why_no_collapse;

TEST(HugePages, MemoryInSmallPagesComesBackInHugeOnesWithItsContents) {
  if (const std::string why = why_no_collapse(); !why.empty()) GTEST_SKIP() << why;
  constexpr size_t kMiB = size_t(1) << 20;
  // 8 MiB at a 2 MiB boundary inside a mapping of 12, in small pages (the kernel's default where THP is
  // `madvise`), with a page of no access at each end so that no neighbouring mapping merges with it.
  constexpr size_t kPage = 4096;
  auto* mapping = static_cast<char*>(
      mmap(nullptr, 12 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mapping, MAP_FAILED);
  ASSERT_EQ(mprotect(mapping, kPage, PROT_NONE), 0);
  ASSERT_EQ(mprotect(mapping + 12 * kMiB - kPage, kPage, PROT_NONE), 0);
  auto* region = reinterpret_cast<uint32_t*>((reinterpret_cast<uintptr_t>(mapping) + kPage + 2 * kMiB - 1) &
                                             ~uintptr_t(2 * kMiB - 1));
  const size_t words = 8 * kMiB / sizeof(uint32_t);
  for (size_t i = 0; i < words; ++i) region[i] = uint32_t(i * 2654435761u);
  const int64_t before = anon_huge_kb_at(region);
  ASSERT_GE(before, 0) << "no mapping in /proc/self/smaps holds the region";
  ASSERT_LT(before, 8 * 1024) << "the region was in huge pages already; nothing to observe";

  // A range inside the region (not aligned) names the huge pages it touches: all four.
  detail::back_with_huge_pages(region + 100, 8 * kMiB - 800);
  EXPECT_EQ(anon_huge_kb_at(region) - before, 8 * 1024);
  size_t wrong = 0;
  for (size_t i = 0; i < words; ++i) wrong += region[i] != uint32_t(i * 2654435761u);
  EXPECT_EQ(wrong, 0u);
  munmap(mapping, 12 * kMiB);
}

}  // namespace
}  // namespace dew
