// Test helper: the message of the dew::Error a callable throws, or "" when it throws none.
#pragma once

#include <dew/error.h>

#include <string>

namespace dew::testing {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace dew::testing
