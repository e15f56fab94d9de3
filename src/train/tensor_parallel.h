// Tensor parallelism's two collectives (models.h TensorParallel) over a communicator's ranks, on the
// tape as custom functions; the sums are the communicator's, in its fixed order (parallel.h).
#pragma once

#include <dew/models.h>
#include <dew/parallel.h>

#include <utility>

namespace dew::train {

class GroupTensorParallel final : public TensorParallel {
 public:
  explicit GroupTensorParallel(parallel::Communicator& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  Tensor reduce(const Tensor& x) override;
  Tensor copy(const Tensor& x) override;
  // The bytes this rank's all-reduces sent since the last call (2 (P - 1) / P of each sum's).
  int64_t take_sent_bytes() { return std::exchange(sent_bytes_, 0); }

 private:
  Tensor sum(const Tensor& x);  // untaped: x summed over the group (in f32 or wider), in x's dtype

  parallel::Communicator& group_;
  int64_t sent_bytes_ = 0;
};

// The whole of `name` (a parameter, or optimizer state of its shape) from the group's parts
// (tensor_parallel_part's slices, in rank order), on every rank of the group.
Tensor gather_whole(parallel::Communicator& group, const std::string& name, const Tensor& part);

}  // namespace dew::train
