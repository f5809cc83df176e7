// How the live layers' reports print a reading that may be missing: JSON null, or "?" in text.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ccscope::diagnostics {

template <typename T>
nlohmann::json orNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
std::string show(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : "?";
}

}  // namespace ccscope::diagnostics
