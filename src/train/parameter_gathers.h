// ZeRO-3 ([parallel] shard = "full", docs/parallel.md): each rank keeps the bytes of the parameters it
// owns (owners(), whole parameters) and of no other between their uses; the others arrive released
// (the Trainer builds and loads a rank's own alone: HeldParameters). Not the optimizer's or the
// gradients' sharding: the gradient reducer and the owners' optimizers do that as for ZeRO-2.
#pragma once

#include <dew/models.h>
#include <dew/parallel.h>
#include <dew/train.h>

#include <memory>
#include <vector>

namespace dew::train {

// NOTE [parameter gathers]: a pass — a step's forwards and backwards, an evaluation — begins with the
// parameters outside the layers gathered (each broadcast from its owner into bytes acquired again,
// NOTE [released storage] in tensor.h) and ends with every parameter it gathered released. Between,
// the model's forward enters each layer (LayerBoundaries): the layer is gathered (its gather started
// at the previous layer's entry), the next layer's gather starts, the previous layer is released.
// Backward reaches each layer's boundary (backward_hook) and gathers the layer below it, starting
// the one below that; a layer is released once every gradient of its parameters is whole. The values
// gathered are the owners' bits, so a sharded pass computes what an unsharded one does.
class ParameterGathers final : public LayerBoundaries {
 public:
  ParameterGathers(const std::vector<Param>& params, const std::vector<int>& owner,
                   parallel::Communicator& world);
  ~ParameterGathers() override;  // hooks removed
  ParameterGathers(const ParameterGathers&) = delete;
  ParameterGathers& operator=(const ParameterGathers&) = delete;

  // A pass over the tensors the forwards read, by parameter name: the parameters themselves, or the
  // low-precision copies made with cast_for_pass(). Gathers those outside the layers.
  void begin_pass(const std::map<std::string, Tensor>& read);
  // Every tensor of the pass this rank does not own released; what is in flight completed first.
  void end_pass();
  // For a model's to(dtype): this rank's own parameters cast, the others' casts deferred to their
  // gathers (deferred_cast), so no rank reads a parameter it does not hold.
  ParameterCast cast_for_pass() const;
  Tensor enter(int64_t layer, const Tensor& x) override;
  // What the gathers of this pass sent from this rank, and how long it waited for them.
  int64_t take_sent_bytes();
  double take_wait_seconds();

 private:
  struct Unit {
    std::vector<size_t> members;  // indices into params_
    std::vector<std::unique_ptr<parallel::Work>> in_flight;
    bool gathered = false;
    int64_t pending = 0;  // backward: members whose gradient is not yet whole
  };
  Unit& unit(int64_t layer) { return layer < 0 ? root_ : layers_[size_t(layer)]; }
  void start(Unit& u);
  void wait(Unit& u);
  void release(Unit& u);
  void gather_for_backward(int64_t layer);
  void gradient_whole(size_t param);

  const std::vector<Param>& params_;
  std::vector<int> owner_;
  parallel::Communicator& world_;
  std::vector<int64_t> layer_of_;  // per parameter; -1: outside the layers
  std::vector<Tensor> read_;       // the pass's tensors, per parameter; empty outside a pass
  Unit root_;
  std::vector<Unit> layers_;
  int64_t sent_bytes_ = 0;
  double wait_seconds_ = 0;
};

// begin_pass .. end_pass over a scope; nothing when `gathers` is null.
class GatheredPass {
 public:
  GatheredPass(ParameterGathers* gathers, const std::map<std::string, Tensor>& read);
  ~GatheredPass();  // end(); its own errors dropped (an exception is already on its way)
  GatheredPass(const GatheredPass&) = delete;
  GatheredPass& operator=(const GatheredPass&) = delete;
  void end();  // once; later calls (and the destructor's) do nothing

 private:
  ParameterGathers* gathers_;
};

}  // namespace dew::train
