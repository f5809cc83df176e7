#!/usr/bin/env bash
# Builds here, on a machine without a GPU, what scripts/gpu-check.sh runs on one, so that a GPU's
# minutes go to the checks rather than to compiling. Configures against the dependency pack as
# gpu-check.sh configures on the GPU machine (Ninja, RelWithDebInfo, sm_90, the pack on
# CMAKE_PREFIX_PATH; no MPI and no pkg-config, which the GPU machine lacks), builds ccscope and the
# GPU tests (tests/cuda/), then copies what the checks run into a small tree: the binaries
# stripped, CMakeCache.txt, the CTestTestfile.cmake files and GoogleTest's test lists, their
# paths rewritten from the build directory to the copy's. The copy still names this checkout's
# absolute path; on the GPU machine `scripts/gpu-check.sh --no-build --build-dir build/gpu-carry`
# links that path to the checkout there (its relocate step; docs/gpu.md).
#
# Usage: scripts/pack-gpu-build.sh [--deps DIR] [--build DIR] [--out DIR] [--jobs N]
#   --deps DIR   the pack (default build/gpu-deps; scripts/pack-gpu-deps.sh makes it when absent)
#   --build DIR  where it compiles (default build/gpu-prebuilt; kept, so a rerun is incremental)
#   --out DIR    the copy to carry (default build/gpu-carry, inside the checkout so that the
#                device tool can carry it); replaced whole
#   --jobs N     parallel compiles (default nproc)
# Prints the copy's size and what to carry. Environment: GPU_CHECK_CUDA_ARCHITECTURES (default
# 90), GPU_CHECK_CMAKE_ARGS (more configure arguments, shell words) and GPU_CHECK_BUILD_LOCK (a
# file flock serializes builds on, default /tmp/ccscope-build.lock; empty: none), as for
# gpu-check.sh. The binaries link NCCL where CMake finds it here (the CUDA toolkit's); where the
# GPU machine has it only as the pip package, gpu-check.sh's relocate step puts that package's
# lib/ on LD_LIBRARY_PATH.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/build/gpu-deps" build="$root/build/gpu-prebuilt" out="$root/build/gpu-carry"
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --deps) deps=$2; shift ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack-gpu-build: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
  shift
done
abspath() { mkdir -p "$1" && (cd "$1" && pwd); }
deps=$(abspath "$deps") build=$(abspath "$build") out=$(abspath "$out")
say() { echo "pack-gpu-build: $*"; }

configure() {
  [ -f "$deps/STAMP" ] || "$root/scripts/pack-gpu-deps.sh" --out "$deps"
  command -v ninja >/dev/null || { say "ninja not found: the build needs it" >&2; exit 2; }
  local log="$build/configure.log"
  # shellcheck disable=SC2086  # GPU_CHECK_CMAKE_ARGS is shell words on purpose
  if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$deps" \
      -DCMAKE_CUDA_ARCHITECTURES="${GPU_CHECK_CUDA_ARCHITECTURES:-90}" \
      -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON \
      ${GPU_CHECK_CMAKE_ARGS:-} >"$log" 2>&1; then
    tail -20 "$log" >&2
    say "cmake failed: $log" >&2
    exit 1
  fi
  if ! grep -q "ccscope: CUDA kernels for" "$log"; then
    say "no CUDA build here ($(grep -o 'ccscope: no nvcc[^"]*' "$log" || echo 'nvcc not found')):" \
        "nothing a GPU could check" >&2
    exit 2
  fi
}

compile() {
  local lock=${GPU_CHECK_BUILD_LOCK-/tmp/ccscope-build.lock} cmd
  cmd=(cmake --build "$build" -j "$jobs" --target ccscope tests/cuda/all)
  if [ -n "$lock" ] && command -v flock >/dev/null; then cmd=(flock "$lock" "${cmd[@]}"); fi
  say "building ccscope and tests/cuda/ in $build (-j$jobs)"
  "${cmd[@]}" >"$build/build.log" 2>&1 || {
    grep -E "^FAILED:|error:" "$build/build.log" | head -10 >&2
    say "build failed: $build/build.log" >&2
    exit 1
  }
}

# The files the checks read (CTest's, GoogleTest's lists, the cache) and the binaries, stripped.
copy_tree() {
  local tmp=$1 f
  (cd "$build" && find . -name CMakeFiles -prune -o -type f \( -name CMakeCache.txt \
     -o -name CTestTestfile.cmake -o -name '*_include.cmake' -o -name '*_tests.cmake' \) -print) |
    while IFS= read -r f; do
      mkdir -p "$tmp/$(dirname "$f")"
      cp "$build/$f" "$tmp/$f"
    done
  { echo app/ccscope
    (cd "$build" && find tests/cuda -name CMakeFiles -prune -o -type f -perm -u+x -print); } |
    while IFS= read -r f; do
      mkdir -p "$tmp/$(dirname "$f")"
      strip -o "$tmp/$f" "$build/$f" 2>/dev/null || cp "$build/$f" "$tmp/$f"  # not ELF: as is
    done
  find "$tmp" -type f \( -name '*.cmake' -o -name CMakeCache.txt \) -print0 |
    xargs -0 sed -i "s|$build|$out|g"
  { printf '{"source": "%s", "build": "%s", "made_from": "%s", "commit": "%s", "dirty": %s, ' \
      "$root" "$out" "$build" "$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)" \
      "$( [ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ] && echo false || echo true)"
    printf '"host": "%s", "made": "%s"}\n' "$(hostname)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$tmp/carry.json"
}

main() {
  configure
  compile
  local tmp="$out.tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  copy_tree "$tmp"
  rm -rf "$out"
  mv "$tmp" "$out"
  local listed kib rel
  listed=$(ctest --test-dir "$out" -N -R '^gpu\.' | sed -n 's/^Total Tests: //p')
  if [ "${listed:-0}" -eq 0 ]; then
    say "ctest lists no gpu.* test in $out" >&2
    exit 1
  fi
  kib=$(du -sk "$out" | cut -f1)
  rel=${out#"$root"/}
  say "$out: $((kib / 1024)) MiB ($kib KiB), $(find "$out" -type f -perm -u+x | wc -l) binaries," \
      "$listed gpu.* tests listed"
  [ "$rel" != "$out" ] || say "warning: $out is outside $root: the device tool carries only paths" \
                              "inside the checkout" >&2
  [ "$kib" -le $((40 * 1024)) ] || say "warning: over 40 MiB: the checkout and the carried" \
                                       "paths travel within 64 MiB together" >&2
  say "carry: [\"$rel\"]; on the GPU machine: scripts/gpu-check.sh --no-build --build-dir $rel"
}

main
