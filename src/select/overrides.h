// DEW_IMPL: pin (`op:impl`) or exclude (`op:-impl`) implementations, comma-separated. Read from the
// environment once; set_impl_overrides() replaces it (tests, the CLI). Also the no-route error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dew::select {

struct Verdict;

// Parses "matmul:cpu.blas,attention:-cpu.flash"; throws dew::Error naming a malformed entry.
void set_impl_overrides(std::string_view spec);
std::optional<std::string> pinned_implementation(std::string_view op);
bool excluded(std::string_view op, std::string_view impl);

[[noreturn]] void throw_no_implementation(std::string_view op, std::string_view case_label,
                                          const std::optional<std::string>& pinned,
                                          const std::vector<Verdict>& verdicts,
                                          const std::vector<std::string>& all_names);

}  // namespace dew::select
