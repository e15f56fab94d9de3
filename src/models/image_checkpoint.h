// What every image backbone does the same way with its parameters by name: checked loading from a
// safetensors directory (every expected tensor present with its shape, nothing else), saving with
// config.json, and copies in another dtype or on another device.
#pragma once

#include <dew/models.h>
#include <dew/tensor.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dew::models {

using ParameterShapes = std::vector<std::pair<std::string, Shape>>;

// `kind` names the backbone in errors ("dit", "unet").
std::map<std::string, Tensor> load_parameters(const std::string& directory, const ParameterShapes& shapes,
                                              const char* kind, std::optional<DType> dtype);
// With `by_rank`: this rank's part (save_safetensors_checkpoint); rank 0 writes config.json.
void save_parameters(const std::string& directory, const ParameterShapes& shapes,
                     const std::map<std::string, Tensor>& parameters, const std::string& config_json,
                     const RankShards* by_rank = nullptr);
DType dtype_of_parameters(const std::map<std::string, Tensor>& parameters);
void cast_parameters(std::map<std::string, Tensor>& parameters, DType dtype, const ParameterCast& cast = {});
// New leaves on `device`, each requiring a gradient where the original did.
void move_parameters(std::map<std::string, Tensor>& parameters, Device device);
const Tensor& parameter_named(const std::map<std::string, Tensor>& parameters, const std::string& name,
                              const char* kind);

}  // namespace dew::models
