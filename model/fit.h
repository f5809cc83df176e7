// `ccscope model fit`: alpha and beta per hop class and gamma, by least squares over measured
// rows, each row's counts taken from replaying its schedules (simulate.h). Which path is
// critical depends on the parameters, so the fit alternates: simulate with the current
// parameters, solve the non-negative least squares of time over the critical paths' counts,
// until the parameters settle. Residuals are relative (each row weighs as much as any other).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/simulate.h"

namespace ccscope::model {

struct FitRow {
  SimInput sim;
  double measured_s = 0;
  double busbw_factor = 1;
  uint64_t bytes = 0;
  double working_set = 0;  // bytes of buffers on the row's busiest machine
};

struct RowResidual {
  double measured_s = 0, predicted_s = 0;
  double error() const { return predicted_s / measured_s - 1; }
};

struct Fit {
  Params params;
  std::array<bool, kFeatures> fitted{};  // false: no row exercised it (left at 0)
  double r2 = 0;                         // of log(time)
  double max_abs_error = 0;              // relative
  int iterations = 0;
  double llc_bytes = 0;           // the cache size that fitted best (0: none modelled)
  std::vector<RowResidual> rows;  // as the rows were given
};

// With each row's beyond_cache as given.
core::Result<Fit> fitRows(const std::vector<FitRow>& rows);
// Also the cache: each size from 1 MiB to 1 GiB (and none) tried, the best fit kept. Machines
// rarely say their cache size inside a VM, and what matters is where the rows' times turn.
core::Result<Fit> fitRowsAndCache(std::vector<FitRow> rows);

// Non-negative least squares min |A x - b| with x >= 0 (A row-major, rows x cols; cols small):
// the active-set method of Lawson and Hanson.
std::vector<double> nnls(const std::vector<double>& a, const std::vector<double>& b, int cols);

}  // namespace ccscope::model
