#!/usr/bin/env bash
# perf/compare.sh still lists and dispatches every subcommand, and every perf script parses:
# --help names each subcommand, an unknown one exits 2 with one line, each <what> --help prints
# its usage; bash -n over the shell scripts, py_compile over the Python ones.
# Usage: compare_help_test.sh [PYTHON=python3]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${1:-python3}
compare=$root/perf/compare.sh
names=(mpi algorithms latency builds points pages bind single-copy flight handoff freeze analyze ucx)
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

check_help() {
  local help name out rc
  help=$(bash "$compare" --help) || fail "--help exited $?"
  [ "$(bash "$compare")" = "$help" ] || fail "no argument does not print --help"
  for name in "${names[@]}"; do
    grep -qE "^  $name " <<<"$help" || fail "--help lacks $name"
    out=$(bash "$compare" "$name" --help) || fail "$name --help exited $?"
    grep -q "^usage: perf/compare.sh $name" <<<"$out" || fail "$name --help prints no usage line"
  done
  out=$(bash "$compare" no-such-thing 2>&1)
  rc=$?
  [ "$rc" = 2 ] || fail "an unknown subcommand exited $rc, not 2"
  [ "$(wc -l <<<"$out")" = 1 ] || fail "an unknown subcommand printed more than one line: $out"
}

check_syntax() {
  local f cache
  for f in "$root"/perf/*.sh "$root"/perf/cmd/*.sh "${BASH_SOURCE[0]}"; do
    bash -n "$f" || fail "bash -n $f"
  done
  cache=$(mktemp -d)
  for f in "$root"/perf/py/*.py; do
    PYTHONPYCACHEPREFIX=$cache "$python" -m py_compile "$f" || fail "py_compile $f"
  done
  rm -rf "$cache"
}

check_help
check_syntax
[ "$fails" = 0 ] && echo "ok: ${#names[@]} subcommands" || exit 1
