#include "transports/component_report.h"

namespace ccscope::transports {

#ifdef CCSCOPE_HAVE_UCX
ComponentReport probeUcx();
#endif
#ifdef CCSCOPE_HAVE_VERBS
ComponentReport probeVerbs();
#endif
#ifdef CCSCOPE_HAVE_CUDA
ComponentReport probeCuda();
#endif
#ifdef CCSCOPE_HAVE_NCCL
ComponentReport probeNccl();
#endif

std::vector<ComponentReport> probeComponents() {
  std::vector<ComponentReport> out;
#ifdef CCSCOPE_HAVE_UCX
  out.push_back(probeUcx());
#else
  out.push_back({"ucx", false, "", {}, "not compiled in (libucx-dev not found at build time)"});
#endif
#ifdef CCSCOPE_HAVE_VERBS
  out.push_back(probeVerbs());
#else
  out.push_back(
      {"verbs", false, "", {}, "not compiled in (libibverbs-dev not found at build time)"});
#endif
#ifdef CCSCOPE_HAVE_CUDA
  out.push_back(probeCuda());
#else
  out.push_back({"cuda", false, "", {}, "not compiled in (CUDA toolkit not found at build time)"});
#endif
#ifdef CCSCOPE_HAVE_NCCL
  out.push_back(probeNccl());
#else
  out.push_back({"nccl", false, "", {}, "not compiled in (NCCL not found at build time)"});
#endif
  return out;
}

}  // namespace ccscope::transports
