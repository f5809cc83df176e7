#!/usr/bin/env bash
# Quick start: set up, build, and run the main job: allreduce on local ranks over shared memory,
# 8 B to 64 MiB, results also in build/allreduce.jsonl. Extra arguments go to `ccscope bench`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
exec "$root/build/app/ccscope" bench allreduce --transport shm -b 8 -e 64M \
  --json "$root/build/allreduce.jsonl" "$@"
