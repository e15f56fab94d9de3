// The UNet's config from JSON — diffusers' UNet2DModel config.json or a TOML [model] table with
// model_type "unet" — and back, and the names and shapes of its parameters (diffusers' names).
#include <dew/error.h>
#include <dew/image_models.h>

#include <cmath>

#include "io/json.h"
#include "models/image_conditioning.h"

namespace dew {
namespace {

bool attention_block(const std::string& type) {
  return type.starts_with("Attn");
}

std::vector<int64_t> sizes_of(const nlohmann::json& j, const std::string& key, const std::string& source) {
  DEW_REQUIRE(j[key].is_array() && !j[key].empty(), "{}: \"{}\" is {}; expected a list of channel counts",
              source, key, j[key].dump());
  std::vector<int64_t> v;
  for (const auto& e : j[key]) {
    DEW_REQUIRE(e.is_number_integer() && e.get<int64_t>() > 0,
                "{}: \"{}\" holds {}; expected positive integers", source, key, e.dump());
    v.push_back(e.get<int64_t>());
  }
  return v;
}

std::vector<std::string> types_of(const nlohmann::json& j, const std::string& key, const std::string& source,
                                  const std::string& plain, const std::string& attention) {
  DEW_REQUIRE(j[key].is_array(), "{}: \"{}\" is {}; expected a list of block types", source, key,
              j[key].dump());
  std::vector<std::string> v;
  for (const auto& e : j[key]) {
    DEW_REQUIRE(e.is_string() && (e.get<std::string>() == plain || e.get<std::string>() == attention),
                "{}: \"{}\" holds {}; expected \"{}\" or \"{}\"", source, key, e.dump(), plain, attention);
    v.push_back(e.get<std::string>());
  }
  return v;
}

}  // namespace

UnetConfig parse_unet_config(const std::string& json_text, const std::string& source) {
  const nlohmann::json j = parse_json(json_text, source);
  DEW_REQUIRE(j.is_object(), "{}: expected a JSON object of the UNet's sizes", source);
  const JsonFields f{j, source};
  f.only({"model_type",
          "_class_name",
          "_diffusers_version",
          "_name_or_path",
          "sample_size",
          "in_channels",
          "out_channels",
          "center_input_sample",
          "time_embedding_type",
          "time_embedding_dim",
          "freq_shift",
          "flip_sin_to_cos",
          "down_block_types",
          "mid_block_type",
          "up_block_types",
          "block_out_channels",
          "layers_per_block",
          "mid_block_scale_factor",
          "downsample_padding",
          "downsample_type",
          "upsample_type",
          "dropout",
          "act_fn",
          "attention_head_dim",
          "norm_num_groups",
          "attn_norm_num_groups",
          "norm_eps",
          "resnet_time_scale_shift",
          "add_attention",
          "class_embed_type",
          "num_class_embeds",
          "num_train_timesteps",
          "num_classes",
          "class_dropout_prob",
          "time_scale",
          "time_inputs",
          "dtype"});
  DEW_REQUIRE(
      f.text_or("model_type", "unet") == "unet" && f.text_or("_class_name", "UNet2DModel") == "UNet2DModel",
      "{}: model_type \"{}\", _class_name \"{}\"; expected \"unet\" or diffusers' \"UNet2DModel\"", source,
      f.text_or("model_type", ""), f.text_or("_class_name", ""));
  f.refuse_unless("center_input_sample", "false", {"false"}, "inputs scaled to 2x - 1");
  f.refuse_unless("time_embedding_type", "positional", {"positional"}, "another time embedding");
  f.refuse_unless("mid_block_type", "UNetMidBlock2D", {"UNetMidBlock2D"}, "another middle block");
  f.refuse_unless("mid_block_scale_factor", "1", {"1", "1.0"}, "a scaled middle block");
  f.refuse_unless("downsample_padding", "1", {"1"}, "another downsampling padding");
  f.refuse_unless("downsample_type", "conv", {"conv"}, "downsampling other than a strided conv");
  f.refuse_unless("upsample_type", "conv", {"conv"}, "upsampling other than nearest then a conv");
  f.refuse_unless("dropout", "0", {"0", "0.0"}, "dropout in the ResNet blocks");
  f.refuse_unless("act_fn", "silu", {"silu"}, "another activation");
  f.refuse_unless("resnet_time_scale_shift", "default", {"default"},
                  "the time embedding as a scale and shift");
  f.refuse_unless("class_embed_type", "null", {"null"}, "another class embedding");
  UnetConfig c;
  c.sample_size = f.size_or("sample_size", c.sample_size);
  c.in_channels = f.size_or("in_channels", c.in_channels);
  c.out_channels = f.size_or("out_channels", c.in_channels);
  if (f.has("block_out_channels")) c.block_out_channels = sizes_of(j, "block_out_channels", source);
  if (f.has("down_block_types"))
    c.down_block_types = types_of(j, "down_block_types", source, "DownBlock2D", "AttnDownBlock2D");
  if (f.has("up_block_types"))
    c.up_block_types = types_of(j, "up_block_types", source, "UpBlock2D", "AttnUpBlock2D");
  c.layers_per_block = f.size_or("layers_per_block", c.layers_per_block);
  c.norm_num_groups = f.size_or("norm_num_groups", c.norm_num_groups);
  c.norm_eps = f.number_or("norm_eps", c.norm_eps);
  if (j.contains("attention_head_dim"))  // diffusers' null: one head of all the channels (0 here)
    c.attention_head_dim = f.size_or("attention_head_dim", 0);
  c.add_attention = f.flag_or("add_attention", c.add_attention);
  c.flip_sin_to_cos = f.flag_or("flip_sin_to_cos", c.flip_sin_to_cos);
  c.freq_shift = f.number_or("freq_shift", c.freq_shift);
  const int64_t rows = f.size_or("num_class_embeds", 0);  // diffusers: the class table's rows
  if (f.has("num_classes")) {
    c.num_classes = f.count_or("num_classes", c.num_classes);
    c.class_dropout_prob = f.number_or("class_dropout_prob", c.num_classes > 0 ? c.class_dropout_prob : 0);
  } else {  // diffusers' num_class_embeds alone: that many classes, no null row
    c.num_classes = rows;
    c.class_dropout_prob = f.number_or("class_dropout_prob", 0);
  }
  const int64_t table_rows = c.num_classes + (c.class_dropout_prob > 0 ? 1 : 0);
  DEW_REQUIRE(
      !f.has("num_class_embeds") || rows == table_rows,
      "{}: num_class_embeds {} with {} classes and class_dropout_prob {}; expected {} rows (a null class "
      "row when classes are dropped)",
      source, rows, c.num_classes, c.class_dropout_prob, table_rows);
  c.time_scale = f.number_or("time_scale", c.time_scale);
  c.time_inputs = f.size_or("time_inputs", c.time_inputs);
  if (f.has("time_embedding_dim"))
    DEW_REQUIRE(f.size_or("time_embedding_dim", 0) == c.time_embed_dim(),
                "{}: time_embedding_dim {}; Dew's UNet embeds time in 4 x block_out_channels[0] = {}", source,
                f.size_or("time_embedding_dim", 0), c.time_embed_dim());
  if (f.has("attn_norm_num_groups"))
    DEW_REQUIRE(
        f.size_or("attn_norm_num_groups", 0) == c.norm_num_groups,
        "{}: attn_norm_num_groups {}; Dew's UNet normalizes attention inputs in norm_num_groups = {} groups",
        source, f.size_or("attn_norm_num_groups", 0), c.norm_num_groups);

  const size_t levels = c.block_out_channels.size();
  DEW_REQUIRE(c.down_block_types.size() == levels && c.up_block_types.size() == levels,
              "{}: {} block_out_channels, {} down and {} up block types; expected one of each per resolution",
              source, levels, c.down_block_types.size(), c.up_block_types.size());
  const int64_t scale = int64_t(1) << (levels - 1);
  DEW_REQUIRE(
      c.sample_size % scale == 0,
      "{}: sample_size {} with {} resolutions; expected a multiple of {} (each level halves the image)",
      source, c.sample_size, levels, scale);
  for (size_t i = 0; i < levels; ++i) {
    const int64_t ch = c.block_out_channels[i];
    DEW_REQUIRE(ch % c.norm_num_groups == 0,
                "{}: block_out_channels[{}] = {} is not a multiple of norm_num_groups {}", source, i, ch,
                c.norm_num_groups);
    const bool attends = attention_block(c.down_block_types[i]) ||
                         attention_block(c.up_block_types[levels - 1 - i]) ||
                         (i + 1 == levels && c.add_attention);
    DEW_REQUIRE(!attends || c.attention_head_dim == 0 || ch % c.attention_head_dim == 0,
                "{}: block_out_channels[{}] = {} is not a multiple of attention_head_dim {}", source, i, ch,
                c.attention_head_dim);
  }
  DEW_REQUIRE(c.block_out_channels.front() % 2 == 0,
              "{}: block_out_channels[0] = {}; the sinusoidal time embedding needs an even width", source,
              c.block_out_channels.front());
  DEW_REQUIRE(
      c.norm_eps > 0 && std::isfinite(c.norm_eps) && c.time_scale > 0 && std::isfinite(c.time_scale) &&
          c.freq_shift < double(c.block_out_channels.front() / 2),
      "{}: norm_eps {}, time_scale {}, freq_shift {}; expected positive eps and scale, freq_shift below "
      "half the embedding width",
      source, c.norm_eps, c.time_scale, c.freq_shift);
  models::check_conditioning_config(c.num_classes, c.class_dropout_prob, c.time_inputs, source);
  return c;
}

std::string unet_config_json(const UnetConfig& c) {
  nlohmann::json j = {{"_class_name", "UNet2DModel"},
                      {"model_type", "unet"},
                      {"sample_size", c.sample_size},
                      {"in_channels", c.in_channels},
                      {"out_channels", c.out_channels},
                      {"block_out_channels", c.block_out_channels},
                      {"down_block_types", c.down_block_types},
                      {"up_block_types", c.up_block_types},
                      {"layers_per_block", c.layers_per_block},
                      {"norm_num_groups", c.norm_num_groups},
                      {"norm_eps", c.norm_eps},
                      {"add_attention", c.add_attention},
                      {"flip_sin_to_cos", c.flip_sin_to_cos},
                      {"freq_shift", c.freq_shift},
                      {"act_fn", "silu"},
                      {"time_embedding_type", "positional"},
                      {"resnet_time_scale_shift", "default"},
                      {"num_classes", c.num_classes},
                      {"class_dropout_prob", c.class_dropout_prob},
                      {"time_scale", c.time_scale},
                      {"time_inputs", c.time_inputs}};
  j["attention_head_dim"] =
      c.attention_head_dim > 0 ? nlohmann::json(c.attention_head_dim) : nlohmann::json();
  const int64_t rows = c.num_classes + (c.class_dropout_prob > 0 ? 1 : 0);
  j["num_class_embeds"] = rows > 0 ? nlohmann::json(rows) : nlohmann::json();
  return j.dump(2);
}

std::vector<std::pair<std::string, Shape>> unet_parameter_shapes(const UnetConfig& c) {
  std::vector<std::pair<std::string, Shape>> s;
  const auto add = [&](const std::string& name, Shape shape) { s.push_back({name, std::move(shape)}); };
  const auto conv = [&](const std::string& name, int64_t in, int64_t out, int64_t k) {
    add(name + ".weight", {out, in, k, k});
    add(name + ".bias", {out});
  };
  const auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    add(name + ".weight", {out, in});
    add(name + ".bias", {out});
  };
  const auto norm = [&](const std::string& name, int64_t ch) {
    add(name + ".weight", {ch});
    add(name + ".bias", {ch});
  };
  const int64_t E = c.time_embed_dim(), C0 = c.block_out_channels.front();
  const auto resnet = [&](const std::string& name, int64_t in, int64_t out) {
    norm(name + ".norm1", in);
    conv(name + ".conv1", in, out, 3);
    linear(name + ".time_emb_proj", E, out);
    norm(name + ".norm2", out);
    conv(name + ".conv2", out, out, 3);
    if (in != out) conv(name + ".conv_shortcut", in, out, 1);
  };
  const auto attention = [&](const std::string& name, int64_t ch) {
    norm(name + ".group_norm", ch);
    for (const char* p : {".to_q", ".to_k", ".to_v", ".to_out.0"}) linear(name + p, ch, ch);
  };
  conv("conv_in", c.in_channels, C0, 3);
  linear("time_embedding.linear_1", C0, E);
  linear("time_embedding.linear_2", E, E);
  if (c.time_inputs == 2) {
    linear("r_embedding.linear_1", C0, E);
    linear("r_embedding.linear_2", E, E);
  }
  if (c.num_classes > 0)
    add("class_embedding.weight", {c.num_classes + (c.class_dropout_prob > 0 ? 1 : 0), E});
  const size_t levels = c.block_out_channels.size();
  int64_t ch = C0;
  for (size_t i = 0; i < levels; ++i) {
    const int64_t out = c.block_out_channels[i];
    const std::string block = fmt::format("down_blocks.{}", i);
    for (int64_t j = 0; j < c.layers_per_block; ++j) {
      resnet(fmt::format("{}.resnets.{}", block, j), j == 0 ? ch : out, out);
      if (attention_block(c.down_block_types[i])) attention(fmt::format("{}.attentions.{}", block, j), out);
    }
    if (i + 1 < levels) conv(block + ".downsamplers.0.conv", out, out, 3);
    ch = out;
  }
  resnet("mid_block.resnets.0", ch, ch);
  if (c.add_attention) attention("mid_block.attentions.0", ch);
  resnet("mid_block.resnets.1", ch, ch);
  for (size_t i = 0; i < levels; ++i) {  // lowest resolution first
    const int64_t out = c.block_out_channels[levels - 1 - i];
    const int64_t below =
        c.block_out_channels[levels - 1 - std::min(i + 1, levels - 1)];  // diffusers' input_channel
    const std::string block = fmt::format("up_blocks.{}", i);
    for (int64_t j = 0; j <= c.layers_per_block; ++j) {
      const int64_t skip = j == c.layers_per_block ? below : out;
      resnet(fmt::format("{}.resnets.{}", block, j), (j == 0 ? ch : out) + skip, out);
      if (attention_block(c.up_block_types[i])) attention(fmt::format("{}.attentions.{}", block, j), out);
    }
    if (i + 1 < levels) conv(block + ".upsamplers.0.conv", out, out, 3);
    ch = out;
  }
  norm("conv_norm_out", C0);
  conv("conv_out", C0, c.out_channels, 3);
  return s;
}

}  // namespace dew
