#include "transports/common/pair_errors.h"

#include <fmt/format.h>

namespace ccscope::transports {

using core::Code;
using core::Layer;
using core::Status;

Status tagMismatchStatus(int receiver, int sender, uint32_t expected, uint32_t got) {
  return Status(Code::kRemoteError,
                fmt::format("rank {} expected tag {:#x} from rank {} but got {:#x}: ranks "
                            "disagree on the collective",
                            receiver, expected, sender, got))
      .withLayer(Layer::kApplication);
}

Status tooLongStatus(int receiver, int sender, uint64_t sent, uint64_t room) {
  const std::string what = sent ? fmt::format("sent {} B but", sent) : "sent more than";
  return Status(Code::kRemoteError,
                fmt::format("rank {} {} rank {} expected at most {} B: ranks disagree on the "
                            "message size",
                            sender, what, receiver, room))
      .withLayer(Layer::kApplication);
}

}  // namespace ccscope::transports
