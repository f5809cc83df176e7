// The findings drawn from NVML readings, through a fake NVML table (the seam nvml_loader.h
// declares): no driver is needed, and the readings a real GPU cannot be made to show on demand
// (a downgraded link, uncorrectable ECC errors, a pending row remap, a link down) are covered.
#include "transports/probe/gpu_health.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "transports/probe/gpu_report.h"

namespace ccscope::transports {
namespace {

using nvml::Device;
using nvml::Return;

// One fake GPU; the table's functions are plain C pointers, so they read this instance.
struct FakeGpu {
  Return status = nvml::kSuccess;  // what every device query returns
  unsigned gen = 5, gen_max = 5, width = 16, width_max = 16;
  unsigned long long uncorrected = 0, uncorrected_aggregate = 0;
  unsigned remap_pending = 0, remap_failure = 0;
  unsigned nvlinks = 4, nvlink_down = 99;  // links 0..nvlinks-1 exist; one may be down
};
FakeGpu fake;

Device handle() { return reinterpret_cast<Device>(&fake); }

const nvml::Api& table() {
  static const nvml::Api api = [] {
    nvml::Api a;
    a.errorString = [](Return r) { return r == nvml::kErrorNotSupported ? "Not Supported" : "?"; };
    a.systemGetDriverVersion = [](char* v, unsigned n) {
      std::snprintf(v, n, "570.86.15");
      return nvml::kSuccess;
    };
    a.deviceGetCount = [](unsigned* n) { return *n = 1, nvml::kSuccess; };
    a.deviceGetHandleByIndex = [](unsigned, Device* d) { return *d = handle(), nvml::kSuccess; };
    a.deviceGetPciInfo = [](Device, nvml::PciInfo* p) {
      std::strcpy(p->busId, "00000000:3B:00.0");
      return fake.status;
    };
    a.deviceGetName = [](Device, char* n, unsigned len) {
      std::snprintf(n, len, "NVIDIA H100 80GB HBM3");
      return fake.status;
    };
    a.deviceGetEccMode = [](Device, nvml::EnableState* cur, nvml::EnableState* pending) {
      *cur = *pending = nvml::kFeatureEnabled;
      return fake.status;
    };
    a.deviceGetTotalEccErrors = [](Device, nvml::MemoryErrorType t, nvml::EccCounterType c,
                                   unsigned long long* n) {
      bool unc = t == nvml::kMemoryErrorUncorrected;
      *n = !unc ? 0 : c == nvml::kVolatileEcc ? fake.uncorrected : fake.uncorrected_aggregate;
      return fake.status;
    };
    a.deviceGetRemappedRows = [](Device, unsigned* c, unsigned* u, unsigned* p, unsigned* f) {
      *c = 0, *u = fake.remap_pending, *p = fake.remap_pending, *f = fake.remap_failure;
      return fake.status;
    };
    a.deviceGetCurrPcieLinkGeneration = [](Device, unsigned* v) {
      return *v = fake.gen, fake.status;
    };
    a.deviceGetMaxPcieLinkGeneration = [](Device, unsigned* v) {
      return *v = fake.gen_max, fake.status;
    };
    a.deviceGetCurrPcieLinkWidth = [](Device, unsigned* v) { return *v = fake.width, fake.status; };
    a.deviceGetMaxPcieLinkWidth = [](Device, unsigned* v) {
      return *v = fake.width_max, fake.status;
    };
    a.deviceGetNvLinkState = [](Device, unsigned link, nvml::EnableState* s) {
      if (fake.status != nvml::kSuccess) return fake.status;
      if (link >= fake.nvlinks) return nvml::kErrorInvalidArgument;
      *s = link == fake.nvlink_down ? nvml::kFeatureDisabled : nvml::kFeatureEnabled;
      return nvml::kSuccess;
    };
    // No memory-info, retired-pages or pending-retirement symbols: an older driver's NVML.
    return a;
  }();
  return api;
}

class GpuHealthTest : public ::testing::Test {
 protected:
  void SetUp() override { fake = FakeGpu{}; }
  static NvmlReading read() {
    NvmlSnapshot s = readNvml(table());
    EXPECT_EQ(s.error, "");
    EXPECT_EQ(s.driver_version, "570.86.15");
    return s.devices.at(0);
  }
  // The one finding of `severity` whose text contains `needle`, or "" when there is none.
  static std::string finding(const std::vector<GpuFinding>& v, GpuSeverity severity,
                             const std::string& needle) {
    for (const auto& f : v)
      if (f.severity == severity && f.text.find(needle) != std::string::npos) return f.text;
    return "";
  }
};

TEST_F(GpuHealthTest, HealthyGpuHasNoFinding) {
  NvmlReading r = read();
  EXPECT_EQ(r.bus_id, "0000:3b:00.0");
  EXPECT_EQ(r.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.nvlink_up.size(), 4u);
  EXPECT_TRUE(judgeNvml(r).empty());
}

TEST_F(GpuHealthTest, DowngradedWidthIsAFault) {
  fake.width = 8;
  auto f = judgeNvml(read());
  EXPECT_NE(finding(f, GpuSeverity::kFault, "x8 of x16"), "");
}

TEST_F(GpuHealthTest, LowerGenIsOnlyAWarningBecauseIdleGpusSavePower) {
  fake.gen = 1;
  auto f = judgeNvml(read());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, GpuSeverity::kWarning);
  EXPECT_NE(f[0].text.find("gen 1 of 5"), std::string::npos) << f[0].text;
  EXPECT_NE(f[0].text.find("recheck under load"), std::string::npos) << f[0].text;
}

TEST_F(GpuHealthTest, UncorrectedEccSinceDriverLoadIsAFault) {
  fake.uncorrected = 2;
  fake.uncorrected_aggregate = 2;
  auto f = judgeNvml(read());
  EXPECT_NE(finding(f, GpuSeverity::kFault, "2 uncorrectable ECC errors"), "");
}

TEST_F(GpuHealthTest, PastUncorrectedEccOnlyIsAWarning) {
  fake.uncorrected_aggregate = 3;
  auto f = judgeNvml(read());
  EXPECT_NE(finding(f, GpuSeverity::kWarning, "3 uncorrectable ECC errors over"), "");
  EXPECT_EQ(finding(f, GpuSeverity::kFault, "ECC"), "");
}

TEST_F(GpuHealthTest, PendingRowRemapWarnsAndAFailedRemapIsAFault) {
  fake.remap_pending = 1;
  EXPECT_NE(finding(judgeNvml(read()), GpuSeverity::kWarning, "row remapping pending"), "");
  fake.remap_failure = 1;
  EXPECT_NE(finding(judgeNvml(read()), GpuSeverity::kFault, "row remapping failed"), "");
}

TEST_F(GpuHealthTest, NvLinkDownAmongUpLinksIsAFault) {
  fake.nvlink_down = 2;
  NvmlReading r = read();
  EXPECT_EQ(r.nvlink_down, std::vector<unsigned>{2});
  EXPECT_NE(finding(judgeNvml(r), GpuSeverity::kFault, "NVLink link(s) 2 down (3 up)"), "");
}

TEST_F(GpuHealthTest, UnknownReadingsStayUnknownAndAreNeverHealthy) {
  fake.status = nvml::kErrorNotSupported;
  fake.width = 1;  // would be a fault if it were read
  NvmlReading r = read();
  EXPECT_FALSE(r.pcie_width || r.ecc_enabled || r.ecc_uncorrected || r.remapped);
  EXPECT_FALSE(r.nvlink_known);
  EXPECT_TRUE(judgeNvml(r).empty());
  auto named = [&](const std::string& what) {
    return std::any_of(r.unknown.begin(), r.unknown.end(),
                       [&](const std::string& u) { return u.rfind(what, 0) == 0; });
  };
  EXPECT_TRUE(named("PCIe width (Not Supported)"));
  EXPECT_TRUE(named("ECC mode (Not Supported)"));
  EXPECT_TRUE(named("NVLink (Not Supported)"));
  EXPECT_TRUE(named("memory (not in this driver's NVML)"));
  EXPECT_TRUE(named("retired pages (double-bit) (not in this driver's NVML)"));
}

TEST_F(GpuHealthTest, MergeMatchesCudaDevicesByBusIdAndKeepsNvmlErrorsUnknown) {
  GpuReport r;
  r.cuda_compiled = true;
  r.devices.push_back({0, "0000:3b:00.0", "H100", false, {}, {}, {}, ""});
  r.devices.push_back({1, "0000:5e:00.0", "H100", false, {}, {}, {}, ""});
  fake.width = 8;
  mergeNvml(r, readNvml(table()));
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_TRUE(r.devices[0].nvml_read);
  EXPECT_NE(finding(r.devices[0].findings, GpuSeverity::kFault, "x8 of x16"), "");
  EXPECT_FALSE(r.devices[1].nvml_read);
  EXPECT_TRUE(r.devices[1].findings.empty());
  ASSERT_EQ(r.devices[1].unknown.size(), 1u);
  EXPECT_EQ(r.devices[1].unknown[0], "NVML readings (device not listed)");

  GpuReport none;
  none.devices.push_back({0, "0000:3b:00.0", "H100", false, {}, {}, {}, ""});
  mergeNvml(none, NvmlSnapshot{"libnvidia-ml.so.1: cannot open shared object file", "", {}});
  EXPECT_EQ(none.devices[0].unknown.at(0),
            "NVML readings (libnvidia-ml.so.1: cannot open shared object file)");
}

TEST_F(GpuHealthTest, GpuThatCudaCannotUseWhileNvmlListsItIsAFault) {
  GpuReport r;
  r.cuda_compiled = true;
  r.no_gpu = "CUDA driver version is insufficient for CUDA runtime version";
  mergeNvml(r, readNvml(table()));
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].cuda_index, -1);
  EXPECT_NE(finding(r.devices[0].findings, GpuSeverity::kFault, "CUDA cannot use it"), "");
}

TEST(GpuBusIdTest, NvmlAndCudaFormsAgree) {
  EXPECT_EQ(normalizeBusId("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalizeBusId("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalizeBusId("NOT-A-BUS"), "not-a-bus");
}

}  // namespace
}  // namespace ccscope::transports
