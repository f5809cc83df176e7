#!/usr/bin/env bash
# Static checks of the tree, run by scripts/test.sh after the build:
#   1. clang-format --dry-run -Werror over every tracked C++ file (.clang-format);
#   2. scripts/check_shape.py: files at most 400 lines, Python and shell functions at most 60;
#      scripts/rules_table.py --check: docs/rules.md lists the rules as shipped;
#   3. clang-tidy (.clang-tidy's checks) over the translation units changed since a base commit
#      (every unit: scripts/check-code.sh --all before landing a large change). The function
#      size limit holds on every unit through check_shape.py, which counts C++ bodies as
#      clang-tidy's readability-function-size does (they agree on every function of the tree).
# Usage: scripts/check-code.sh [--base REF | --all] [--build DIR] [--jobs N]
#   --base REF: full checks on the .cc/.h files changed since REF ($CCSCOPE_TIDY_BASE, default
#   HEAD~1: the commit under test); a changed header is checked in every unit that includes it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build" base=${CCSCOPE_TIDY_BASE:-HEAD~1} jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --all) base="" ;;
    --base) base=$2; shift ;;
    --build) build=$(cd "$2" && pwd); shift ;;
    --jobs) jobs=$2; shift ;;
    *) echo "check-code: unknown argument '$1' (see the usage in $0)" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$build/compile_commands.json" ] ||
  { echo "check-code: no $build/compile_commands.json: build first (scripts/build.sh)" >&2; exit 2; }
cd "$root"
status=0

echo "check-code: clang-format"
git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | xargs -r clang-format --dry-run -Werror || status=1

echo "check-code: shape"
python3 scripts/check_shape.py "$root" || status=1

echo "check-code: docs/rules.md"
python3 scripts/rules_table.py --check || status=1

# Our translation units (not generated ones under the build directory), and those to check fully.
# CUDA units (.cu) are nvcc's: clang-tidy cannot parse nvcc's command lines; nvcc checks them
# with every warning as an error.
units=$(python3 -c 'import json, sys
root, build = sys.argv[1] + "/", sys.argv[2] + "/"
files = {e["file"] for e in json.load(open(build + "compile_commands.json"))}
print("\n".join(sorted(f for f in files
                       if f.startswith(root) and not f.startswith(build) and not f.endswith(".cu"))))' \
  "$root" "$build")
if [ -n "$base" ]; then
  git rev-parse -q --verify "$base^{commit}" >/dev/null || base=$(git rev-list --max-parents=0 HEAD)
  changed=$(git diff --name-only "$base" -- '*.cc' '*.h' | sed "s|^|$root/|")
  # A unit gets the full checks when it or a header it includes changed.
  full=$(python3 - "$build" $changed <<'PY'
import json, os, shlex, sys
build, changed = sys.argv[1], set(sys.argv[2:])
headers = {c for c in changed if c.endswith(".h")}
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    args = shlex.split(e["command"])
    obj = args[args.index("-o") + 1] if "-o" in args else ""
    deps = os.path.join(e["directory"], obj + ".d")  # the compiler's -MD list of what it read
    text = open(deps).read() if headers and os.path.exists(deps) else ""
    if e["file"] in changed or any(h in text for h in headers):
        print(e["file"])
PY
)
  full=$(echo "$full" | grep -Fx -f <(echo "$units") || true)  # ours, not nvcc's or generated
  echo "check-code: clang-tidy (all checks on $(echo "$full" | grep -c . || true) units changed" \
       "since $base)"
else
  full=$units
  echo "check-code: clang-tidy (all checks, $(echo "$units" | wc -l) units)"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "$full" | grep . | xargs -r -P "$jobs" -I{} sh -c '
  clang-tidy -p "$1" --quiet "$2" 2>/dev/null || echo "check-code: clang-tidy failed on $2"
' _ "$build" {} > "$out" || true
if grep -E "(warning|error):|clang-tidy failed" "$out" | sort -u | grep .; then status=1; fi
[ "$status" -eq 0 ] && echo "check-code: all checks passed"
exit "$status"
