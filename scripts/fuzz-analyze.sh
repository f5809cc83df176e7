#!/usr/bin/env bash
# Builds the libFuzzer targets of every parser of input ccscope did not write, with clang
# (-fsanitize=fuzzer,address,undefined): the analyzer's line parsers, the pickle reader of Flight
# Recorder dumps, the file readers (JSON Lines results, rule files, burn-in profiles, NCCL RAS
# reports) and the rendezvous store's wire protocol (a real server on loopback); runs each for a
# short fixed budget on a corpus seeded from real files.
# Usage: scripts/fuzz-analyze.sh [seconds]   (per target, default 60; FUZZ_RUNS=N runs N inputs)
# Exits non-zero when the build fails or the fuzzer finds a crash, leak or timeout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_BUDGET="${1:-60}"
WORK="${FUZZ_WORKDIR:-$(mktemp -d /tmp/ccscope-fuzz-analyze.XXXXXX)}"
CXX="${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++)}"
mkdir -p "$WORK/corpus" "$WORK/pickle-corpus" "$WORK/inputs-corpus" "$WORK/store-corpus" \
  "$WORK/artifacts" "$WORK/obj" "$WORK/pool"

# The default rules are embedded the same way the CMake build does it.
RULES=$(ls "$ROOT"/diagnostics/rules/*.toml | sort | paste -sd ';' -)
cmake -DOUT="$WORK/embedded_rules.cc" "-DRULES=$RULES" -P "$ROOT/diagnostics/embed_rules.cmake"

# The analyzer is compiled once and linked into each target; the other readers' sources go into
# an archive, from which each target takes what it uses.
SOURCES=("$ROOT"/diagnostics/analyze/*.cc "$WORK/embedded_rules.cc" "$ROOT/reports/diagnosis.cc"
         "$ROOT/core/status.cc")
# What the file readers and the store server use, and no more (each file costs a compile).
POOL=("$ROOT"/reports/{jsonl_reader,burnin_records,model_records,pair_matrix}.cc
      "$ROOT"/burnin/{pairing,profile}.cc "$ROOT/core/units.cc"
      "$ROOT"/launch/{socket_util,store_server,wire}.cc)
FLAGS=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$ROOT")
SAN=address,undefined
TARGETS=(line_parsers_fuzz pickle_reader_fuzz inputs_fuzz store_wire_fuzz)
echo "fuzz-analyze: building with $CXX"
compile() {  # DIR SOURCE...: one compiler per core
  (cd "$1" && shift && printf '%s\n' "$@" |
    xargs -P "$(nproc)" -I{} "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer-no-link,$SAN -c {})
}
compile "$WORK/obj" "${SOURCES[@]}"
compile "$WORK/pool" "${POOL[@]}"
ar rcs "$WORK/libpool.a" "$WORK"/pool/*.o
for target in "${TARGETS[@]}"; do
  src="$ROOT/diagnostics/analyze/fuzz/$target.cc"
  [[ -f $src ]] || src="$ROOT/tests/fuzz/$target.cc"
  "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer,$SAN "$src" "$WORK"/obj/*.o "$WORK/libpool.a" \
    -o "$WORK/$target" -ltomlplusplus -lz -lfmt -lspdlog -lpthread
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
# The file readers': a first byte picking the reader (0 JSON Lines, 1 rules, 2 profile, 3 RAS),
# then a real file of that kind from the repository.
n=0
seed() { { printf "\\$(printf %03o "$1")"; cat "$2"; } >"$WORK/inputs-corpus/seed-$((n++))"; }
for f in "$ROOT"/tests/data/burnin/*.jsonl "$ROOT"/tests/data/pairs/*.jsonl; do
  [[ -f $f ]] && seed 0 "$f"
done
for f in "$ROOT"/diagnostics/rules/*.toml; do seed 1 "$f"; done
for f in "$ROOT"/deploy/profiles/*.toml; do seed 2 "$f"; done
for f in "$ROOT"/tests/data/ras/*; do [[ -f $f ]] && seed 3 "$f"; done
# The store's: a hello then a get, a set and a health request; the same as raw bytes.
printf '\001\005\014\001\000\000\000\000\000\000\000\001\000\000\000k\012\010\001\000\000\000\000\000\000\000' \
  >"$WORK/store-corpus/hello-get-health"
printf '\003CCST\003\000\001\000\004\000\000\000abcd' >"$WORK/store-corpus/raw"

LIMIT=(-max_total_time="$SECONDS_BUDGET")
if [[ -n "${FUZZ_RUNS:-}" ]]; then LIMIT=(-runs="$FUZZ_RUNS"); fi
failed=0
for target in "${TARGETS[@]}"; do
  case $target in
    pickle_reader_fuzz) corpus="$WORK/pickle-corpus" ;;
    inputs_fuzz) corpus="$WORK/inputs-corpus" ;;
    store_wire_fuzz) corpus="$WORK/store-corpus" ;;
    *) corpus="$WORK/corpus" ;;
  esac
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
