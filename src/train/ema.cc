// The exponential moving average of the weights (train.h Ema), updated after each applied step.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/safetensors.h>
#include <dew/train.h>

#include <algorithm>

namespace dew::train {

Ema::Ema(const std::map<std::string, Tensor>& parameters, double decay, bool warmup)
    : decay_(decay), warmup_(warmup) {
  DEW_REQUIRE(decay > 0 && decay < 1,
              "[train] ema_decay {}; expected 0 < decay < 1 (0 in the config: no average)", decay);
  for (const auto& [name, p] : parameters) averages_[name] = p.detach().contiguous().clone();
}

void Ema::update(const std::map<std::string, Tensor>& parameters) {
  ++updates_;
  const double n = double(updates_);
  const double d = warmup_ ? std::min(decay_, (1 + n) / (10 + n)) : decay_;
  NoGrad no_grad;
  for (auto& [name, avg] : averages_) {
    const Tensor& p = parameters.at(name);
    // avg + (1 - d) (p - avg): one rounding per op, in the weights' f32.
    avg.copy_from(add(avg, mul(sub(p.detach(), avg), Tensor::full({}, 1 - d, avg.dtype(), avg.device()))));
  }
}

TrainedModel Ema::applied_to(const TrainedModel& model) const {
  TrainedModel out = model;
  for (auto& [name, p] : out.parameters()) {
    const auto it = averages_.find(name);
    DEW_REQUIRE(it != averages_.end(), "[train] the weight average holds no {}", name);
    p = it->second.clone();
  }
  return out;
}

void Ema::save(const std::string& path) const {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : averages_) tensors.push_back({name, t.to(Device::cpu())});
  tensors.push_back({"__ema_updates__", Tensor::from_values({double(updates_)}, {1}, DType::i64)});
  save_safetensors(path, tensors);
}

void Ema::load(const std::string& path) {
  const SafetensorsFile f = SafetensorsFile::open(path);
  for (auto& [name, avg] : averages_) {
    const SafetensorsEntry* e = f.find(name);
    DEW_REQUIRE(e && e->shape == avg.shape(), "{}: no average of {} of shape {}; it is another model's", path,
                name, shape_str(avg.shape()));
    avg.copy_from(f.load(name));
  }
  DEW_REQUIRE(f.find("__ema_updates__"), "{}: no update count; expected a file Ema::save wrote", path);
  updates_ = int64_t(f.load("__ema_updates__").to_f64_vector()[0]);
}

}  // namespace dew::train
