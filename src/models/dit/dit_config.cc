// The DiT's config from JSON and back, and the names and shapes of its parameters.
#include <dew/error.h>
#include <dew/image_models.h>

#include <cmath>

#include "io/json.h"
#include "models/image_conditioning.h"

namespace dew {

DitConfig parse_dit_config(const std::string& json_text, const std::string& source) {
  const nlohmann::json j = parse_json(json_text, source);
  DEW_REQUIRE(j.is_object(), "{}: expected a JSON object of the DiT's sizes", source);
  const JsonFields f{j, source};
  f.only({"model_type", "image_size", "in_channels", "patch_size", "hidden_size", "depth", "num_heads",
          "mlp_ratio", "num_classes", "class_dropout_prob", "learned_position_embedding",
          "frequency_embedding_size", "time_scale", "time_inputs", "dtype"});
  DEW_REQUIRE(f.text_or("model_type", "") == "dit", "{}: model_type \"{}\"; expected \"dit\"", source,
              f.text_or("model_type", ""));
  DitConfig c;
  c.image_size = f.size_or("image_size", c.image_size);
  c.in_channels = f.size_or("in_channels", c.in_channels);
  c.patch_size = f.size_or("patch_size", c.patch_size);
  c.hidden_size = f.size_or("hidden_size", c.hidden_size);
  c.depth = f.size_or("depth", c.depth);
  c.num_heads = f.size_or("num_heads", c.num_heads);
  c.mlp_ratio = f.number_or("mlp_ratio", c.mlp_ratio);
  c.num_classes = f.count_or("num_classes", c.num_classes);
  c.class_dropout_prob = f.number_or("class_dropout_prob", c.num_classes > 0 ? c.class_dropout_prob : 0);
  c.learned_position_embedding = f.flag_or("learned_position_embedding", false);
  c.frequency_embedding_size = f.size_or("frequency_embedding_size", c.frequency_embedding_size);
  c.time_scale = f.number_or("time_scale", c.time_scale);
  c.time_inputs = f.size_or("time_inputs", c.time_inputs);
  DEW_REQUIRE(c.image_size % c.patch_size == 0, "{}: image_size {} is not a multiple of patch_size {}",
              source, c.image_size, c.patch_size);
  DEW_REQUIRE(c.hidden_size % c.num_heads == 0, "{}: hidden_size {} is not a multiple of num_heads {}",
              source, c.hidden_size, c.num_heads);
  DEW_REQUIRE(c.learned_position_embedding || c.hidden_size % 4 == 0,
              "{}: hidden_size {}; the fixed 2-D sine-cosine table needs a multiple of 4 (or "
              "learned_position_embedding = true)",
              source, c.hidden_size);
  DEW_REQUIRE(
      c.mlp_ratio > 0 && std::isfinite(c.mlp_ratio) && c.time_scale > 0 && std::isfinite(c.time_scale),
      "{}: mlp_ratio {} and time_scale {}; expected positive numbers", source, c.mlp_ratio, c.time_scale);
  models::check_conditioning_config(c.num_classes, c.class_dropout_prob, c.time_inputs, source);
  return c;
}

std::string dit_config_json(const DitConfig& c) {
  nlohmann::json j = {{"model_type", "dit"},
                      {"image_size", c.image_size},
                      {"in_channels", c.in_channels},
                      {"patch_size", c.patch_size},
                      {"hidden_size", c.hidden_size},
                      {"depth", c.depth},
                      {"num_heads", c.num_heads},
                      {"mlp_ratio", c.mlp_ratio},
                      {"num_classes", c.num_classes},
                      {"class_dropout_prob", c.class_dropout_prob},
                      {"learned_position_embedding", c.learned_position_embedding},
                      {"frequency_embedding_size", c.frequency_embedding_size},
                      {"time_scale", c.time_scale},
                      {"time_inputs", c.time_inputs}};
  return j.dump(2);
}

std::vector<std::pair<std::string, Shape>> dit_parameter_shapes(const DitConfig& c) {
  const int64_t h = c.hidden_size, p = c.patch_size, C = c.in_channels,
                mlp = int64_t(std::llround(double(h) * c.mlp_ratio)), F = c.frequency_embedding_size;
  std::vector<std::pair<std::string, Shape>> s = {{"x_embedder.proj.weight", {h, C, p, p}},
                                                  {"x_embedder.proj.bias", {h}}};
  if (c.learned_position_embedding) s.push_back({"pos_embed", {1, c.tokens(), h}});
  for (const char* embedder : {"t_embedder", "r_embedder"}) {
    if (std::string(embedder) == "r_embedder" && c.time_inputs < 2) continue;
    s.push_back({fmt::format("{}.mlp.0.weight", embedder), {h, F}});
    s.push_back({fmt::format("{}.mlp.0.bias", embedder), {h}});
    s.push_back({fmt::format("{}.mlp.2.weight", embedder), {h, h}});
    s.push_back({fmt::format("{}.mlp.2.bias", embedder), {h}});
  }
  if (c.num_classes > 0)
    s.push_back(
        {"y_embedder.embedding_table.weight", {c.num_classes + (c.class_dropout_prob > 0 ? 1 : 0), h}});
  for (int64_t i = 0; i < c.depth; ++i) {
    const auto add = [&](const char* name, Shape shape) {
      s.push_back({fmt::format("blocks.{}.{}", i, name), shape});
    };
    add("attn.qkv.weight", {3 * h, h});
    add("attn.qkv.bias", {3 * h});
    add("attn.proj.weight", {h, h});
    add("attn.proj.bias", {h});
    add("mlp.fc1.weight", {mlp, h});
    add("mlp.fc1.bias", {mlp});
    add("mlp.fc2.weight", {h, mlp});
    add("mlp.fc2.bias", {h});
    add("adaLN_modulation.1.weight", {6 * h, h});
    add("adaLN_modulation.1.bias", {6 * h});
  }
  s.push_back({"final_layer.adaLN_modulation.1.weight", {2 * h, h}});
  s.push_back({"final_layer.adaLN_modulation.1.bias", {2 * h}});
  s.push_back({"final_layer.linear.weight", {p * p * C, h}});
  s.push_back({"final_layer.linear.bias", {p * p * C}});
  return s;
}

}  // namespace dew
