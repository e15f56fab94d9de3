// Durations as a person reads them in a progress line: h:mm:ss.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace dew::train {

inline std::string clock_time(double seconds) {
  const int64_t s = std::isfinite(seconds) ? int64_t(seconds + 0.5) : 0;
  return fmt::format("{}:{:02d}:{:02d}", s / 3600, s / 60 % 60, s % 60);
}

}  // namespace dew::train
