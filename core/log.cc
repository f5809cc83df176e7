#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <string>

namespace ccscope::core {

void setupLogging(int rank, const char* level) {
  auto logger = spdlog::stderr_logger_mt(fmt::format("ccscope-{}", rank));
  std::string who = rank < 0 ? "launcher" : fmt::format("rank {}", rank);
  logger->set_pattern(fmt::format("[%H:%M:%S.%e] [ccscope {}] [%l] %v", who));
  const char* env = std::getenv("CCSCOPE_LOG_LEVEL");
  logger->set_level(spdlog::level::from_str(env ? env : level));
  spdlog::set_default_logger(logger);
}

}  // namespace ccscope::core
