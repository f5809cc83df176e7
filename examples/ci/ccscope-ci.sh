#!/usr/bin/env bash
# The whole CI job for a GPU runner, in one script the workflows only call: find or build
# ccscope, run `bench --transport nccl` on the runner's GPUs, render the HTML report and JUnit,
# and compare with a stored baseline. Without a GPU (or without NCCL in the build) the NCCL
# bench is skipped, said in one line, and the same steps run over shared memory, so every step
# is exercised wherever it runs (the project's own CI runs it that way: tests/deploy).
#
# Usage: examples/ci/ccscope-ci.sh [--out DIR] [--baseline FILE] [--np N] [--sizes B:E]
#   --out       where results.jsonl, report.html, report.md and junit.xml go (default ci-out)
#   --baseline  JSON Lines of an earlier run to compare with (absent file: no comparison)
#   --np        ranks (default: the GPUs nvidia-smi lists, else 2)
#   --sizes     message sizes, -b:-e of bench (default 8:256M on a GPU, 8:1M without)
# Environment: CCSCOPE (the binary; default: `ccscope` on PATH, else build/app/ccscope, else
# it is built with scripts/build.sh), CCSCOPE_CI_TOLERANCE (baseline slowdown allowed, 10%).
# Exit: 0 passed; 1 the bench failed a check, or the report found a regression; 2 bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=ci-out baseline="" np="" sizes=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "ccscope-ci: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"

ccscope=${CCSCOPE:-}
if [ -z "$ccscope" ]; then
  if command -v ccscope >/dev/null; then ccscope=$(command -v ccscope)
  elif [ -x "$root/build/app/ccscope" ]; then ccscope=$root/build/app/ccscope
  else "$root/scripts/build.sh" && ccscope=$root/build/app/ccscope
  fi
fi
echo "ccscope-ci: $("$ccscope" --version) at $ccscope"

gpus=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L | grep -c '^GPU ')
fi
if [ "$gpus" -gt 0 ] && "$ccscope" info 2>/dev/null | grep -q '^transports built in:.*nccl'; then
  args=(bench allreduce --transport nccl --device cuda --np "${np:-$gpus}")
  sizes=${sizes:-8:256M}
else
  echo "ccscope-ci: SKIPPED the NCCL bench: no GPU or no NCCL in this build ($gpus GPU(s));" \
    "running the same steps over shared memory"
  args=(bench allreduce --transport shm --np "${np:-2}")
  sizes=${sizes:-8:1M}
fi
rc=0
"$ccscope" "${args[@]}" -b "${sizes%%:*}" -e "${sizes##*:}" --json "$out/results.jsonl" || rc=$?
[ -s "$out/results.jsonl" ] || { echo "ccscope-ci: the bench wrote no results (exit $rc)" >&2; exit 1; }

report=(report "$out/results.jsonl" --html "$out/report.html" --md "$out/report.md"
        --junit "$out/junit.xml")
if [ -n "$baseline" ] && [ -f "$baseline" ]; then
  report+=(--baseline "$baseline" --tolerance "${CCSCOPE_CI_TOLERANCE:-10%}")
elif [ -n "$baseline" ]; then
  echo "ccscope-ci: no baseline at $baseline: this run's results.jsonl can be stored as one"
fi
"$ccscope" "${report[@]}" || rc=1
echo "ccscope-ci: $out/report.html, $out/junit.xml ($( [ $rc = 0 ] && echo passed || echo FAILED))"
exit "$rc"
