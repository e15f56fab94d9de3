// token_logprobs: log-softmax in double over the raw logits (before penalties and temperature, as
// OpenAI's API and vLLM report them), the chosen token's and the top k.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "serve/sequence.h"

namespace dew::serve {

void token_logprobs(std::span<const float> logits, int64_t token, int64_t k, TokenEvent& event) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - top);
  const double lse = top + std::log(sum);
  event.chosen = {token, double(logits[size_t(token)]) - lse};
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  k = std::min<int64_t>(k, int64_t(order.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  });
  event.top.clear();
  for (int64_t i = 0; i < k; ++i)
    event.top.push_back({order[size_t(i)], double(logits[size_t(order[size_t(i)])]) - lse});
}

}  // namespace dew::serve
