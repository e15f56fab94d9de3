// What a run ran on, for run.json (docs/training.md): Dew's build (version, commit, build type,
// compiler, CUDA backend), its libraries' versions, and the machine (CPU model, cores, threads used, memory,
// instruction sets, OS). Not the routes: those are the route log's (ops.h), read when run.json is written.
#pragma once

#include <nlohmann/json.hpp>

namespace dew::train {

nlohmann::json environment_description();

}  // namespace dew::train
