// ImageModel: either image backbone behind the one interface the Trainer, the samplers and
// `dew sample` use; the config's model type chooses the kind.
#include <dew/error.h>
#include <dew/image_models.h>

#include <filesystem>

#include "io/files.h"
#include "io/json.h"

namespace dew {
namespace {

// "dit" or "unet" for an image model's config, "" for any other.
std::string image_model_type(const std::string& json_text, const std::string& source) {
  const nlohmann::json j = parse_json(json_text, source);
  if (!j.is_object()) return "";
  const std::string type = j.value("model_type", std::string());
  if (type == "dit" || type == "unet") return type;
  return j.value("_class_name", std::string()) == "UNet2DModel" ? "unet" : "";
}

}  // namespace

bool is_image_model_config(const std::string& json_text, const std::string& source) {
  return !image_model_type(json_text, source).empty();
}

namespace {

ImageConditioning conditioning_of(const DitConfig& c) {
  return {c.image_size, c.in_channels, c.num_classes, c.time_inputs, c.class_dropout_prob};
}
ImageConditioning conditioning_of(const UnetConfig& c) {
  return {c.sample_size, c.in_channels, c.num_classes, c.time_inputs, c.class_dropout_prob};
}

}  // namespace

ImageConditioning image_model_conditioning(const std::string& json_text, const std::string& source) {
  const std::string type = image_model_type(json_text, source);
  DEW_REQUIRE(!type.empty(), "{}: names no image model; expected model_type \"dit\" or \"unet\"", source);
  return type == "dit" ? conditioning_of(parse_dit_config(json_text, source))
                       : conditioning_of(parse_unet_config(json_text, source));
}

ImageModel ImageModel::init(const std::string& model_json, DType dtype, uint64_t seed) {
  const std::string type = image_model_type(model_json, "model config");
  DEW_REQUIRE(!type.empty(),
              "[model] the config names no image model; expected model_type \"dit\" or \"unet\"");
  if (type == "dit") return Dit::init(parse_dit_config(model_json, "model config"), dtype, seed);
  return Unet::init(parse_unet_config(model_json, "model config"), dtype, seed);
}

ImageModel ImageModel::load(const std::string& directory, std::optional<DType> dtype) {
  const std::string config = (std::filesystem::path(directory) / "config.json").string();
  const std::string type = image_model_type(read_text_file(config), config);
  DEW_REQUIRE(!type.empty(), "{}: names no image model; expected model_type \"dit\" or \"unet\"", config);
  if (type == "dit") return Dit::load(directory, dtype);
  return Unet::load(directory, dtype);
}

void ImageModel::save(const std::string& directory, const RankShards* by_rank) const {
  std::visit([&](const auto& m) { m.save(directory, by_rank); }, model_);
}

std::string ImageModel::model_type() const {
  return dit() ? "dit" : "unet";
}

ImageConditioning ImageModel::conditioning() const {
  return dit() ? conditioning_of(dit()->config()) : conditioning_of(unet()->config());
}

std::string ImageModel::config_json() const {
  return dit() ? dit_config_json(dit()->config()) : unet_config_json(unet()->config());
}

const std::map<std::string, Tensor>& ImageModel::parameters() const {
  return std::visit([](const auto& m) -> const std::map<std::string, Tensor>& { return m.parameters(); },
                    model_);
}

std::map<std::string, Tensor>& ImageModel::parameters() {
  return std::visit([](auto& m) -> std::map<std::string, Tensor>& { return m.parameters(); }, model_);
}

int64_t ImageModel::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, p] : parameters()) n += p.numel();
  return n;
}

ImageModel ImageModel::to(DType dtype, const ParameterCast& cast) const {
  return std::visit([&](const auto& m) { return ImageModel(m.to(dtype, cast)); }, model_);
}

void ImageModel::set_layer_boundaries(LayerBoundaries* boundaries) {
  if (Dit* dit = std::get_if<Dit>(&model_)) dit->set_layer_boundaries(boundaries);  // a UNet has no layers
}

ImageModel ImageModel::to(Device device) const {
  return std::visit([&](const auto& m) { return ImageModel(m.to(device)); }, model_);
}

Tensor ImageModel::forward(const Tensor& x, const Tensor& t, const Tensor& labels, const Tensor& r) const {
  return std::visit([&](const auto& m) { return m.forward(x, t, labels, r); }, model_);
}

double ImageModel::forward_flops() const {
  return std::visit([](const auto& m) { return m.forward_flops(); }, model_);
}

}  // namespace dew
