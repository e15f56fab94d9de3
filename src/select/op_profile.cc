// The op profile: kernel time per (phase, op, label), the phase being the innermost ProfilePhase open
// on the calling thread. Beside the route log, the only other record of what ran.
#include "select/op_profile.h"

#include <map>
#include <mutex>
#include <tuple>

namespace dew::select {

std::atomic<bool> op_profiling_on{false};

namespace {

struct OpProfile {
  std::mutex mutex;
  std::map<std::tuple<std::string, std::string, std::string>, OpTime> rows;
  double bookkeeping = 0;  // seconds
};

OpProfile& op_profile_store() {
  static OpProfile* p = new OpProfile;  // never destroyed: ops may run during static teardown
  return *p;
}

thread_local const char* current_phase = "";

}  // namespace

void record_op_time(std::string_view op, const std::string& label, double seconds, double flops,
                    std::chrono::steady_clock::time_point ended) {
  OpProfile& p = op_profile_store();
  std::lock_guard lock(p.mutex);
  OpTime& row = p.rows[{std::string(current_phase), std::string(op), label}];
  if (row.calls++ == 0) {
    row.phase = current_phase;
    row.op = op;
    row.label = label;
  }
  row.seconds += seconds;
  row.flops += flops;
  p.bookkeeping += std::chrono::duration<double>(std::chrono::steady_clock::now() - ended).count();
}

}  // namespace dew::select

namespace dew {

void set_op_profiling(bool on) {
  select::op_profiling_on.store(on, std::memory_order_relaxed);
}

std::vector<OpTime> op_profile() {
  select::OpProfile& p = select::op_profile_store();
  std::lock_guard lock(p.mutex);
  std::vector<OpTime> out;
  for (const auto& [key, row] : p.rows) out.push_back(row);
  return out;
}

void reset_op_profile() {
  select::OpProfile& p = select::op_profile_store();
  std::lock_guard lock(p.mutex);
  p.rows.clear();
  p.bookkeeping = 0;
}

double op_profile_bookkeeping_seconds() {
  select::OpProfile& p = select::op_profile_store();
  std::lock_guard lock(p.mutex);
  return p.bookkeeping;
}

ProfilePhase::ProfilePhase(const char* name) : previous_(select::current_phase) {
  select::current_phase = name;
}

ProfilePhase::~ProfilePhase() {
  select::current_phase = previous_;
}

}  // namespace dew
