// Logging set-up: spdlog to stderr, with the rank in every line so interleaved output from many
// ranks can be told apart (and parsed back by `ccscope analyze`).
#pragma once

#include <spdlog/spdlog.h>

namespace ccscope::core {

// level: "trace".."off"; CCSCOPE_LOG_LEVEL overrides. rank < 0 means "launcher".
void setupLogging(int rank, const char* level = "warn");

}  // namespace ccscope::core
