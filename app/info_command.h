// `ccscope info`: transports built in, library versions, devices found (or why none).
#pragma once

#include "app/command.h"

namespace ccscope::app {

Command addInfoCommand(CLI::App& root);

}  // namespace ccscope::app
