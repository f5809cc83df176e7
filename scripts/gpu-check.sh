#!/usr/bin/env bash
# The one command for a machine with one NVIDIA GPU: configures and builds build/gpu against the
# dependency pack (scripts/pack-gpu-deps.sh), or, with --no-build --build-dir DIR, takes a build
# made elsewhere (scripts/pack-gpu-build.sh) and links it to the paths it was made at; then runs
# the GPU tests, the kernel benchmark, compute-sanitizer, ccscope bench with --device cuda over
# every collective and transport, concurrent jobs over cuda-ipc, and the killed-rank check, within
# a time budget; writes ${OUT:-build/gpu-check}/gpu-check.json.
# The steps and options: scripts/gpu-check.sh --help (scripts/gpu_check.py does the work: the
# JSON, JUnit and time limits are Python's standard library's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Debian's interpreter where there is one, as the tests use; otherwise the first on PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
if [ -z "$py" ]; then
  out=${OUT:-$root/build/gpu-check}
  mkdir -p "$out"
  printf '{"verdict": "fail", "error": "python3 not found", "steps": []}\n' >"$out/gpu-check.json"
  echo "gpu-check: python3 not found" >&2
  exit 1
fi
exec "$py" "$root/scripts/gpu_check.py" "$@"
