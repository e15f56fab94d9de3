// What every optimizer shares: the parameters and their groups, per-parameter state buffers, the
// state's names for checkpoints, and the default grouping.
#include <dew/error.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include <cstring>

namespace dew::train {

bool is_embedding_table(const std::string& name) {
  for (const char* table : {"embed_tokens", "wte", "wpe", "backbone.embeddings"})
    if (name.find(table) != std::string::npos) return true;
  return false;
}

std::vector<Param> default_groups(std::map<std::string, Tensor>& parameters, double weight_decay) {
  std::vector<Param> out;
  for (auto& [name, tensor] : parameters) {
    if (is_buffer(name)) continue;  // moved by the experts' load, not by gradients
    const bool decays = tensor.dim() >= 2 && !is_embedding_table(name);
    out.push_back({name, tensor, 1.0, decays ? weight_decay : 0.0});
  }
  return out;
}

Optimizer::Optimizer(std::vector<Param> params, std::vector<std::string> buffers)
    : params_(std::move(params)), buffer_names_(std::move(buffers)), buffers_(buffer_names_.size()) {
  for (const Param& p : params_)
    DEW_REQUIRE(p.tensor.defined() && p.tensor.dtype() == DType::f32 && p.tensor.is_contiguous(),
                "[optimizer] parameter {} is {}; expected a contiguous f32 tensor (the master weights)",
                p.name, p.tensor.defined() ? p.tensor.describe() : "undefined");
  for (std::vector<Tensor>& per_param : buffers_) per_param.resize(params_.size());
}

Tensor& Optimizer::buffer_tensor(size_t k, size_t i) {
  Tensor& b = buffers_[k][i];
  if (!b.defined()) b = Tensor::zeros(params_[i].tensor.shape(), DType::f32, params_[i].tensor.device());
  return b;
}

void Optimizer::zero_grad() {
  for (Param& p : params_) p.tensor.zero_grad();
}

std::map<std::string, Tensor> Optimizer::state() const {
  std::map<std::string, Tensor> out;
  for (size_t k = 0; k < buffers_.size(); ++k)
    for (size_t i = 0; i < params_.size(); ++i)
      if (buffers_[k][i].defined()) out[buffer_names_[k] + "." + params_[i].name] = buffers_[k][i];
  return out;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& state, int64_t steps) {
  DEW_REQUIRE(steps >= 0, "[optimizer] state of step {}; expected a count", steps);
  std::vector<std::vector<Tensor>> loaded(buffers_.size(), std::vector<Tensor>(params_.size()));
  size_t used = 0;
  for (size_t k = 0; k < buffers_.size(); ++k)
    for (size_t i = 0; i < params_.size(); ++i) {
      const auto it = state.find(buffer_names_[k] + "." + params_[i].name);
      if (it == state.end()) continue;
      DEW_REQUIRE(it->second.dtype() == DType::f32 && it->second.shape() == params_[i].tensor.shape(),
                  "[optimizer] state {} is {}; expected f32 of the parameter's shape {}", it->first,
                  it->second.describe(), params_[i].tensor.describe());
      loaded[k][i] = it->second.to(params_[i].tensor.device()).contiguous();
      ++used;
    }
  DEW_REQUIRE(used == state.size(),
              "[optimizer] the state holds {} tensors, {} of them for these parameters; "
              "expected the state of this model's optimizer",
              state.size(), used);
  buffers_ = std::move(loaded);
  steps_ = steps;
}

}  // namespace dew::train
