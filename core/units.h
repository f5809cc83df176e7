// Parsing and printing of sizes ("64M" = 64 MiB, binary suffixes) and durations ("30s", "500ms").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace ccscope::core {

// Accepts "8", "4K", "4KB", "4KiB", "64M", "1G" (binary multiples, case-insensitive).
Result<uint64_t> parseSize(std::string_view s);
// Accepts "30", "30s", "500ms", "2m", "1.5s". Plain numbers are seconds.
Result<double> parseDurationSeconds(std::string_view s);
// "64 MiB", "8 B": for messages, not for tables (tables print plain byte counts).
std::string formatBytes(uint64_t bytes);

}  // namespace ccscope::core
