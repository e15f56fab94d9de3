// The Trainer's state for one run (trainer.cc, trainer_images.cc): the model and its optimizer, the
// weights' average, the counters a checkpoint holds, and the metrics file.
#pragma once

#include <dew/parallel.h>
#include <dew/train.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "io/file_lock.h"
#include "train/parameter_gathers.h"
#include "train/tensor_parallel.h"

namespace dew::train {

using Clock = std::chrono::steady_clock;

// Wall-clock seconds since the Unix epoch, for the metrics' timestamps.
inline double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One run's state: the model and its optimizer, the counters a checkpoint holds, and the metrics file.
struct Trainer::Run {
  std::unique_ptr<parallel::Communicator> world;  // every rank of the run, or this process
  // Tensor parallelism ([parallel] tensor = N): consecutive ranks split each model among them (the
  // tensor group); the ranks with the same place in their groups are the data-parallel replicas.
  std::unique_ptr<parallel::Communicator> tensor_group, replicas;
  std::unique_ptr<GroupTensorParallel> tensor;  // over tensor_group; the model's forwards use it
  std::vector<bool> tensor_split;               // per param: split among the tensor group
  DataParallel data_parallel;                   // over the replicas (`world` without tensor parallelism)
  std::vector<int64_t> peak_bytes_per_rank;     // data parallel: gathered for each log line
  // Data parallel: NOTE [heartbeats] (trainer.cc); the step it reports, and the thread writing it.
  std::atomic<int64_t> reported_step{0};
  std::jthread heartbeat;
  bool leader() const { return world->rank() == 0; }  // writes the run directory and reports
  TrainedModel model;
  std::optional<Ema> ema;  // the weights' average, with ema_decay
  std::vector<Param> params;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<ParameterGathers> gathers;  // ZeRO-3 (shard = "full"), entered by the model's forwards
  int64_t step = 0, skipped = 0, consecutive_skips = 0;
  int64_t tokens = 0;              // trained on so far: tokens, or an image model's images
  int64_t first_step = 0;          // where this process began (0, or the resumed checkpoint's step)
  std::unique_ptr<FileLock> lock;  // the run directory's, held until run() returns
  std::string last_checkpoint;     // the newest committed one: intact whatever goes wrong next
  std::ofstream metrics;
  double flops_per_token = 0;  // per image for an image model
  Clock::time_point started = Clock::now();
  StepProfiler profiler;
  Outcome outcome;
};

}  // namespace dew::train
