// Observing transparent huge pages from a test: how much of the mapping holding an address the kernel
// backs with 2 MiB pages (/proc/self/smaps), and why collapsing pages cannot work here, if it cannot.
#pragma once

#include <sys/utsname.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace dew::testing {

// The kB of huge pages backing the mapping that holds address p (-1: no such mapping).
inline int64_t anon_huge_kb_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto address = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = address >= begin && address < end;
      continue;
    }
    long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1) return kb;
  }
  return -1;
}

// Why the kernel here gives no transparent huge pages, or "" where it does.
inline std::string why_no_huge_pages() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes((std::istreambuf_iterator<char>(enabled)), std::istreambuf_iterator<char>());
  return modes.empty() || modes.find("[never]") != std::string::npos ? "transparent huge pages are off" : "";
}

// Why the kernel here cannot collapse pages (MADV_COLLAPSE), or "" where it can.
inline std::string why_no_collapse() {
  if (std::string why = why_no_huge_pages(); !why.empty()) return why;
  utsname u{};
  int major = 0, minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2 || major * 100 + minor < 601)
    return "the kernel predates MADV_COLLAPSE (6.1)";
  return "";
}

}  // namespace dew::testing
