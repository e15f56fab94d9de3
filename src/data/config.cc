// A chain from a TOML config's [data] table: [data.source] and the [[data.stage]] list, in order
// (docs/data.md has the keys). Relative paths are resolved against the config file's directory.
#include <dew/error.h>

#include "data/stage.h"
#include "io/toml.h"

#include <filesystem>

namespace dew::data {
namespace {

std::string resolve(const std::filesystem::path& base, const std::string& path) {
  const std::filesystem::path p(path);
  return p.is_absolute() ? path : (base / p).lexically_normal().string();
}

// What every table of one config shares.
struct ConfigContext {
  std::filesystem::path base;  // the config's directory: relative paths start there
  std::string tokenizer;       // [tokenizer] path, for tokenize and chat stages that name none
  bool text_only = false;      // the source (one epoch) and the stages before tokenize or chat
};

// A stage's `tokenizer`, or the config's [tokenizer] path when it names none.
std::string stage_tokenizer(const TomlFields& f, const ConfigContext& context) {
  if (f.has("tokenizer") || context.tokenizer.empty()) return resolve(context.base, f.text("tokenizer"));
  return context.tokenizer;
}

Chain make_source(const TomlFields& f, const ConfigContext& context) {
  const std::filesystem::path& base = context.base;
  const std::string kind = f.text("kind");
  SourceOptions options{f.integer_or("epochs", 1), f.flag_or("skip_malformed", false)};
  if (context.text_only) options.epochs = 1;
  DEW_REQUIRE(options.epochs >= 0, "{}: epochs {}; expected a count, or 0 to repeat forever", f.where(),
              options.epochs);
  if (kind == "idx_images") {
    f.only({"kind", "images", "labels", "epochs", "skip_malformed"});
    const std::string labels = f.text_or("labels", "");
    return Chain::idx_images(resolve(base, f.text("images")), labels.empty() ? "" : resolve(base, labels),
                             options);
  }
  std::vector<std::string> paths = f.texts("paths");
  for (std::string& p : paths) p = resolve(base, p);
  if (kind == "text") {
    f.only({"kind", "paths", "unit", "epochs", "skip_malformed"});
    const std::string unit = f.text_or("unit", "file");
    DEW_REQUIRE(unit == "file" || unit == "line" || unit == "paragraph",
                "{}: unit \"{}\"; expected \"file\", \"line\" or \"paragraph\"", f.where(), unit);
    return Chain::text_files(paths,
                             unit == "file"   ? TextUnit::file
                             : unit == "line" ? TextUnit::line
                                              : TextUnit::paragraph,
                             options);
  }
  if (kind == "jsonl") {
    f.only({"kind", "paths", "field", "epochs", "skip_malformed"});
    return Chain::jsonl(paths, f.text_or("field", "text"), options);
  }
  if (kind == "tokens") {
    f.only({"kind", "paths", "separator", "epochs", "skip_malformed"});
    std::optional<int32_t> separator;
    if (std::optional<int64_t> s = f.integer("separator")) {
      DEW_REQUIRE(*s >= 0 && *s <= INT32_MAX, "{}: separator {}; expected a token id", f.where(), *s);
      separator = int32_t(*s);
    }
    return Chain::token_files(paths, separator, options);
  }
  fail("{}: kind \"{}\"; expected \"text\", \"jsonl\", \"tokens\" or \"idx_images\"", f.where(), kind);
}

void add_stage(Chain& chain, const TomlFields& f, const ConfigContext& context) {
  const std::filesystem::path& base = context.base;
  const std::string kind = f.text("kind");
  if (kind == "quality") {
    f.only({"kind", "min_chars", "max_chars", "min_letter_fraction", "max_repeated_line_fraction"});
    chain.quality({f.integer_or("min_chars", 0), f.integer_or("max_chars", 0),
                   f.number_or("min_letter_fraction", 0), f.number_or("max_repeated_line_fraction", 1)});
  } else if (kind == "strip_tags") {
    f.only({"kind", "separator"});
    chain.strip_tags({f.text_or("separator", "/")});
  } else if (kind == "dedup") {
    f.only({"kind"});
    chain.dedup();
  } else if (kind == "near_dedup") {
    f.only({"kind", "ngram", "bands", "rows", "threshold", "clusters"});
    const std::string clusters = f.text_or("clusters", "");
    chain.near_dedup({int(f.integer_or("ngram", 5)), int(f.integer_or("bands", 20)),
                      int(f.integer_or("rows", 5)), f.number_or("threshold", 0.75),
                      clusters.empty() ? "" : resolve(base, clusters)});
  } else if (kind == "decontaminate") {
    f.only({"kind", "held_out", "n"});
    std::vector<std::string> held_out = f.texts("held_out");
    for (std::string& p : held_out) p = resolve(base, p);
    chain.decontaminate(held_out, int(f.integer_or("n", 13)));
  } else if (kind == "shuffle") {
    f.only({"kind", "seed", "window"});
    const int64_t seed = f.integer_or("seed", 0);
    DEW_REQUIRE(seed >= 0, "{}: seed {}; expected a non-negative integer", f.where(), seed);
    chain.shuffle(uint64_t(seed), f.integer_or("window", 0));
  } else if (kind == "flip_horizontal") {
    f.only({"kind", "seed", "probability"});
    const int64_t seed = f.integer_or("seed", 0);
    DEW_REQUIRE(seed >= 0, "{}: seed {}; expected a non-negative integer", f.where(), seed);
    chain.flip_horizontal(uint64_t(seed), f.number_or("probability", 0.5));
  } else if (kind == "tokenize") {
    f.only({"kind", "tokenizer", "special_tokens", "append_eos", "workers"});
    chain.tokenize(
        stage_tokenizer(f, context),
        {f.flag_or("special_tokens", true), f.flag_or("append_eos", false), int(f.integer_or("workers", 1))});
  } else if (kind == "chat") {
    f.only({"kind", "tokenizer", "template"});
    chain.chat(stage_tokenizer(f, context), {f.text_or("template", "")});
  } else if (kind == "pack") {
    f.only({"kind", "T", "mode", "block"});
    DEW_REQUIRE(f.has("T"), "{}: T is missing; expected the tokens per window (windows hold T+1)", f.where());
    const std::string mode = f.text_or("mode", "concat");
    DEW_REQUIRE(mode == "concat" || mode == "first_fit",
                "{}: mode \"{}\"; expected \"concat\" or \"first_fit\"", f.where(), mode);
    if (mode == "concat")
      chain.pack(*f.integer("T"));
    else
      chain.pack_first_fit(*f.integer("T"), f.integer_or("block", 1000));
  } else if (kind == "batch") {
    f.only({"kind", "size", "process_index", "process_count"});
    DEW_REQUIRE(f.has("size"), "{}: size is missing; expected the global batch's rows", f.where());
    chain.batch(*f.integer("size"), {f.integer_or("process_index", 0), f.integer_or("process_count", 1)});
  } else if (kind == "prefetch") {
    f.only({"kind", "batches"});
    chain.prefetch(f.integer_or("batches", 4));
  } else {
    fail(
        "{}: kind \"{}\"; expected quality, strip_tags, dedup, near_dedup, decontaminate, shuffle, "
        "flip_horizontal, tokenize, chat, pack, batch or prefetch",
        f.where(), kind);
  }
}

// A chain from a table holding `source` or `mix`, and `stage` (the [data] table, a mixture's member);
// `where` names it in errors ("config.toml: data").
Chain chain_from_table(const toml::table& table, const std::string& where, const ConfigContext& context,
                       std::initializer_list<const char*> also_allowed) {
  std::vector<const char*> known = {"source", "mix", "stage"};
  known.insert(known.end(), also_allowed.begin(), also_allowed.end());
  for (const auto& [key, value] : table) {
    DEW_REQUIRE(std::find(known.begin(), known.end(), key.str()) != known.end(),
                "{}: unknown key {}; expected source or mix, and stage{}{}", where, key.str(),
                also_allowed.size() ? ", " : "", fmt::join(also_allowed, ", "));
  }
  const toml::table* source = table["source"].as_table();
  const toml::table* mix = table["mix"].as_table();
  DEW_REQUIRE((source != nullptr) != (mix != nullptr),
              "{}: expected one [source] table naming the files, or one [mix] table of members", where);
  std::optional<Chain> chain;
  if (source) {
    chain.emplace(make_source(TomlFields(*source, where + ".source"), context));
  } else {
    DEW_REQUIRE(
        !context.text_only,
        "{}: a mixture; a tokenizer is trained on a chain with one [source] (or give it its own files)",
        where);
    const TomlFields fields(*mix, where + ".mix");
    fields.only({"seed", "members"});
    const toml::table* members = (*mix)["members"].as_table();
    DEW_REQUIRE(members && !members->empty(),
                "{}.mix: no [members] table; expected [{}.mix.members.NAME] tables", where,
                where.substr(where.find(": ") + 2));
    std::vector<MixMember> inputs;
    for (const auto& [name, value] : *members) {
      const std::string at = where + ".mix.members." + std::string(name.str());
      const toml::table* member = value.as_table();
      DEW_REQUIRE(member, "{}: not a table; expected weight, source or mix, and stage", at);
      const double weight = TomlFields(*member, at).number_or("weight", 0);
      inputs.push_back({std::string(name.str()), weight, chain_from_table(*member, at, context, {"weight"})});
    }
    const int64_t seed = fields.integer_or("seed", 0);
    DEW_REQUIRE(seed >= 0, "{}.mix: seed {}; expected a non-negative integer", where, seed);
    chain.emplace(Chain::mix(std::move(inputs), uint64_t(seed)));
  }
  if (const toml::node* stages = table.get("stage")) {
    const toml::array* list = stages->as_array();
    DEW_REQUIRE(list, "{}.stage is not an array of tables; write each stage as [[...stage]]", where);
    for (size_t i = 0; i < list->size(); ++i) {
      const toml::table* stage = list->get(i)->as_table();
      const std::string at = where + ".stage." + std::to_string(i);
      DEW_REQUIRE(stage, "{}: not a table; write each stage as [[...stage]]", at);
      const TomlFields fields(*stage, at);
      if (context.text_only && (fields.text("kind") == "tokenize" || fields.text("kind") == "chat")) break;
      add_stage(*chain, fields, context);
    }
  }
  return std::move(*chain);
}

}  // namespace

namespace {

Chain config_chain(const std::string& config_path, const std::vector<std::string>& overrides,
                   const std::string& table, bool text_only) {
  const toml::table root = load_toml(config_path, overrides);
  const toml::table* data = root.at_path(table).as_table();
  DEW_REQUIRE(data, "{}: no [{}] table; expected [{}.source] and [[{}.stage]] (docs/data.md)", config_path,
              table, table, table);
  ConfigContext context{std::filesystem::path(config_path).parent_path(), "", text_only};
  if (std::optional<std::string_view> path = root.at_path("tokenizer.path").value<std::string_view>())
    context.tokenizer = resolve(context.base, std::string(*path));
  const std::string where = config_path + ": " + table;
  // [data] cache, cache_dir, cache_max_bytes: for the chain, or for each phase of a schedule.
  const TomlFields fields(*data, where);
  CacheOptions cache{fields.flag_or("cache", true), fields.text_or("cache_dir", ""),
                     fields.integer_or("cache_max_bytes", 0)};
  if (!cache.dir.empty()) cache.dir = resolve(context.base, cache.dir);
  const toml::node* phases = data->get("phase");
  if (!phases) {
    Chain chain = chain_from_table(*data, where, context, {"cache", "cache_dir", "cache_max_bytes"});
    chain.cache(cache);
    return chain;
  }
  DEW_REQUIRE(!text_only, "{}: phases; a tokenizer is trained on a chain with one [source]", where);
  // [[data.phase]]: a schedule, each phase a chain with its budget of tokens.
  fields.only({"phase", "cache", "cache_dir", "cache_max_bytes"});
  const toml::array* list = phases->as_array();
  DEW_REQUIRE(list, "{}.phase is not an array of tables; write each phase as [[data.phase]]", where);
  std::vector<Phase> schedule;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string at = where + ".phase." + std::to_string(i);
    const toml::table* phase = list->get(i)->as_table();
    DEW_REQUIRE(phase, "{}: not a table; write each phase as [[data.phase]]", at);
    const int64_t tokens = TomlFields(*phase, at).integer_or("tokens", 0);
    schedule.push_back({chain_from_table(*phase, at, context, {"tokens"}), tokens});
    schedule.back().chain.cache(cache);
  }
  return Chain::schedule(std::move(schedule));
}

}  // namespace

Chain chain_from_config(const std::string& config_path, const std::vector<std::string>& overrides,
                        const std::string& table) {
  return config_chain(config_path, overrides, table, false);
}

Chain text_chain_from_config(const std::string& config_path, const std::vector<std::string>& overrides) {
  return config_chain(config_path, overrides, "data", true);
}

}  // namespace dew::data
