// TrainedModel (train.h): a language model or an image model (DiT, UNet), chosen by the config's model_type,
// behind the few operations the Trainer and checkpoints need of either.
#include <dew/error.h>
#include <dew/train.h>

#include <filesystem>

#include "io/files.h"

namespace dew::train {

namespace {

TrainedModel keeping(ImageModel model, const HeldParameters& held) {
  if (held)
    for (auto& [name, t] : model.parameters())
      if (!held(name)) t.release_storage();
  return model;
}

}  // namespace

TrainedModel TrainedModel::init(const std::string& model_json, uint64_t seed, const HeldParameters& held) {
  if (is_image_model_config(model_json, "model config"))
    return keeping(ImageModel::init(model_json, DType::f32, seed), held);
  return CausalLM::init(parse_model_config(model_json, "model config"), DType::f32, seed, held);
}

TrainedModel TrainedModel::load(const std::string& directory, const HeldParameters& held) {
  const std::string config = (std::filesystem::path(directory) / "config.json").string();
  if (std::filesystem::exists(config) && is_image_model_config(read_text_file(config), config))
    return keeping(ImageModel::load(directory, DType::f32), held);
  return CausalLM::load(directory, DType::f32, held);
}

CausalLM& TrainedModel::language() {
  DEW_REQUIRE(!is_image(), "[train] this is an image model; expected a language model here");
  return std::get<CausalLM>(model_);
}
const CausalLM& TrainedModel::language() const {
  DEW_REQUIRE(!is_image(), "[train] this is an image model; expected a language model here");
  return std::get<CausalLM>(model_);
}
ImageModel& TrainedModel::image() {
  DEW_REQUIRE(is_image(), "[train] this is a language model; expected an image model (dit, unet) here");
  return std::get<ImageModel>(model_);
}
const ImageModel& TrainedModel::image() const {
  DEW_REQUIRE(is_image(), "[train] this is a language model; expected an image model (dit, unet) here");
  return std::get<ImageModel>(model_);
}

std::map<std::string, Tensor>& TrainedModel::parameters() {
  return std::visit([](auto& m) -> std::map<std::string, Tensor>& { return m.parameters(); }, model_);
}
const std::map<std::string, Tensor>& TrainedModel::parameters() const {
  return std::visit([](const auto& m) -> const std::map<std::string, Tensor>& { return m.parameters(); },
                    model_);
}

std::string TrainedModel::model_type() const {
  return is_image() ? image().model_type() : language().config().model_type;
}

int64_t TrainedModel::parameter_count() const {
  return std::visit([](const auto& m) { return m.parameter_count(); }, model_);
}

void TrainedModel::save(const std::string& directory, const RankShards* by_rank) const {
  if (const CausalLM* lm = std::get_if<CausalLM>(&model_))
    lm->save(directory, 5'000'000'000, by_rank);
  else
    std::get<ImageModel>(model_).save(directory, by_rank);
}

void TrainedModel::set_layer_boundaries(LayerBoundaries* boundaries) {
  std::visit([&](auto& m) { m.set_layer_boundaries(boundaries); }, model_);
}

TrainedModel TrainedModel::to(Device device) const {
  return std::visit([&](const auto& m) { return TrainedModel(m.to(device)); }, model_);
}

}  // namespace dew::train
