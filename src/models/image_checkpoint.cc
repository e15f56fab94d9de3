// The image backbones' shared parameter handling (image_checkpoint.h).
#include "models/image_checkpoint.h"

#include <dew/error.h>
#include <dew/ops.h>
#include <dew/safetensors.h>

#include <filesystem>
#include <set>

#include "io/files.h"

namespace dew::models {

std::map<std::string, Tensor> load_parameters(const std::string& directory, const ParameterShapes& shapes,
                                              const char* kind, std::optional<DType> dtype) {
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(directory);
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const auto& [name, shape] : shapes) {
    expected.insert(name);
    const SafetensorsEntry* e = checkpoint.find(name);
    if (!e)
      problems.push_back(fmt::format("\"{}\" is missing (expected {})", name, shape_str(shape)));
    else if (e->shape != shape)
      problems.push_back(
          fmt::format("\"{}\" is {} (expected {})", name, shape_str(e->shape), shape_str(shape)));
  }
  for (const std::string& name : checkpoint.names())
    if (!expected.count(name))
      problems.push_back(fmt::format("\"{}\" is not a parameter of this {}", name, kind));
  DEW_REQUIRE(problems.empty(), "{}: the checkpoint does not match config.json: {}", directory,
              fmt::join(problems, "; "));
  std::map<std::string, Tensor> parameters;
  for (const auto& [name, shape] : shapes) {
    const Tensor t = checkpoint.load(name);
    DEW_REQUIRE(is_floating(t.dtype()), "{}: \"{}\" holds {}; expected floating weights", directory, name,
                dtype_name(t.dtype()));
    parameters[name] = as_dtype(t, dtype.value_or(t.dtype()));
  }
  return parameters;
}

void save_parameters(const std::string& directory, const ParameterShapes& shapes,
                     const std::map<std::string, Tensor>& parameters, const std::string& config_json,
                     const RankShards* by_rank) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, shape] : shapes)
    tensors.push_back({name, parameter_named(parameters, name, "model")});
  save_safetensors_checkpoint(directory, tensors, 5'000'000'000, by_rank);
  if (by_rank && by_rank->rank != 0) return;
  const std::string text = config_json + "\n";
  AtomicFile config((std::filesystem::path(directory) / "config.json").string());
  config.write(text.data(), text.size());
  config.commit();
}

DType dtype_of_parameters(const std::map<std::string, Tensor>& parameters) {
  return parameters.empty() ? DType::f32 : parameters.begin()->second.dtype();
}

void cast_parameters(std::map<std::string, Tensor>& parameters, DType dtype,
                     const ParameterCast& cast_parameter) {
  for (auto& [name, t] : parameters)
    if (t.dtype() != dtype) t = cast_parameter ? cast_parameter(name, t, dtype) : cast(t, dtype);
}

void move_parameters(std::map<std::string, Tensor>& parameters, Device device) {
  for (auto& [name, t] : parameters) {
    const bool leaf_wants_grad = t.requires_grad();
    t = t.detach().to(device);
    if (leaf_wants_grad) t.requires_grad_();
  }
}

const Tensor& parameter_named(const std::map<std::string, Tensor>& parameters, const std::string& name,
                              const char* kind) {
  const auto it = parameters.find(name);
  DEW_REQUIRE(it != parameters.end(), "[{}] no parameter \"{}\"", kind, name);
  return it->second;
}

}  // namespace dew::models
