// `dew report RUN_DIR`: one self-contained HTML page (inline SVG and CSS, no scripts, no external
// files) of a `dew train` run: a summary (steps, tokens, wall-clock time, losses against the unigram
// baseline), charts of every metric of metrics.jsonl over the step with labelled axes, round ticks
// and gridlines, the samples, the resolved config and the machine. Written to RUN_DIR/report.html
// atomically.
#include <dew/error.h>
#include <dew/train.h>

#include "io/files.h"
#include "io/json.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace dew::train {
namespace {

namespace fs = std::filesystem;

// RFC 4648 base64, for the sample grids the page embeds as data URLs (the page stands alone).
std::string base64(const std::string& bytes) {
  static const char* const kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(uint8_t(bytes[i])) << 16 |
                       (i + 1 < bytes.size() ? uint32_t(uint8_t(bytes[i + 1])) << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t(uint8_t(bytes[i + 2])) : 0);
    out += kDigits[n >> 18 & 63];
    out += kDigits[n >> 12 & 63];
    out += i + 1 < bytes.size() ? kDigits[n >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kDigits[n & 63] : '=';
  }
  return out;
}

struct Series {
  std::string label, color;
  std::vector<std::pair<double, double>> points;  // (step, value)
  bool dashed = false;
};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// Round ticks over [lo, hi]: steps of 1, 2 or 5 times a power of ten, about `count` of them.
std::vector<double> round_ticks(double lo, double hi, int count) {
  const double raw = (hi - lo) / count;
  if (!(raw > 0) || !std::isfinite(raw)) return {lo, hi};
  const double power = std::pow(10, std::floor(std::log10(raw))), f = raw / power;
  const double step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * power;
  const int64_t first = int64_t(std::ceil(lo / step - 1e-9)), last = int64_t(std::floor(hi / step + 1e-9));
  if (last < first || last - first > 4 * count) return {lo, hi};  // a range too narrow for its magnitude
  std::vector<double> ticks;
  for (int64_t k = first; k <= last; ++k) ticks.push_back(double(k) * step);
  return ticks;
}

std::string tick_label(double v) {
  const double a = std::abs(v);
  if (a != 0 && (a >= 1e6 || a < 1e-3)) return fmt::format("{:.3g}", v);
  return fmt::format("{:.6g}", v);
}

// A line chart of one or more series over the step: `unit` labels the value axis, which starts at 0 when
// `from_zero` (quantities whose small changes would look large on a tight axis: memory, rates).
std::string chart(const std::string& title, const std::string& unit, const std::vector<Series>& series,
                  bool from_zero = false) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = from_zero ? 0 : INFINITY, y1 = -INFINITY;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points)
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  if (!(x0 <= x1)) return "";
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + std::max(1e-12, std::abs(y0) * 0.1), y0 -= std::max(1e-12, std::abs(y0) * 0.1);
  const std::vector<double> xt = round_ticks(x0, x1, 6), yt = round_ticks(y0, y1, 5);
  x0 = std::min(x0, xt.front()), x1 = std::max(x1, xt.back());  // the axes end on ticks
  y0 = std::min(y0, yt.front()), y1 = std::max(y1, yt.back());
  constexpr double W = 560, H = 260, L = 72, R = 16, T = 34, B = 44;
  const auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  const auto py = [&](double y) { return T + (1 - (y - y0) / (y1 - y0)) * (H - T - B); };
  std::string svg = fmt::format(
      R"(<figure><svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="{}">)",
      W, H, escape(title));
  svg += fmt::format(R"(<text x="{}" y="18" class="title">{}</text>)", L, escape(title));
  for (double t : xt) {
    svg +=
        fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" class="grid"/>)", px(t), T, H - B);
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" class="tick" text-anchor="middle">{}</text>)", px(t),
                       H - B + 15, tick_label(t));
  }
  for (double t : yt) {
    svg +=
        fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" class="grid"/>)", L, py(t), W - R);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" class="tick" text-anchor="end">{}</text>)", L - 6,
                       py(t) + 4, tick_label(t));
  }
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" class="frame"/>)", L, T, W - L - R,
                     H - T - B);
  svg += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="middle">step</text>)", (L + W - R) / 2,
                     H - 8);
  svg += fmt::format(
      R"svg(<text transform="translate(16 {}) rotate(-90)" class="axis" text-anchor="middle">{}</text>)svg",
      (T + H - B) / 2, escape(unit));
  std::vector<double> legend_x(series.size());  // legends right-aligned from the top right, last first
  double legend = W - R;
  for (size_t i = series.size(); i-- > 0;) {
    legend_x[i] = legend;
    legend -= 7.0 * double(series[i].label.size()) + 16;
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    std::string points;
    for (const auto& [x, y] : s.points) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    svg += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.8"{} points="{}"/>)", s.color,
                       s.dashed ? R"( stroke-dasharray="5 4")" : "", points);
    if (s.points.size() == 1)
      svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", px(s.points[0].first),
                         py(s.points[0].second), s.color);
    if (!s.points.empty())
      svg += fmt::format(R"(<text x="{}" y="18" class="legend" fill="{}" text-anchor="end">{}</text>)",
                         legend_x[i], s.color, escape(s.label));
  }
  return svg + "</svg></figure>\n";
}

// The values of `key` in `lines` against their step, each multiplied by `scale`.
Series series_of(const std::vector<nlohmann::json>& lines, const std::string& key, const std::string& label,
                 const std::string& color, double scale = 1) {
  Series s{label, color, {}};
  for (const nlohmann::json& j : lines)
    if (j.contains(key) && j[key].is_number() && std::isfinite(j[key].get<double>()))
      s.points.emplace_back(j["step"].get<double>(), j[key].get<double>() * scale);
  return s;
}

std::string duration(double seconds) {
  const int64_t s = int64_t(seconds + 0.5);
  return s >= 3600 ? fmt::format("{} h {:02d} min", s / 3600, s / 60 % 60)
                   : fmt::format("{} min {:02d} s", s / 60, s % 60);
}

std::string table_of(const nlohmann::json& object) {
  std::string rows;
  const nlohmann::json flat = object.flatten();  // kept alive: items() refers to it
  for (const auto& [key, value] : flat.items())
    rows += fmt::format("<tr><td>{}</td><td>{}</td></tr>", escape(key.substr(1)),
                        escape(value.is_string() ? value.get<std::string>() : value.dump()));
  return "<table>" + rows + "</table>\n";
}

std::vector<nlohmann::json> read_lines(const fs::path& path) {
  std::vector<nlohmann::json> out;
  if (!fs::is_regular_file(path)) return out;
  std::ifstream in(path);
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(parse_json(line, path.string() + ":" + std::to_string(number)));
  }
  return out;
}

constexpr const char* kStyle = R"(<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
.summary { color: #444; line-height: 1.5; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; } figure { margin: 0; }
svg .title { font-size: 14px; font-weight: 600; } svg .tick { font-size: 11px; fill: #555; }
svg .axis { font-size: 12px; fill: #333; } svg .legend { font-size: 12px; font-weight: 600; }
svg .grid { stroke: #e4e4e4; stroke-width: 1; } svg .frame { fill: none; stroke: #999; }
table { border-collapse: collapse; font-size: 13px; } td { border-bottom: 1px solid #eee; padding: 2px 10px 2px 0; }
.sample { font-family: ui-monospace, monospace; font-size: 13px; margin: 4px 0; }
.grids { display: flex; flex-wrap: wrap; gap: 12px; } .grids img { image-rendering: pixelated; width: 300px; }
</style>
)";

}  // namespace

std::string write_report(const std::string& run_dir) {
  const fs::path dir(run_dir), metrics_path = dir / "metrics.jsonl";
  DEW_REQUIRE(fs::is_regular_file(metrics_path),
              "[report] {} has no metrics.jsonl; expected the directory of a `dew train` run", run_dir);
  // Step lines, evaluations, and an image model's sample measures.
  std::vector<nlohmann::json> steps, evals, quality;
  for (nlohmann::json& j : read_lines(metrics_path)) {
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number()) continue;
    (j.contains("eval_loss")          ? evals
     : j.contains("frechet_distance") ? quality
                                      : steps)
        .push_back(std::move(j));
  }
  const nlohmann::json run =
      fs::is_regular_file(dir / "run.json")
          ? parse_json(read_text_file((dir / "run.json").string()), run_dir + "/run.json")
          : nlohmann::json::object();

  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(run_dir) +
                     " — dew report</title>\n" + kStyle + "</head>\n<body>\n<h1>" + escape(run_dir) +
                     "</h1>\n";
  // The summary: how far, how long, how well.
  const std::string model_type = run.contains("config") && run["config"].contains("model")
                                     ? run["config"]["model"].value("model_type", "")
                                     : "";
  const bool image = model_type == "dit" || model_type == "unet";
  std::vector<std::string> facts;
  if (!steps.empty()) {
    const nlohmann::json& last = steps.back();
    const int64_t of = run.contains("config") ? run["config"].value("steps", int64_t(0)) : 0;
    facts.push_back(
        fmt::format("step {}{}", last["step"].get<int64_t>(), of ? fmt::format(" of {}", of) : ""));
    if (last.contains("tokens"))
      facts.push_back(fmt::format("{:.3g} M tokens", last["tokens"].get<double>() / 1e6));
    if (last.contains("images")) facts.push_back(fmt::format("{} images", last["images"].get<int64_t>()));
    if (steps.front().contains("time") && last.contains("time"))
      facts.push_back(
          fmt::format("{} of wall-clock time between the first and last log lines",
                      duration(last["time"].get<double>() - steps.front()["time"].get<double>())));
    facts.push_back(fmt::format("training loss {:.4f}{}", last["loss"].get<double>(), image ? "" : " nats"));
  }
  if (!quality.empty())
    facts.push_back(fmt::format("Fréchet distance {:.3f}{}", quality.back()["frechet_distance"].get<double>(),
                                quality.back().contains("sample_accuracy")
                                    ? fmt::format(", samples read as their class {:.1f}%",
                                                  100 * quality.back()["sample_accuracy"].get<double>())
                                    : ""));
  if (!evals.empty() && image) {
    facts.push_back(fmt::format("held-out loss {:.4f}", evals.back()["eval_loss"].get<double>()));
  } else if (!evals.empty()) {
    const nlohmann::json& e = evals.back();
    facts.push_back(
        fmt::format("held-out loss {:.4f} nats (perplexity {:.1f}) against the held-out tokens' "
                    "unigram entropy of {:.4f}",
                    e["eval_loss"].get<double>(), std::exp(e["eval_loss"].get<double>()),
                    e.value("unigram_entropy", NAN)));
  }
  if (model_type == "dit")
    facts.push_back(fmt::format(
        "model dit ({} blocks, width {}, patches of {})", run["config"]["model"].value("depth", 0),
        run["config"]["model"].value("hidden_size", 0), run["config"]["model"].value("patch_size", 0)));
  else if (model_type == "unet")
    facts.push_back(
        fmt::format("model unet (channels {}, {} ResNet blocks per level)",
                    run["config"]["model"].value("block_out_channels", nlohmann::json::array()).dump(),
                    run["config"]["model"].value("layers_per_block", 2)));
  else if (run.contains("config") && run["config"].contains("model"))
    facts.push_back(fmt::format("model {} ({} layers, width {})",
                                run["config"]["model"].value("model_type", "?"),
                                run["config"]["model"].value("num_hidden_layers", 0),
                                run["config"]["model"].value("hidden_size", 0)));
  html += "<p class=\"summary\">" + escape(fmt::format("{}", fmt::join(facts, " · "))) + "</p>\n";

  html += "<div class=\"charts\">\n";
  std::vector<Series> loss = {series_of(steps, "loss", "train", "#1f77b4"),
                              series_of(evals, "eval_loss", "held-out", "#d62728")};
  Series baseline = series_of(evals, "unigram_entropy", "unigram baseline", "#7f7f7f");
  baseline.dashed = true;
  loss.push_back(baseline);
  html += chart("loss", image ? "mean squared error of the objective" : "nats per token", loss);
  html += chart("accuracy", "% of next tokens",
                {series_of(steps, "accuracy", "train", "#1f77b4", 100),
                 series_of(evals, "eval_accuracy", "held-out", "#d62728", 100)});
  html += chart("perplexity", "exp(loss)",
                {series_of(steps, "perplexity", "train", "#1f77b4"),
                 series_of(evals, "eval_perplexity", "held-out", "#d62728")});
  html += chart("Fréchet distance", "the classifier's features, samples against held-out images",
                {series_of(quality, "frechet_distance", "distance", "#1f77b4")}, true);
  html += chart("sample accuracy", "% of samples read as their class",
                {series_of(quality, "sample_accuracy", "accuracy", "#2ca02c", 100)}, true);
  html += chart("learning rate", "lr", {series_of(steps, "lr", "lr", "#2ca02c")});
  html += chart("gradient norm", "global L2 norm, before clipping",
                {series_of(steps, "grad_norm", "norm", "#9467bd")});
  html += chart(
      "throughput", image ? "images/s" : "tokens/s",
      {series_of(steps, image ? "images_per_s" : "tokens_per_s", image ? "images/s" : "tokens/s", "#ff7f0e")},
      true);
  html += chart("model FLOPs utilization", "MFU, %", {series_of(steps, "mfu", "MFU", "#8c564b", 100)}, true);
  html += chart("step time", "s", {series_of(steps, "step_s", "step", "#17becf")});
  html += chart("data wait", "ms per step", {series_of(steps, "data_wait_s", "wait", "#bcbd22", 1e3)});
  html += chart("memory", "MiB of tensors at the peak",
                {series_of(steps, "peak_bytes", "peak", "#e377c2", 1.0 / (1 << 20))}, true);
  html += "</div>\n";

  const std::vector<nlohmann::json> samples = read_lines(dir / "samples.jsonl");
  if (!samples.empty()) {
    html += "<h2>Samples</h2>\n";
    for (const nlohmann::json& s : samples)
      html += fmt::format("<p class=\"sample\">step {}: <b>{}</b>{}</p>\n", s.value("step", int64_t(0)),
                          escape(s.value("prompt", std::string())), escape(s.value("text", std::string())));
  }
  // An image model's grids of samples (RUN_DIR/samples/step-*.png), oldest first.
  std::vector<fs::path> grids;
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(dir / "samples", error))
    if (e.path().extension() == ".png") grids.push_back(e.path());
  std::sort(grids.begin(), grids.end());
  if (!grids.empty()) {
    html += "<h2>Samples</h2>\n<div class=\"grids\">\n";
    for (const fs::path& g : grids)
      html += fmt::format(
          "<figure><img src=\"data:image/png;base64,{}\" alt=\"{}\"><figcaption>{}</figcaption></figure>\n",
          base64(read_text_file(g.string())), escape(g.stem().string()), escape(g.stem().string()));
    html += "</div>\n";
  }
  if (run.contains("config")) html += "<h2>Config (resolved)</h2>\n" + table_of(run["config"]);
  if (run.contains("machine")) html += "<h2>Machine</h2>\n" + table_of(run["machine"]);
  if (run.contains("build")) html += "<h2>Build</h2>\n" + table_of(run["build"]);
  if (run.contains("libraries")) html += "<h2>Libraries</h2>\n" + table_of(run["libraries"]);
  html += "</body></html>\n";
  const std::string path = (dir / "report.html").string();
  write_text_file(path, html);
  return path;
}

}  // namespace dew::train
