// ParameterGathers (parameter_gathers.h): ZeRO-3's gathers and releases around each layer's use.
#include "train/parameter_gathers.h"

#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>

#include <chrono>

#include "core/autograd.h"

namespace dew::train {

ParameterGathers::ParameterGathers(const std::vector<Param>& params, const std::vector<int>& owner,
                                   parallel::Communicator& world)
    : params_(params), owner_(owner), world_(world) {
  DEW_REQUIRE(owner.size() == params.size(), "[train] {} owners for {} parameters", owner.size(),
              params.size());
  int64_t layers = 0;
  for (const Param& p : params) {
    layer_of_.push_back(layer_of_parameter(p.name));
    layers = std::max(layers, layer_of_.back() + 1);
  }
  layers_.resize(size_t(layers));
  for (size_t i = 0; i < params.size(); ++i) {
    unit(layer_of_[i]).members.push_back(i);
    Tensor leaf = params[i].tensor;
    if (layer_of_[i] >= 0 && leaf.requires_grad())
      set_gradient_ready_hook(
          leaf, [this, i] { gradient_whole(i); }, this);
  }
}

ParameterGathers::~ParameterGathers() {
  for (const Param& p : params_) {
    Tensor leaf = p.tensor;
    if (leaf.requires_grad()) set_gradient_ready_hook(leaf, {}, this);
  }
}

void ParameterGathers::begin_pass(const std::map<std::string, Tensor>& read) {
  DEW_REQUIRE(read_.empty(), "[train] a pass over the sharded parameters began inside another");
  sent_bytes_ = 0, wait_seconds_ = 0;  // counted per pass
  for (const Param& p : params_) {
    const auto it = read.find(p.name);
    DEW_REQUIRE(it != read.end(), "[train] the model a pass reads has no parameter {}", p.name);
    read_.push_back(it->second);
  }
  wait(root_);
}

void ParameterGathers::end_pass() {
  release(root_);
  for (Unit& u : layers_) release(u);
  read_.clear();
}

ParameterCast ParameterGathers::cast_for_pass() const {
  std::map<std::string, int> owner_of;
  for (size_t i = 0; i < params_.size(); ++i) owner_of[params_[i].name] = owner_[i];
  return [owner_of, rank = world_.rank()](const std::string& name, const Tensor& t, DType dtype) {
    const auto it = owner_of.find(name);  // a buffer, held by every rank, is not among them
    return it == owner_of.end() || it->second == rank ? cast(t, dtype) : deferred_cast(t, dtype);
  };
}

Tensor ParameterGathers::enter(int64_t layer, const Tensor& x) {
  DEW_REQUIRE(!read_.empty(),
              "[train] a forward entered layer {} outside a pass over the sharded parameters (shard = "
              "\"full\": ParameterGathers::begin_pass first)",
              layer);
  const int64_t L = int64_t(layers_.size());
  DEW_REQUIRE(layer >= 0 && layer <= L, "[train] a forward entered layer {} of a model with {} layers", layer,
              L);
  // Backward begins with the last layer: a taped forward keeps it.
  const bool taped = grad_enabled() && detail::needs_grad(x);
  if (layer > 0 && !(layer == L && taped)) release(unit(layer - 1));
  if (layer < L) {
    wait(unit(layer));
    if (layer + 1 < L) start(unit(layer + 1));
  }
  return backward_hook(x, [this, layer] {
    if (layer > 0) gather_for_backward(layer - 1);
  });
}

void ParameterGathers::gather_for_backward(int64_t layer) {
  Unit& u = unit(layer);
  wait(u);
  u.pending = 0;
  for (const size_t i : u.members) u.pending += params_[i].tensor.requires_grad();
  if (layer > 0) start(unit(layer - 1));
}

void ParameterGathers::gradient_whole(size_t param) {
  if (read_.empty()) return;  // a backward outside a pass: nothing gathered
  Unit& u = unit(layer_of_[param]);
  if (u.gathered && u.pending > 0 && --u.pending == 0) release(u);
}

void ParameterGathers::start(Unit& u) {
  if (u.gathered || !u.in_flight.empty()) return;
  const int rank = world_.rank();
  for (const size_t i : u.members)
    if (owner_[i] != rank) read_[i].acquire_storage();
  for (const size_t i : u.members) {
    Tensor t = read_[i];
    u.in_flight.push_back(world_.start_broadcast(t, owner_[i]));
    if (owner_[i] == rank)
      sent_bytes_ += int64_t(world_.size() - 1) * t.numel() * int64_t(dtype_size(t.dtype()));
  }
}

void ParameterGathers::wait(Unit& u) {
  start(u);
  const auto began = std::chrono::steady_clock::now();
  for (const auto& work : u.in_flight) work->wait();
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  u.in_flight.clear();
  u.gathered = true;
}

void ParameterGathers::release(Unit& u) {
  for (const auto& work : u.in_flight) work->wait();  // its bytes are being written
  u.in_flight.clear();
  if (read_.empty()) return;
  for (const size_t i : u.members)
    if (owner_[i] != world_.rank()) read_[i].release_storage();
  u.gathered = false;
  u.pending = 0;
}

int64_t ParameterGathers::take_sent_bytes() {
  return std::exchange(sent_bytes_, 0);
}

double ParameterGathers::take_wait_seconds() {
  return std::exchange(wait_seconds_, 0.0);
}

GatheredPass::GatheredPass(ParameterGathers* gathers, const std::map<std::string, Tensor>& read)
    : gathers_(gathers) {
  if (gathers_) gathers_->begin_pass(read);
}

GatheredPass::~GatheredPass() {
  try {
    end();
  } catch (...) {  // a collective that failed meanwhile: the error in flight says more
  }
}

void GatheredPass::end() {
  if (gathers_) std::exchange(gathers_, nullptr)->end_pass();
}

}  // namespace dew::train
