// A run from a TOML config: [model] (a config.json's fields), [train], [optimizer], [schedule] and
// [data] (docs/training.md lists the keys). Unknown keys are refused with the nearest valid one.
#include <dew/error.h>
#include <dew/runtime.h>
#include <dew/tokenizer.h>
#include <dew/train.h>

#include "io/json.h"
#include "io/toml.h"

#include <filesystem>
#include <sstream>

namespace dew::train {

TrainerConfig trainer_config_from_toml(const std::string& path, const std::vector<std::string>& overrides) {
  const toml::table root = load_toml(path, overrides);
  // [tokenizer] is `dew train`'s (a tokenizer to train before the run when it does not exist yet).
  TomlFields(root, path)
      .only({"model", "train", "optimizer", "schedule", "data", "eval", "sample", "tokenizer", "diffusion",
             "parallel"});
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  const auto table = [&](const char* name) -> const toml::table& {
    static const toml::table empty;
    const toml::table* t = root[name].as_table();
    DEW_REQUIRE(t || !root.contains(name), "{}: {} is not a table; expected [{}]", path, name, name);
    return t ? *t : empty;
  };
  TrainerConfig c;
  const toml::table& model = table("model");
  DEW_REQUIRE(!model.empty(),
              "{}: no [model] table; expected a config.json's fields (model_type = \"llama\", ...)", path);
  std::ostringstream source;
  source << toml::json_formatter{root};
  c.source_json = source.str();

  const TomlFields train(table("train"), path + ": train");
  train.only({"steps", "seed", "accumulation", "grad_clip", "z_loss", "expert_bias_update", "log_every",
              "checkpoint_every", "keep_last", "keep_every", "max_skips", "tokenizer", "init_from",
              "precision", "device", "ema_decay", "ema_warmup"});
  c.steps = train.integer_or("steps", c.steps);
  c.seed = uint64_t(train.integer_or("seed", 0));
  c.accumulation = train.integer_or("accumulation", 1);
  const TomlFields parallel(table("parallel"), path + ": parallel");
  parallel.only({"row_groups", "bucket_mib", "shard", "timeout_s", "tensor"});
  c.tensor_parallel = parallel.integer_or("tensor", 1);
  DEW_REQUIRE(c.tensor_parallel >= 1,
              "{}: parallel.tensor {}; expected the ranks a model is split over, >= 1", path,
              c.tensor_parallel);
  c.timeout_s = parallel.number_or("timeout_s", c.timeout_s);
  DEW_REQUIRE(c.timeout_s > 0, "{}: parallel.timeout_s {}; expected the seconds a rank waits for the others",
              path, c.timeout_s);
  c.shard = parallel.text_or("shard", c.shard);
  DEW_REQUIRE(
      c.shard == "none" || c.shard == "optimizer" || c.shard == "gradients" || c.shard == "full",
      "{}: parallel.shard \"{}\"; expected \"none\", \"optimizer\" (ZeRO-1), \"gradients\" (ZeRO-2) or "
      "\"full\" (ZeRO-3)",
      path, c.shard);
  c.row_groups = parallel.integer_or("row_groups", 0);
  DEW_REQUIRE(c.row_groups >= 0, "{}: parallel.row_groups {}; expected 0 (the process count) or more", path,
              c.row_groups);
  c.bucket_mib = parallel.number_or("bucket_mib", c.bucket_mib);
  DEW_REQUIRE(
      c.bucket_mib > 0 && c.bucket_mib <= 2048,
      "{}: parallel.bucket_mib {}; expected MiB of gradients per all-reduce, above 0 and at most 2048", path,
      c.bucket_mib);
  c.grad_clip = train.number_or("grad_clip", c.grad_clip);
  c.z_loss = train.number_or("z_loss", 0);
  c.expert_bias_update = train.number_or("expert_bias_update", c.expert_bias_update);
  DEW_REQUIRE(c.expert_bias_update >= 0 && std::isfinite(c.expert_bias_update),
              "{}: train.expert_bias_update {}; expected a number >= 0", path, c.expert_bias_update);
  // auto: bf16 where the CPU multiplies bf16 natively (AVX-512 BF16), faster at the same loss (docs/perf.md,
  // "Mixed precision"); f32 elsewhere, where bf16 products are widened first.
  const std::string device = train.text_or("device", "cpu");
  try {
    c.device = Device::parse(device);
  } catch (const Error& e) {
    fail("{}: train.device \"{}\": {}", path, device, e.what());
  }
  const std::string precision = train.text_or("precision", "auto");
  DEW_REQUIRE(precision == "auto" || precision == "f32" || precision == "bf16",
              "{}: train.precision \"{}\"; expected \"auto\", \"f32\" or \"bf16\" (mixed precision)", path,
              precision);
  // On a GPU, auto is bf16: its tensor cores multiply bf16 natively.
  const bool native_bf16 = c.device.kind == Device::Kind::cuda || cpu_features().avx512bf16;
  c.compute = precision == "bf16" || (precision == "auto" && native_bf16) ? DType::bf16 : DType::f32;
  c.log_every = train.integer_or("log_every", c.log_every);
  c.checkpoint_every = train.integer_or("checkpoint_every", 0);
  c.keep = {train.integer_or("keep_last", 3), train.integer_or("keep_every", 0)};
  c.max_skips = train.integer_or("max_skips", c.max_skips);
  c.ema_decay = train.number_or("ema_decay", 0);
  c.ema_warmup = train.flag_or("ema_warmup", true);
  DEW_REQUIRE(c.ema_decay == 0 || (c.ema_decay > 0 && c.ema_decay < 1),
              "{}: train.ema_decay {}; expected 0 (no average) or a decay between 0 and 1", path,
              c.ema_decay);
  const auto relative_to_config = [&](const std::string& p) {
    return std::filesystem::absolute(base / p).lexically_normal().string();  // `p` if absolute
  };
  if (train.has("tokenizer"))
    c.tokenizer = relative_to_config(train.text("tokenizer"));
  else if (std::optional<std::string_view> p = root.at_path("tokenizer.path").value<std::string_view>())
    c.tokenizer = relative_to_config(std::string(*p));  // the config's [tokenizer], named once
  if (train.has("init_from")) c.init_from = relative_to_config(train.text("init_from"));
  // [model] without vocab_size takes the tokenizer's, so that the size is written once; with one, it
  // must hold every id the tokenizer gives. Both are settled here, before any training.
  toml::table model_fields = model;
  const std::string_view model_type = model_fields["model_type"].value_or(std::string_view());
  const bool image_model = model_type == "dit" || model_type == "unet";
  if (!c.tokenizer.empty() && !image_model) {
    const int64_t ids = Tokenizer::load(c.tokenizer).vocab_size();  // a missing one is refused, by path
    if (!model_fields.contains("vocab_size")) model_fields.insert("vocab_size", ids);
    const std::optional<int64_t> vocab = model_fields["vocab_size"].value<int64_t>();
    DEW_REQUIRE(vocab && *vocab >= ids,
                "{}: model.vocab_size {} is smaller than the tokenizer's {} ids ({}); expected at least {}",
                path, vocab ? std::to_string(*vocab) : "(not an integer)", ids, c.tokenizer, ids);
  }
  std::ostringstream json;
  json << toml::json_formatter{model_fields};
  c.model_json = json.str();
  // Refused here, naming the file, before any training.
  if (image_model) {
    image_model_conditioning(c.model_json, path + " [model]");
    std::ostringstream objective;
    objective << toml::json_formatter{table("diffusion")};
    DEW_REQUIRE(root.contains("diffusion"),
                "{}: an image model (dit, unet) needs a [diffusion] table naming its objective "
                "(objective = \"flow\", ...; docs/diffusion.md)",
                path);
    c.diffusion = diffusion::parse_objective_json(objective.str(), path + ": diffusion");
  } else {
    parse_model_config(c.model_json, path + " [model]");
    DEW_REQUIRE(!root.contains("diffusion"),
                "{}: a [diffusion] table for a language model; it is an image "
                "model's objective (model_type = \"dit\" or \"unet\")",
                path);
  }

  const TomlFields optimizer(table("optimizer"), path + ": optimizer");
  optimizer.only(
      {"kind", "weight_decay", "beta1", "beta2", "eps", "momentum", "dampening", "nesterov", "ns_steps"});
  c.optimizer = optimizer.text_or("kind", "adamw");
  c.weight_decay = optimizer.number_or("weight_decay", c.weight_decay);
  c.adamw = {optimizer.number_or("beta1", 0.9), optimizer.number_or("beta2", 0.95),
             optimizer.number_or("eps", 1e-8)};
  c.sgd = {optimizer.number_or("momentum", 0.9), optimizer.number_or("dampening", 0),
           optimizer.flag_or("nesterov", false)};
  c.lion = {optimizer.number_or("beta1", 0.9), optimizer.number_or("beta2", 0.99)};
  c.muon = {optimizer.number_or("momentum", 0.95), optimizer.flag_or("nesterov", true),
            int(optimizer.integer_or("ns_steps", 5)), c.adamw};

  const TomlFields eval(table("eval"), path + ": eval");
  eval.only({"every", "batches", "data"});
  c.eval_every = eval.integer_or("every", 0);
  c.eval_batches = eval.integer_or("batches", c.eval_batches);
  const TomlFields sample(table("sample"), path + ": sample");
  sample.only({"every", "tokens", "prompts", "sampler", "steps", "cfg", "per_class", "seed", "classifier",
               "quality_samples", "classifier_steps"});
  c.sample_every = sample.integer_or("every", 0);
  c.image_samples.sampler = sample.text_or("sampler", c.image_samples.sampler);
  c.image_samples.steps = sample.integer_or("steps", c.image_samples.steps);
  c.image_samples.cfg = sample.number_or("cfg", c.image_samples.cfg);
  c.image_samples.per_class = sample.integer_or("per_class", c.image_samples.per_class);
  c.image_samples.seed = uint64_t(sample.integer_or("seed", 0));
  if (sample.has("classifier"))
    c.quality_classifier =
        std::filesystem::absolute(base / sample.text("classifier")).lexically_normal().string();
  c.quality_samples = sample.integer_or("quality_samples", c.quality_samples);
  DEW_REQUIRE(c.quality_samples >= 2, "{}: sample.quality_samples {}; expected at least 2", path,
              c.quality_samples);
  c.sample_tokens = sample.integer_or("tokens", c.sample_tokens);
  if (sample.has("prompts")) c.sample_prompts = sample.texts("prompts");

  const TomlFields schedule(table("schedule"), path + ": schedule");
  schedule.only({"shape", "peak_lr", "warmup_steps", "min_lr_ratio", "decay_fraction"});
  const std::string shape = schedule.text_or("shape", "cosine");
  DEW_REQUIRE(shape == "cosine" || shape == "linear" || shape == "constant" || shape == "wsd",
              "{}: schedule.shape \"{}\"; expected cosine, linear, constant or wsd", path, shape);
  c.schedule.shape = shape == "cosine"   ? LrSchedule::Shape::cosine
                     : shape == "linear" ? LrSchedule::Shape::linear
                     : shape == "wsd"    ? LrSchedule::Shape::wsd
                                         : LrSchedule::Shape::constant;
  c.schedule.peak_lr = schedule.number_or("peak_lr", c.schedule.peak_lr);
  c.schedule.warmup_steps = schedule.integer_or("warmup_steps", 0);
  c.schedule.min_lr_ratio = schedule.number_or("min_lr_ratio", c.schedule.min_lr_ratio);
  c.schedule.decay_fraction = schedule.number_or("decay_fraction", c.schedule.decay_fraction);
  return c;
}

std::string describe_config(const TrainerConfig& c) {
  static const char* const shapes[] = {"cosine", "linear", "constant", "wsd"};
  const nlohmann::json j = {
      {"model", nlohmann::json::parse(c.model_json)},
      {"seed", c.seed},
      {"steps", c.steps},
      {"accumulation", c.accumulation},
      {"parallel",
       {{"row_groups", c.row_groups},
        {"bucket_mib", c.bucket_mib},
        {"shard", c.shard},
        {"tensor", c.tensor_parallel},
        {"timeout_s", c.timeout_s}}},
      {"optimizer", c.optimizer},
      {"adamw", {{"beta1", c.adamw.beta1}, {"beta2", c.adamw.beta2}, {"eps", c.adamw.eps}}},
      {"sgd", {{"momentum", c.sgd.momentum}, {"dampening", c.sgd.dampening}, {"nesterov", c.sgd.nesterov}}},
      {"lion", {{"beta1", c.lion.beta1}, {"beta2", c.lion.beta2}}},
      {"muon", {{"momentum", c.muon.momentum}, {"nesterov", c.muon.nesterov}, {"ns_steps", c.muon.ns_steps}}},
      {"weight_decay", c.weight_decay},
      {"schedule",
       {{"shape", shapes[int(c.schedule.shape)]},
        {"peak_lr", c.schedule.peak_lr},
        {"warmup_steps", c.schedule.warmup_steps},
        {"total_steps", c.schedule.total_steps},
        {"min_lr_ratio", c.schedule.min_lr_ratio},
        {"decay_fraction", c.schedule.decay_fraction}}},
      {"grad_clip", c.grad_clip},
      {"z_loss", c.z_loss},
      {"expert_bias_update", c.expert_bias_update},
      {"precision", dtype_name(c.compute)},
      {"device", c.device.str()},
      {"log_every", c.log_every},
      {"checkpoint_every", c.checkpoint_every},
      {"keep_last", c.keep.keep_last},
      {"keep_every", c.keep.keep_every},
      {"tokenizer", c.tokenizer},
      {"max_skips", c.max_skips},
      {"eval_every", c.eval_every},
      {"eval_batches", c.eval_batches},
      {"sample_every", c.sample_every},
      {"sample_tokens", c.sample_tokens},
      {"sample_prompts", c.sample_prompts},
      {"init_from", c.init_from},
      {"ema_decay", c.ema_decay},
      {"ema_warmup", c.ema_warmup},
      {"diffusion", nlohmann::json::parse(diffusion::objective_json(c.diffusion))},
      {"image_samples",
       {{"sampler", c.image_samples.sampler},
        {"steps", c.image_samples.steps},
        {"cfg", c.image_samples.cfg},
        {"per_class", c.image_samples.per_class},
        {"seed", c.image_samples.seed}}},
      {"quality_classifier", c.quality_classifier},
      {"quality_samples", c.quality_samples},
  };
  return j.dump();
}

}  // namespace dew::train
