// The route log: which implementation ran for which (op, case), with counts. DEW_ROUTES=1 also prints
// each new route to stderr. The log and the registry are Dew's only global mutable state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dew::select {

struct Route {
  std::string op, implementation, case_label;
  int64_t count = 0;
};

void record_route(std::string_view op, std::string_view implementation, std::string_view case_label);
std::vector<Route> routes();  // sorted by (op, implementation, case)
void reset_routes();

}  // namespace dew::select
