// layer_of_parameter (models.h): the layer index in a parameter's name, as the families name them.
#include <dew/models.h>

#include <cctype>
#include <string_view>

namespace dew {

int64_t layer_of_parameter(const std::string& name) {
  // The number after "layers" (llama's model.layers.N, gemma3's model.language_model.layers.N),
  // "h" (gpt2) or "blocks" (dit), as a component of its own.
  std::string_view previous;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('.', start), name.size());
    const std::string_view part(name.data() + start, end - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (digits && (previous == "layers" || previous == "h" || previous == "blocks"))
      return std::stoll(std::string(part));
    previous = part;
    start = end + 1;
  }
  return -1;
}

}  // namespace dew
