#!/usr/bin/env bash
# Builds the libFuzzer targets of `ccscope analyze` with clang (-fsanitize=fuzzer,address): the
# line parsers, and the pickle reader of Flight Recorder dumps; runs each for a short fixed budget.
# Usage: scripts/fuzz-analyze.sh [seconds]   (per target, default 60; FUZZ_RUNS=N runs N inputs)
# Exits non-zero when the build fails or the fuzzer finds a crash, leak or timeout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_BUDGET="${1:-60}"
WORK="${FUZZ_WORKDIR:-$(mktemp -d /tmp/ccscope-fuzz-analyze.XXXXXX)}"
CXX="${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++)}"
mkdir -p "$WORK/corpus" "$WORK/pickle-corpus" "$WORK/artifacts" "$WORK/obj"

# The default rules are embedded the same way the CMake build does it.
RULES=$(ls "$ROOT"/diagnostics/rules/*.toml | sort | paste -sd ';' -)
cmake -DOUT="$WORK/embedded_rules.cc" "-DRULES=$RULES" -P "$ROOT/diagnostics/embed_rules.cmake"

# The analyzer is compiled once and linked into each target.
SOURCES=("$ROOT"/diagnostics/analyze/*.cc "$WORK/embedded_rules.cc" "$ROOT/reports/diagnosis.cc"
         "$ROOT/core/status.cc")
FLAGS=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$ROOT")
TARGETS=(line_parsers_fuzz pickle_reader_fuzz)
echo "fuzz-analyze: building with $CXX"
(cd "$WORK/obj" && "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer-no-link,address -c "${SOURCES[@]}")
for target in "${TARGETS[@]}"; do
  "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer,address "$ROOT/diagnostics/analyze/fuzz/$target.cc" \
    "$WORK"/obj/*.o -o "$WORK/$target" -ltomlplusplus -lz -lfmt
done

# Seeds: the example lines of every rule plus a few multi-line shapes.
grep -h '^example' "$ROOT"/diagnostics/rules/*.toml | sed 's/^example = //' > "$WORK/corpus/rule-examples"
printf "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Disabled\n" > "$WORK/corpus/ibstat"
printf 'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 600.0  13.0\n     1  13.0 600.0\nUnidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 600.0   1.0\n     1   1.0 600.0\n' > "$WORK/corpus/p2p"
printf '{"pg_status": {"0": {"last_enqueued_collective": 3}}, "entries": [{"collective_seq_id": 3, "profiling_name": "nccl:all_reduce", "pg_id": 0}]}\n' > "$WORK/corpus/fr.json"
printf '[1,3]<stdout>:[2024-01-01 00:00:00] h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with status=12\n[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) last enqueued NCCL work: 5, last completed NCCL work: 4\n' > "$WORK/corpus/ranks"
# The pickle reader's: two Flight Recorder dumps as PyTorch 2.11 wrote them, and a protocol 5
# pickle with frames, memoize, sets, bytes and an object.
cp "$ROOT"/diagnostics/analyze/fuzz/pickle_seeds/* "$WORK/pickle-corpus/"

LIMIT=(-max_total_time="$SECONDS_BUDGET")
if [[ -n "${FUZZ_RUNS:-}" ]]; then LIMIT=(-runs="$FUZZ_RUNS"); fi
failed=0
for target in "${TARGETS[@]}"; do
  corpus="$WORK/corpus"
  if [[ $target == pickle_reader_fuzz ]]; then corpus="$WORK/pickle-corpus"; fi
  echo "fuzz-analyze: running $target ${LIMIT[*]} (work dir $WORK)"
  set +e
  "$WORK/$target" "${LIMIT[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$WORK/artifacts/$target-" -print_final_stats=1 "$corpus" 2>&1 | tail -25
  rc=${PIPESTATUS[0]}
  set -e
  if [[ $rc -ne 0 ]]; then
    echo "fuzz-analyze: $target FAILED (exit $rc)" >&2
    failed=1
  fi
done
if [[ $failed -ne 0 ]]; then
  echo "fuzz-analyze: FAILED; reproducer(s): $(ls "$WORK/artifacts")" >&2
  exit 1
fi
echo "fuzz-analyze: OK"
