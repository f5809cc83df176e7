#!/bin/sh
# What an installed ccscope must do, run where it was installed: by scripts/package-test.sh in a
# fresh Debian 12 root, and by the Dockerfile in the image it builds. POSIX sh: a minimal root
# has no bash. Exit 0 when every check passed, 1 at the first that failed.
set -eu
fail() { echo "installed-check: $*" >&2; exit 1; }
[ "$(command -v ccscope)" = /usr/bin/ccscope ] || fail "ccscope is not /usr/bin/ccscope"
ccscope --version
info=$(ccscope info)
echo "$info"
# What info calls built in is what the binary links: no nccl without libnccl.
if ! ldd /usr/bin/ccscope | grep -q libnccl; then
  echo "$info" | grep '^transports built in:' | grep -qv nccl || fail "info lists nccl, not linked"
fi
ccscope bench allreduce --np 2 -b 8 -e 64K --iters 5 --warmup_iters 1
log=$(mktemp)
echo "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000" >"$log"
ccscope analyze "$log" | grep -q "^Layer: *application" || fail "analyze did not read a log"
rm -f "$log"
for f in /usr/share/ccscope/rules/nccl_catalogue.toml /usr/share/ccscope/profiles/quick.toml \
  /usr/share/doc/ccscope/copyright /usr/share/man/man1/ccscope.1; do
  [ -s "$f" ] || fail "$f is missing"
done
if command -v man >/dev/null; then
  man -P cat ccscope 2>/dev/null | grep -q SUBCOMMANDS || fail "man ccscope has no SUBCOMMANDS"
fi
echo "installed-check: passed"
