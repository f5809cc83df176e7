// The pair matrix read as host effects plus link residuals, so that one slow host is reported as
// one host and not as its n-1 links: a symmetric median polish over the log of each pair's
// figure (log x_ab = mu + h_a + h_b + e_ab), robust scales (MAD) of the host effects and the
// residuals, and a verdict where a host or a link is both far below the population and far
// outside its spread.
#pragma once

#include <string>
#include <vector>

namespace ccscope::burnin {

struct PairValue {
  int a = 0, b = 0;  // unit indices
  double value = 0;  // larger is better (bandwidth), > 0
};

enum class Verdict { kPass, kDegraded, kFailed };
const char* verdictName(Verdict v);

struct Thresholds {
  double degraded = 0.7;  // below this share of what the population predicts: degraded
  double failed = 0.3;    // below this share: failed
  double min_z = 4;       // and at least this many robust deviations out
};

struct Finding {
  bool host = true;  // a host (unit a) or a link (a, b)
  int a = 0, b = -1;
  double share = 1;  // measured / predicted (the host's typical link / the population's)
  double z = 0;      // robust deviations below
  Verdict verdict = Verdict::kPass;
};

struct MatrixFit {
  int units = 0;
  double typical = 0;                       // exp(mu): a healthy pair's figure
  std::vector<double> host_share;           // exp(h_a) per unit (NaN: not measured)
  double host_spread = 0, link_spread = 0;  // 1.4826 * MAD, in log units
  std::vector<Finding> findings;            // worst first
  std::string note;                         // why nothing could be judged, if so
};

// `values` may hold a pair more than once (measured again): the best figure counts.
MatrixFit analyzeMatrix(int units, const std::vector<PairValue>& values, const Thresholds& t);

}  // namespace ccscope::burnin
