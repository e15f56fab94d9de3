// The MPI communicator under mpirun (2 and 4 ranks, tests/CMakeLists.txt): every rank draws its
// contribution from Philox by its rank, so each can compute every other's and the expected results
// locally — the fixed-order sums bit for bit, the gathers and broadcasts exactly. Only EXPECTs: a rank
// that left a test early would leave the others waiting in a collective.
#include <dew/parallel.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

namespace dew::parallel {
namespace {

Tensor contribution(int rank, int64_t n, DType dtype, uint64_t seed) {
  Tensor t = Tensor::empty({n}, dtype);
  fill_normal(t, {seed, uint64_t(rank), 0}, 0, 1);
  return t;
}

template <class T>
std::vector<double> expected_sum(int ranks, int64_t n, DType dtype, uint64_t seed, int64_t from,
                                 int64_t count) {
  std::vector<Tensor> parts;
  std::vector<const T*> pointers;
  for (int r = 0; r < ranks; ++r) parts.push_back(contribution(r, n, dtype, seed));
  for (const Tensor& p : parts) pointers.push_back(p.data<T>() + from);
  std::vector<T> out(static_cast<size_t>(count));
  fixed_tree_sum(pointers, out.data(), count);
  return std::vector<double>(out.begin(), out.end());
}

class Mpi : public ::testing::Test {
 protected:
  std::unique_ptr<Communicator> comm_ = mpi_world();
};

TEST_F(Mpi, AllReduceIsTheFixedTreeSumOnEveryRank) {
  EXPECT_GE(comm_->size(), 2);
  for (int64_t n : {1, 3, 1000, 4099}) {
    Tensor f = contribution(comm_->rank(), n, DType::f32, 10 + uint64_t(n));
    comm_->all_reduce_sum(f);
    EXPECT_EQ(f.to_f64_vector(), expected_sum<float>(comm_->size(), n, DType::f32, 10 + uint64_t(n), 0, n))
        << n;
    Tensor d = contribution(comm_->rank(), n, DType::f64, 20 + uint64_t(n));
    comm_->all_reduce_sum(d);
    EXPECT_EQ(d.to_f64_vector(), expected_sum<double>(comm_->size(), n, DType::f64, 20 + uint64_t(n), 0, n))
        << n;
  }
}

TEST_F(Mpi, ReduceScatterGivesEachRankItsShardOfTheSum) {
  const int64_t shard = 257, n = shard * comm_->size();
  const Tensor in = contribution(comm_->rank(), n, DType::f32, 30);
  Tensor out = Tensor::empty({shard}, DType::f32);
  comm_->reduce_scatter_sum(in, out);
  EXPECT_EQ(out.to_f64_vector(),
            expected_sum<float>(comm_->size(), n, DType::f32, 30, comm_->rank() * shard, shard));
}

TEST_F(Mpi, ReduceToOneRankIsTheFixedTreeSumThere) {
  const int64_t n = 3001;
  for (int root = 0; root < comm_->size(); ++root) {
    Tensor t = contribution(comm_->rank(), n, DType::f32, 90 + uint64_t(root));
    const std::vector<double> before = t.to_f64_vector();
    comm_->reduce_sum(t, t, root);
    if (comm_->rank() == root)
      EXPECT_EQ(t.to_f64_vector(),
                expected_sum<float>(comm_->size(), n, DType::f32, 90 + uint64_t(root), 0, n));
    else
      EXPECT_EQ(t.to_f64_vector(), before) << "a rank but the root keeps its own";
  }
}

TEST_F(Mpi, AllGatherAndBroadcastMoveExactly) {
  const Tensor in = contribution(comm_->rank(), 100, DType::bf16, 40);
  Tensor out = Tensor::empty({100 * comm_->size()}, DType::bf16);
  comm_->all_gather(in, out);
  std::vector<double> want;
  for (int r = 0; r < comm_->size(); ++r) {
    const std::vector<double> part = contribution(r, 100, DType::bf16, 40).to_f64_vector();
    want.insert(want.end(), part.begin(), part.end());
  }
  EXPECT_EQ(out.to_f64_vector(), want);
  const int root = comm_->size() - 1;
  Tensor t = contribution(comm_->rank(), 50, DType::f32, 50);
  comm_->broadcast(t, root);
  EXPECT_EQ(t.to_f64_vector(), contribution(root, 50, DType::f32, 50).to_f64_vector());
}

// Collectives started in one order on every rank may be waited for in another.
TEST_F(Mpi, NonBlockingCollectivesCompleteInAnyOrder) {
  Tensor a = contribution(comm_->rank(), 3000, DType::f32, 60);
  const Tensor in = contribution(comm_->rank(), 10, DType::f64, 70);
  Tensor gathered = Tensor::empty({10 * comm_->size()}, DType::f64);
  std::unique_ptr<Work> sum = comm_->start_all_reduce_sum(a);
  std::unique_ptr<Work> gather = comm_->start_all_gather(in, gathered);
  gather->wait();
  sum->wait();
  sum->wait();  // a second wait returns at once
  EXPECT_EQ(a.to_f64_vector(), expected_sum<float>(comm_->size(), 3000, DType::f32, 60, 0, 3000));
  EXPECT_EQ(gathered.to_f64_vector()[size_t(10 * comm_->rank())], in.to_f64_vector()[0]);
  comm_->barrier();
}

// Many reductions in flight, polled by each rank at its own pace and waited for in reverse order:
// their second phases still start in one order on every rank (NOTE [ordered second phases]), so each
// completes with its exact sum.
TEST_F(Mpi, ManyReductionsInFlightPolledAtEachRanksOwnPace) {
  constexpr int kCount = 12;
  std::vector<Tensor> tensors;
  std::vector<std::unique_ptr<Work>> works;
  for (int k = 0; k < kCount; ++k) {
    tensors.push_back(contribution(comm_->rank(), 5000 + 997 * k, DType::f32, 80 + uint64_t(k)));
    works.push_back(comm_->start_all_reduce_sum(tensors.back()));
    for (int poll = 0; poll < comm_->rank() * 3; ++poll) works[size_t(k / 2)]->test();
  }
  for (int k = kCount - 1; k >= 0; --k) works[size_t(k)]->wait();
  for (int k = 0; k < kCount; ++k) {
    const int64_t n = 5000 + 997 * k;
    EXPECT_EQ(tensors[size_t(k)].to_f64_vector(),
              expected_sum<float>(comm_->size(), n, DType::f32, 80 + uint64_t(k), 0, n))
        << k;
    EXPECT_TRUE(works[size_t(k)]->test());
  }
}

// A 2-D grid of ranks: pairs of neighbours (its rows) and, across them, the ranks with the same
// place in their pair (its columns, ranked backwards by key); each group's collectives are its own.
TEST_F(Mpi, SplitMakesGroupsByColorRankedByKey) {
  const int r = comm_->rank(), columns = comm_->size() / 2;
  const std::unique_ptr<Communicator> row = comm_->split(r / 2, r);
  const std::unique_ptr<Communicator> column = comm_->split(r % 2, -r);
  EXPECT_EQ(row->size(), 2);
  EXPECT_EQ(row->rank(), r % 2);
  EXPECT_EQ(column->size(), columns);
  EXPECT_EQ(column->rank(), columns - 1 - r / 2);
  Tensor t = Tensor::from_values({double(r)}, {1}, DType::f64);
  row->all_reduce_sum(t);
  EXPECT_EQ(t.to_f64_vector()[0], double(r / 2 * 4 + 1)) << "the pair's two ranks";
  EXPECT_THROW(comm_->split(-1, 0), Error);
}

}  // namespace
}  // namespace dew::parallel
