// The communicator's contract in one process: the fixed order of every sum (visible where the order
// changes a float sum's bits), the single-process collectives, and refusals by name. The MPI
// communicator's collectives run under mpirun in tests/parallel/mpi/.
#include <dew/parallel.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew::parallel {
namespace {

using testing::error_of;

TEST(FixedTreeSum, AddsAdjacentPairsLevelByLevel) {
  // In f32, 1e8 + 1 rounds back to 1e8, so the order of a sum shows in its bits: three parts
  // ((p0 + p1) + p2), four ((p0 + p1) + (p2 + p3)), five (((p0 + p1) + (p2 + p3)) + p4).
  const float three[3] = {1e8f, 1.0f, -1e8f};
  float out = -1;
  fixed_tree_sum({&three[0], &three[1], &three[2]}, &out, 1);
  EXPECT_EQ(out, 0.0f);
  const float four[4] = {1.0f, 1e8f, -1e8f, 1.0f};  // (1e8) + (-1e8) = 0; left to right: 0 + 1 = 1
  fixed_tree_sum({&four[0], &four[1], &four[2], &four[3]}, &out, 1);
  EXPECT_EQ(out, 0.0f);
  const float five[5] = {1.0f, 1e8f, -1e8f, 0.0f, 1.0f};  // ((1 + 1e8) + (-1e8 + 0)) + 1 = 0 + 1
  fixed_tree_sum({&five[0], &five[1], &five[2], &five[3], &five[4]}, &out, 1);
  EXPECT_EQ(out, 1.0f);
}

TEST(FixedTreeSum, IsTheSameElementByElementWhateverTheLength) {
  std::vector<double> a(5000), b(5000), c(5000), out(5000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.1 * double(i), b[i] = 1.0 / double(i + 1), c[i] = -double(i);
  fixed_tree_sum({a.data(), b.data(), c.data()}, out.data(), 5000);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(out[i], (a[i] + b[i]) + c[i]) << i;
}

TEST(SingleProcess, CollectivesOfOneRank) {
  const std::unique_ptr<Communicator> comm = single_process();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  Tensor t = Tensor::from_values({1, 2, 3}, {3}, DType::f32);
  comm->all_reduce_sum(t);
  EXPECT_EQ(t.to_f64_vector(), std::vector<double>({1, 2, 3}));
  Tensor gathered = Tensor::empty({3}, DType::f32);
  comm->all_gather(t, gathered);
  EXPECT_EQ(gathered.to_f64_vector(), t.to_f64_vector());
  comm->broadcast(t, 0);
  comm->barrier();
}

TEST(SingleProcess, BadCallsAreRefusedByName) {
  const std::unique_ptr<Communicator> comm = single_process();
  Tensor half = Tensor::zeros({4}, DType::bf16);
  EXPECT_NE(error_of([&] { comm->all_reduce_sum(half); }).find("expected a contiguous f32 or f64 tensor"),
            std::string::npos);
  Tensor t = Tensor::zeros({4}, DType::f32);
  EXPECT_NE(error_of([&] { comm->broadcast(t, 1); }).find("root 1; expected a rank from 0 to 0"),
            std::string::npos);
  Tensor wrong = Tensor::zeros({3}, DType::f32);
  EXPECT_NE(error_of([&] { comm->all_gather(t, wrong); }).find("out 1 times in's elements"),
            std::string::npos);
  Tensor strided = Tensor::zeros({2, 3}, DType::f32).transpose(0, 1);
  EXPECT_NE(error_of([&] { comm->broadcast(strided, 0); }).find("expected a contiguous tensor on cpu"),
            std::string::npos);
  if (!built_with_mpi()) {
    EXPECT_NE(error_of([] { mpi_world(); }).find("this build of Dew has no MPI"), std::string::npos);
  }
}

}  // namespace
}  // namespace dew::parallel
