// Byte-moving code (strided copies, gathers, selections) on the host and in CUDA kernels: an element
// as an unsigned integer of its size. Plain C++, so kernel files can include it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dew::detail {

// Calls f(E{}) with E the unsigned integer of element_size bytes (1, 2, 4 or 8).
template <class F>
decltype(auto) visit_element_size(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

}  // namespace dew::detail
