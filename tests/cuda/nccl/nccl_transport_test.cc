// The NCCL transport on one GPU: a one-rank communicator comes up through our bootstrap and goes
// down cleanly, says what it moves, and refuses host memory. (Messages need two ranks, which
// NCCL refuses on one device: scripts/gpu-check.sh's nccl step tries them.)
#include "transports/nccl/nccl_transport.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cuda/ipc/gpu_probe.h"
#include "tests/transports/rank_runner.h"

namespace ccscope::transports {
namespace {

using conformance::RankContext;

int oneRank(RankContext& c) {
  RANK_CHECK(c, std::string(c.transport.name()) == "nccl", c.transport.name());
  const Capabilities caps = c.transport.caps();
  RANK_CHECK(c, caps.stream_ordered && !caps.verifies_tags, "nccl is stream-ordered, untagged");
  RANK_CHECK(c, caps.memory_kinds.has(MemoryKind::kCuda), caps.memory_kinds.names());
  std::vector<char> host(64);
  auto r = c.transport.registerMemory(host.data(), host.size(), MemoryKind::kHost);
  RANK_CHECK(c, !r.isOk(), "host memory registered");
  RANK_CHECK(c, c.transport.setupNote().find("NCCL " + ncclRuntimeVersion()) != std::string::npos,
             c.transport.setupNote());
  c.transport.close();
  RANK_CHECK(c, !c.transport.connected(), "still connected after close");
  return 0;
}

TEST(NcclTransport, OneRankComesUpAndGoesDown) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(conformance::runRanks(conformance::localRanks("nccl", 1, 120), oneRank), "");
}

}  // namespace
}  // namespace ccscope::transports
