// Where packed documents start, as the recurrence family's ops read segment ids (B,T): a token starts
// a document when it is not the row's first and its id differs from the previous token's. Nothing a
// layer carries along time (a state, a convolution's window) crosses a start; the inputs before the
// row (an initial state or cache) belong to its first document.
#pragma once

#include <cstdint>
#include <vector>

namespace dew::ops {

// Whether token t of batch row b starts a new document; segments is (B,T) contiguous, or null (one
// document per row).
inline bool document_starts(const int64_t* segments, int64_t T, int64_t b, int64_t t) {
  return segments && t > 0 && segments[b * T + t] != segments[b * T + t - 1];
}

// The first token of the document each token of row b belongs to (T values).
inline std::vector<int64_t> document_start_of(const int64_t* segments, int64_t T, int64_t b) {
  std::vector<int64_t> start(static_cast<size_t>(T), 0);
  for (int64_t t = 1; t < T; ++t)
    start[size_t(t)] = document_starts(segments, T, b, t) ? t : start[size_t(t - 1)];
  return start;
}

}  // namespace dew::ops
