// The GPU layer's verdict in `ccscope diagnose` from every rank's report, and the kernel probe's
// child judged on how it ended (a real child that never finishes stands in for a hung GPU).
#include "diagnostics/live/gpu_layer.h"

#include <gtest/gtest.h>

namespace ccscope::diagnostics {
namespace {

using nlohmann::json;
using transports::GpuDevice;
using transports::GpuReport;
using transports::GpuSeverity;

json withDevice(GpuSeverity severity, const std::string& text, int index = 1) {
  GpuReport r;
  GpuDevice d;
  d.cuda_index = index;
  d.bus_id = "0000:3b:00.0";
  d.kernel_probe = "ok in 80.0 ms";
  if (!text.empty()) d.findings.push_back({severity, text});
  r.devices.push_back(d);
  return gpuReportJson(r);
}

TEST(GpuLayerTest, NoGpuAnywhereSkipsWithCudasReason) {
  GpuReport r;
  r.cuda_compiled = true;
  r.no_gpu = "CUDA driver version is insufficient for CUDA runtime version";
  ProbeResult p = judgeGpuLayer({gpuReportJson(r), gpuReportJson(r)}, {"h0", "h0"});
  EXPECT_EQ(p.outcome, ProbeOutcome::kSkip);
  EXPECT_EQ(p.layer, core::Layer::kGpu);
  EXPECT_EQ(p.detail,
            "skipped: no GPU (CUDA driver version is insufficient for CUDA runtime version)");
}

TEST(GpuLayerTest, FaultFailsNamingRankDeviceAndBusId) {
  ProbeResult p = judgeGpuLayer(
      {withDevice(GpuSeverity::kFault, ""), withDevice(GpuSeverity::kFault, "PCIe link x8 of x16")},
      {"h0", "h1"});
  EXPECT_EQ(p.outcome, ProbeOutcome::kFail);
  EXPECT_EQ(p.detail, "rank 1 (h1): GPU 1 (0000:3b:00.0): PCIe link x8 of x16");
  EXPECT_EQ(p.culprit.ranks, std::vector<int>{1});
  EXPECT_EQ(p.culprit.hosts, std::vector<std::string>{"h1"});
}

TEST(GpuLayerTest, WarningOnlyWarnsAndRanksOnOneHostAreCountedOnce) {
  json w = withDevice(GpuSeverity::kWarning, "PCIe gen 1 of 5: may be power-saving");
  ProbeResult p = judgeGpuLayer({w, w}, {"h0", "h0"});
  EXPECT_EQ(p.outcome, ProbeOutcome::kWarn);
  EXPECT_EQ(p.evidence.size(), 1u) << "the same GPU read by two ranks of one host";
  EXPECT_EQ(std::string(outcomeName(p.outcome)), "WARN");
}

TEST(GpuLayerTest, UnknownReadingsAreNamedNotCalledHealthy) {
  GpuReport r;
  GpuDevice d;
  d.cuda_index = 0;
  d.bus_id = "0000:3b:00.0";
  d.kernel_probe = "ok in 80.0 ms";
  d.unknown = {"NVML readings (libnvidia-ml.so.1: cannot open shared object file)"};
  r.devices.push_back(d);
  ProbeResult p = judgeGpuLayer({gpuReportJson(r)}, {"h0"});
  EXPECT_EQ(p.outcome, ProbeOutcome::kPass);
  EXPECT_NE(p.detail.find("unknown: NVML readings"), std::string::npos) << p.detail;
}

TEST(GpuLayerTest, ChildThatNeverFinishesNamesTheDevice) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "sleep 30"};
  spec.timeout_s = 0.3;
  ChildRun run = runChild(spec);
  GpuDevice d;
  d.cuda_index = 3;
  d.bus_id = "0000:b1:00.0";
  judgeKernelRun(run, spec.timeout_s, d);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].severity, GpuSeverity::kFault);
  EXPECT_NE(d.findings[0].text.find("did not finish within 0.3 s"), std::string::npos);
  ProbeResult p = judgeGpuLayer({[&] {
                                  GpuReport r;
                                  r.devices.push_back(d);
                                  return gpuReportJson(r);
                                }()},
                                {"h0"});
  EXPECT_EQ(p.outcome, ProbeOutcome::kFail);
  EXPECT_NE(p.detail.find("GPU 3 (0000:b1:00.0): kernel probe:"), std::string::npos) << p.detail;
}

TEST(GpuLayerTest, ChildErrorLineBecomesTheFinding) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "echo 'ccscope-gpu: error cudaDeviceSynchronize: an illegal memory access was "
               "encountered (cudaErrorIllegalAddress 700)'; exit 1"};
  GpuDevice d;
  judgeKernelRun(runChild(spec), spec.timeout_s, d);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].text,
            "kernel probe: cudaDeviceSynchronize: an illegal memory access was encountered "
            "(cudaErrorIllegalAddress 700)");
}

TEST(GpuLayerTest, ProbeNotCompiledInIsUnknown) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo 'ccscope-gpu: skip not compiled in'; exit 5"};
  GpuDevice d;
  judgeKernelRun(runChild(spec), spec.timeout_s, d);
  EXPECT_TRUE(d.findings.empty());
  EXPECT_EQ(d.kernel_probe, "not compiled in");
  EXPECT_EQ(d.unknown, std::vector<std::string>{"kernel probe (not compiled in)"});
}

}  // namespace
}  // namespace ccscope::diagnostics
