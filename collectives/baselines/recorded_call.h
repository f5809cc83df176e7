// A vendor library's collective as one flight-recorder entry, for the baselines whose calls
// the executor never sees (MPI's, NCCL's): begun before the call, ended with its outcome.
#pragma once

#include "collectives/collective_backend.h"
#include "core/flight_record.h"
#include "core/status.h"

namespace ccscope::collectives {

// `algorithm` must outlive the recorder (a string literal): flight records may be dumped later.
template <typename Call>
core::Status recordedCall(core::FlightRecorder* recorder, const OpConfig& cfg,
                          const char* algorithm, Call&& call) {
  if (!recorder) return call();
  core::FlightEntry& fe =
      recorder->begin(collectiveName(cfg.collective), algorithm, core::dataTypeName(cfg.dtype),
                      cfg.count * core::dataTypeSize(cfg.dtype), 1);
  core::Status s = call();
  core::FlightRecorder::end(fe, s.isOk());
  return s;
}

}  // namespace ccscope::collectives
