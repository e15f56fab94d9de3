// The gate's comparison: RMS and worst-row ratios to the reference arm, certified per-element bounds,
// poisoned (never written) elements, exact integer outputs.
#include "gate/gate.h"

#include <chrono>
#include <cstdlib>
#include <limits>
#include <numeric>

namespace dew::gate {
namespace {

// gamma_n = n*u / (1 - n*u) (Higham); infinite once n*u >= 1, which no case reaches.
double gamma(int64_t n, double u) {
  double nu = double(n) * u;
  return nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
}

// The smallest magnitude that rounds to infinity in dtype t.
double overflow_threshold(DType t) {
  switch (t) {
    case DType::f16:
      return 65520.0;
    case DType::bf16:
      return (2.0 - 0x1p-8) * 0x1p127;
    case DType::f32:
      return (2.0 - 0x1p-24) * 0x1p127;
    default:
      return std::numeric_limits<double>::infinity();
  }
}

double ratio(double candidate, double base) {
  if (base == 0) return candidate == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return candidate / base;
}

}  // namespace

int64_t OutputReport::elements() const {
  int64_t n = 0;
  for (int64_t e : group_elements) n += e;
  return n;
}

namespace {

// RMS over every group's elements together, and the largest single group's RMS.
double pooled_rms(const std::vector<double>& sq, const std::vector<int64_t>& n) {
  double s = 0, count = 0;
  for (size_t g = 0; g < sq.size(); ++g) s += sq[g], count += double(n[g]);
  return count > 0 ? std::sqrt(s / count) : 0.0;
}

double worst_group_rms(const std::vector<double>& sq, const std::vector<int64_t>& n) {
  double worst = 0;
  for (size_t g = 0; g < sq.size(); ++g)
    worst = std::max(worst, std::sqrt(sq[g] / double(std::max<int64_t>(n[g], 1))));
  return worst;
}

}  // namespace

double OutputReport::rms_candidate() const {
  return pooled_rms(group_sq_candidate, group_elements);
}
double OutputReport::rms_base() const {
  return pooled_rms(group_sq_base, group_elements);
}
double OutputReport::worst_row_candidate() const {
  return worst_group_rms(group_sq_candidate, group_elements);
}
double OutputReport::worst_row_base() const {
  return worst_group_rms(group_sq_base, group_elements);
}
double OutputReport::rms_ratio() const {
  return ratio(rms_candidate(), rms_base());
}
double OutputReport::worst_row_ratio() const {
  return ratio(worst_row_candidate(), worst_row_base());
}

OutputReport compare_output(const Tensor& candidate, const Tensor& base, const ops::Truth& truth,
                            DType dtype) {
  OutputReport r;
  DEW_REQUIRE(candidate.shape() == truth.value.shape(), "[gate] output is {} but the reference made {}",
              candidate.describe(), truth.value.describe());
  std::vector<double> c = candidate.to_f64_vector(), b = base.to_f64_vector(),
                      t = truth.value.to_f64_vector();
  if (!is_floating(candidate.dtype())) {
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i] != t[i] && r.integer_mismatch++ == 0)
        r.first_violation = fmt::format("element {}: {} != reference {}", i, c[i], t[i]);
    r.group_sq_candidate = r.group_sq_base = {0.0};  // exact: no rounding error to pool over draws
    r.group_elements = {int64_t(c.size())};
    return r;
  }
  // No magnitude: a composition of ops (a model's logits), whose ops carry their own bounds; only the
  // RMS and worst-row ratios judge it.
  std::vector<double> m = truth.magnitude.defined() ? truth.magnitude.to_f64_vector() : std::vector<double>();
  const double u_acc = unit_roundoff(dtype == DType::f64 ? DType::f64 : DType::f32);
  const double u_out = unit_roundoff(candidate.dtype());
  const double eta = smallest_subnormal(candidate.dtype());
  const double g2 = 2 * gamma(truth.steps, u_acc);
  const double overflow = overflow_threshold(candidate.dtype());
  // A "row" is the last dim, grouped with its neighbours up to at least 256 elements: the RMS of a
  // 16-element row, dominated by one or two large terms, is too noisy for a ratio, while a wrong row
  // still stands out in its group.
  const int64_t last = candidate.dim() == 0 ? 1 : std::max<int64_t>(1, candidate.size(-1));
  const int64_t row = last * ((256 + last - 1) / last);
  double row_c = 0, row_b = 0;
  int64_t in_row = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    double ec = 0, eb = 0;
    const bool base_broke = !std::isnan(t[i]) && !std::isfinite(b[i]) &&
                            !(std::fabs(t[i]) >= overflow && b[i] == std::copysign(INFINITY, t[i]));
    if (m.empty() && base_broke) {
      // A composition (no bound of its own) whose reference arm broke down here (an intermediate
      // overflowed into inf or NaN): nothing to hold the candidate to; it passes if it does no worse.
    } else if (std::isnan(c[i]) && !std::isnan(t[i])) {
      if (r.unwritten++ == 0) r.first_violation = fmt::format("element {} is NaN (never written?)", i);
    } else if (std::fabs(t[i]) >= overflow) {  // must round to the infinity of t's sign
      ec = c[i] == std::copysign(INFINITY, t[i]) ? 0.0 : INFINITY;
      eb = b[i] == std::copysign(INFINITY, t[i]) ? 0.0 : INFINITY;
    } else {
      ec = c[i] - t[i];
      eb = b[i] - t[i];
      double bound = m.empty() ? 0.0 : (1 + u_out) * g2 * m[i] + u_out * std::fabs(t[i]) + eta;
      if (!m.empty() && !(std::fabs(ec) <= bound) && r.outside_bound++ == 0)
        r.first_violation = fmt::format("element {}: {} vs reference {} (error {:.3g} > bound {:.3g})", i,
                                        c[i], t[i], std::fabs(ec), bound);
    }
    row_c += ec * ec;
    row_b += eb * eb;
    if (++in_row == row || i + 1 == c.size()) {
      r.group_sq_candidate.push_back(row_c);
      r.group_sq_base.push_back(row_b);
      r.group_elements.push_back(in_row);
      row_c = row_b = 0;
      in_row = 0;
    }
  }
  return r;
}

void OutputReport::merge(const OutputReport& o) {
  // Each row group pools its squared errors over the draws (the same output shape every draw).
  for (size_t g = 0; g < group_sq_candidate.size() && g < o.group_sq_candidate.size(); ++g) {
    group_sq_candidate[g] += o.group_sq_candidate[g];
    group_sq_base[g] += o.group_sq_base[g];
    group_elements[g] += o.group_elements[g];
  }
  if (!unwritten && !outside_bound && !integer_mismatch) first_violation = o.first_violation;
  unwritten += o.unwritten;
  outside_bound += o.outside_bound;
  integer_mismatch += o.integer_mismatch;
}

bool Report::passed() const {
  if (!ran) return true;
  for (const auto& o : outputs)
    if (o.unwritten || o.outside_bound || o.integer_mismatch || !(o.rms_ratio() <= 1.5) ||
        !(o.worst_row_ratio() <= 2.0))
      return false;
  return true;
}

std::string Report::verdict() const {
  if (!ran) return "skip: needs " + refusal;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& o = outputs[i];
    std::string why;
    if (o.unwritten)
      why = fmt::format("{} unwritten; {}", o.unwritten, o.first_violation);
    else if (o.integer_mismatch)
      why = fmt::format("{} mismatches; {}", o.integer_mismatch, o.first_violation);
    else if (o.outside_bound)
      why = fmt::format("{} outside bound; {}", o.outside_bound, o.first_violation);
    else if (!(o.rms_ratio() <= 1.5))
      why = fmt::format("RMS ratio {:.3g} > 1.5", o.rms_ratio());
    else if (!(o.worst_row_ratio() <= 2.0))
      why = fmt::format("worst-row ratio {:.3g} > 2", o.worst_row_ratio());
    if (!why.empty()) return fmt::format("FAIL output {}: {} (seed {})", i, why, seed);
  }
  return "pass";
}

uint64_t gate_seed() {
  if (const char* env = std::getenv("DEW_GATE_SEED")) {
    char* end = nullptr;
    uint64_t s = std::strtoull(env, &end, 10);
    DEW_REQUIRE(end != env && *end == '\0', "DEW_GATE_SEED='{}' is not an unsigned integer", env);
    return s;
  }
  return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
}

int gate_max_draws() {
  const char* env = std::getenv("DEW_GATE_DRAWS");
  if (!env) return kMaxDraws;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  DEW_REQUIRE(end != env && *end == '\0' && n >= 1 && n <= kMaxDraws,
              "DEW_GATE_DRAWS='{}': expected a whole number of draws from 1 to {}", env, kMaxDraws);
  return int(n);
}

std::vector<int64_t> dense_order(const Tensor& t) {
  std::vector<int64_t> order(static_cast<size_t>(t.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return t.strides()[size_t(a)] > t.strides()[size_t(b)]; });
  if (!t.permute(order).is_contiguous()) return {};
  return order;
}

Tensor to_device_keeping_layout(const Tensor& t, Device device) {
  const std::vector<int64_t> order =
      t.device() == device || t.is_contiguous() ? std::vector<int64_t>() : dense_order(t);
  if (order.empty()) return t.to(device);
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[size_t(order[i])] = int64_t(i);
  return t.permute(order).to(device).permute(inverse);
}

Device implementation_device(std::string_view impl_name) {
  return impl_name.starts_with("cuda") ? Device::cuda(0) : Device::cpu();
}

std::string machine_refusal(std::string_view impl_name) {
  if (implementation_device(impl_name).kind == Device::Kind::cuda && cuda_device_count() == 0)
    return "no CUDA device on this machine";
  return {};
}

}  // namespace dew::gate
