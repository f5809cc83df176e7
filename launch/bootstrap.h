// Bootstrap: what transports and the harness may use of the launch layer — rank, size, and a
// key/value exchange with deadlines. The real one talks to the TCP rendezvous store.
#pragma once

#include <string>
#include <string_view>

#include "core/deadline.h"
#include "core/status.h"

namespace ccscope::launch {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& jobToken() const = 0;
  virtual core::Status put(const std::string& key, std::string_view value) = 0;
  virtual core::Result<std::string> get(const std::string& key, core::Deadline deadline) = 0;
  // All ranks reach `name` or the deadline passes; the error names ranks that did not arrive.
  virtual core::Status barrier(const std::string& name, core::Deadline deadline) = 0;
};

}  // namespace ccscope::launch
