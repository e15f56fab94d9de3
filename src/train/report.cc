// `dew report RUN_DIR`: one self-contained HTML page (inline SVG, no scripts, no external files) with
// a chart per metric of metrics.jsonl — loss (with eval_loss when logged), lr, grad_norm, tokens/s
// and MFU — over the step. Written to RUN_DIR/report.html atomically.
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

struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> points;  // (step, value)
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
    else
      out += c;
  }
  return out;
}

// A line chart of one or more series sharing axes.
std::string chart(const std::string& title, const std::vector<Series>& series) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points)
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  if (!(x0 <= x1)) return "";
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + std::max(1e-12, std::abs(y0) * 0.01);
  constexpr double W = 640, H = 220, L = 70, R = 15, T = 25, B = 30;
  const auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  const auto py = [&](double y) { return T + (1 - (y - y0) / (y1 - y0)) * (H - T - B); };
  std::string svg =
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img">)", W, H);
  svg += fmt::format(R"(<text x="{}" y="16" font-size="13" font-weight="bold">{}</text>)", L, escape(title));
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)", L, T,
                     W - L - R, H - T - B);
  for (double f : {0.0, 0.5, 1.0}) {  // y labels at the bottom, middle and top
    const double y = y0 + f * (y1 - y0);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{:.4g}</text>)", L - 6,
                       py(y) + 4, y);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="11">step {:.0f}</text>)", L, H - 8, x0);
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="end">step {:.0f}</text>)", W - R,
                     H - 8, x1);
  double legend = W - R - 4;
  for (const Series& s : series) {
    std::string points;
    for (const auto& [x, y] : s.points) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    svg +=
        fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>)", s.color, points);
    svg += fmt::format(R"(<text x="{}" y="16" font-size="11" fill="{}" text-anchor="end">{}</text>)", legend,
                       s.color, escape(s.name));
    legend -= 9.0 * double(s.name.size()) + 12;
  }
  return svg + "</svg>\n";
}

}  // namespace

std::string write_report(const std::string& run_dir) {
  const std::filesystem::path metrics = std::filesystem::path(run_dir) / "metrics.jsonl";
  DEW_REQUIRE(std::filesystem::is_regular_file(metrics),
              "[report] {} has no metrics.jsonl; expected the directory of a `dew train` run", run_dir);
  std::map<std::string, Series> series;
  const std::vector<std::pair<std::string, std::string>> shown = {
      {"loss", "#1f77b4"},      {"eval_loss", "#d62728"},    {"lr", "#2ca02c"},
      {"grad_norm", "#9467bd"}, {"tokens_per_s", "#ff7f0e"}, {"mfu", "#8c564b"}};
  for (const auto& [name, color] : shown) series[name] = {name, color, {}};
  std::ifstream in(metrics);
  int64_t lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    const nlohmann::json j = parse_json(line, metrics.string() + ":" + std::to_string(lines));
    if (!j.contains("step") || !j["step"].is_number()) continue;
    for (auto& [name, s] : series)
      if (j.contains(name) && j[name].is_number() && std::isfinite(j[name].get<double>()))
        s.points.emplace_back(j["step"].get<double>(), j[name].get<double>());
  }
  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(run_dir) +
                     "</title></head>\n<body style=\"font-family: sans-serif\">\n<h1>" + escape(run_dir) +
                     "</h1>\n";
  html += fmt::format("<p>{} metrics lines from {}</p>\n", lines, escape(metrics.string()));
  std::vector<Series> loss = {series["loss"]};
  if (!series["eval_loss"].points.empty()) loss.push_back(series["eval_loss"]);
  html += chart("loss", loss);
  for (const char* name : {"lr", "grad_norm", "tokens_per_s", "mfu"})
    if (!series[name].points.empty()) html += chart(name, {series[name]});
  html += "</body></html>\n";
  const std::string path = (std::filesystem::path(run_dir) / "report.html").string();
  write_text_file(path, html);
  return path;
}

}  // namespace dew::train
