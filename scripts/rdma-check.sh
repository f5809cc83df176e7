#!/usr/bin/env bash
# The operator's check between two hosts with RDMA devices: ccscope's sendrecv over verbs against
# perftest's ib_write_bw and ib_send_lat, and ccscope's allreduce over verbs against UCX and Open
# MPI's UCX PML, with the ratios and the goal (sendrecv >= 0.9x ib_write_bw from 64 KiB); writes
# ${OUT:-build/rdma-check}/rdma-check.json. Run it on the first host; docs/rdma.md says what to
# expect. Options: scripts/rdma-check.sh --help (scripts/rdma_check.py does the work).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Debian's interpreter where there is one, as the tests use; otherwise the first on PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
if [ -z "$py" ]; then
  echo "rdma-check: python3 not found" >&2
  exit 5
fi
exec "$py" "$root/scripts/rdma_check.py" "$@"
