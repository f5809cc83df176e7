#include "app/model_fit_record.h"

namespace ccscope::app {

// Bandwidths are written as GB/s, the unit people compare; 0 stands for "none". The map is its
// own inverse: it also turns GB/s back into seconds per byte.
double gbpsOf(double beta) { return beta > 0 ? 1e-9 / beta : 0; }

nlohmann::json fitRecordJson(const FitRecord& r) {
  const model::Params& p = r.params;
  return {{"type", "model_fit"},
          {"transport", r.transport},
          {"alpha_intra_us", p.alpha[model::kIntra] * 1e6},
          {"bw_intra_gbps", gbpsOf(p.beta[model::kIntra])},
          {"alpha_inter_us", p.alpha[model::kInter] * 1e6},
          {"bw_inter_gbps", gbpsOf(p.beta[model::kInter])},
          {"gamma_gbps", gbpsOf(p.gamma)},
          {"beyond_cache_gbps", gbpsOf(p.delta)},
          {"llc_bytes", r.llc_bytes},
          {"fitted", r.fitted},
          {"r2", r.r2},
          {"max_abs_error", r.max_abs_error},
          {"rows", r.rows},
          {"cores", r.cores},
          {"one_machine", r.one_machine},
          {"min_segment_bytes", r.min_segment_bytes}};
}

FitRecord fitRecordFromJson(const nlohmann::json& j) {
  FitRecord r;
  r.transport = j.value("transport", std::string());
  model::Params& p = r.params;
  p.alpha = {j.value("alpha_intra_us", 0.0) * 1e-6, j.value("alpha_inter_us", 0.0) * 1e-6};
  p.beta = {gbpsOf(j.value("bw_intra_gbps", 0.0)), gbpsOf(j.value("bw_inter_gbps", 0.0))};
  p.gamma = gbpsOf(j.value("gamma_gbps", 0.0));
  p.delta = gbpsOf(j.value("beyond_cache_gbps", 0.0));
  if (auto f = j.find("fitted"); f != j.end() && f->is_array() && f->size() == r.fitted.size())
    for (size_t i = 0; i < r.fitted.size(); ++i)
      r.fitted[i] = (*f)[i].is_boolean() && bool((*f)[i]);
  r.llc_bytes = j.value("llc_bytes", 0.0);
  r.r2 = j.value("r2", 0.0);
  r.max_abs_error = j.value("max_abs_error", 0.0);
  r.rows = j.value("rows", size_t{0});
  r.cores = j.value("cores", 0);
  r.one_machine = j.value("one_machine", false);
  r.min_segment_bytes = j.value("min_segment_bytes", r.min_segment_bytes);
  return r;
}

}  // namespace ccscope::app
