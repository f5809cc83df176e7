#!/usr/bin/env bash
# Builds the Debian package (a host build: no CUDA, no tests) and installs it in a fresh Debian 12
# root made by debootstrap, with apt-get resolving its declared dependencies; then runs
# packaging/installed-check.sh there (`ccscope --version`, `info`, a short `bench`, `analyze`,
# the installed files and `man`), the same checks deploy/Dockerfile runs in its image.
# Usage: scripts/package-test.sh [BUILD_DIR]   (default build-pkg; the .deb is left there)
# Needs root (debootstrap, chroot, mounts) and the Debian mirror of /etc/apt; without root it
# builds the package and says the install test was skipped (exit 0, not a pass).
# Exit: 0 passed (or skipped), 1 a step failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-pkg}
start=$(date +%s)
step() { echo "package-test: $* ($(($(date +%s) - start)) s)"; }

step "building the package in $build"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCCSCOPE_CUDA=OFF \
  -DCCSCOPE_BUILD_TESTS=OFF >"$build/cmake.log" 2>&1 || { cat "$build/cmake.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target ccscope ccscope_manpage >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log"; exit 1; }
(cd "$build" && rm -f ccscope_*.deb && cpack -G DEB >cpack.log 2>&1) || { cat "$build/cpack.log"; exit 1; }
deb=$(ls "$build"/ccscope_*.deb)
dpkg-deb -f "$deb" Package Version Depends

if [ "$(id -u)" != 0 ]; then
  echo "package-test: SKIPPED the install test: debootstrap and chroot need root"
  exit 0
fi
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null ||
  true)
mirror=${mirror:-http://deb.debian.org/debian}
chroot_dir=$(mktemp -d /var/tmp/ccscope-deb12.XXXXXX)
cleanup() {
  for m in dev/pts dev proc sys; do umount -l "$chroot_dir/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$chroot_dir"
}
trap cleanup EXIT

step "debootstrap bookworm (minbase) from $mirror into $chroot_dir"
debootstrap --variant=minbase bookworm "$chroot_dir" "$mirror" >"$build/debootstrap.log" 2>&1 ||
  { tail -20 "$build/debootstrap.log"; exit 1; }
mount --bind /proc "$chroot_dir/proc"
mount --bind /sys "$chroot_dir/sys"
mount --bind /dev "$chroot_dir/dev"
mount --bind /dev/pts "$chroot_dir/dev/pts"
cp "$deb" "$chroot_dir/tmp/"
in_root() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

step "apt-get install ./$(basename "$deb") in the fresh root"
in_root apt-get update -qq >"$build/apt.log" 2>&1
in_root apt-get install -y -qq --no-install-recommends man-db "/tmp/$(basename "$deb")" \
  >>"$build/apt.log" 2>&1 || { tail -30 "$build/apt.log"; exit 1; }

step "packaging/installed-check.sh in the fresh root"
cp "$root/packaging/installed-check.sh" "$chroot_dir/tmp/"
in_root sh /tmp/installed-check.sh
step "passed"
