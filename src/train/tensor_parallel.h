// Tensor parallelism's two collectives (models.h TensorParallel) over a communicator's ranks, on the
// tape as custom functions; the sums are the communicator's, in its fixed order (parallel.h).
#pragma once

#include <dew/models.h>
#include <dew/parallel.h>

namespace dew::train {

class GroupTensorParallel final : public TensorParallel {
 public:
  explicit GroupTensorParallel(parallel::Communicator& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  Tensor reduce(const Tensor& x) override;
  Tensor copy(const Tensor& x) override;

 private:
  Tensor sum(const Tensor& x);  // untaped: x summed over the group (in f32 or wider), in x's dtype

  parallel::Communicator& group_;
};

// The whole of `name` (a parameter, or optimizer state of its shape) from the group's parts
// (tensor_parallel_part's slices, in rank order), on every rank of the group.
Tensor gather_whole(parallel::Communicator& group, const std::string& name, const Tensor& part);

}  // namespace dew::train
