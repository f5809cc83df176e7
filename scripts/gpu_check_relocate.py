"""The relocate step of scripts/gpu-check.sh (with --no-build): a build tree made on another
machine (scripts/pack-gpu-build.sh) and carried in holds the absolute paths it was made at
(CTestTestfile.cmake, GoogleTest's discovered test lists, CMakeCache.txt). Where those paths differ
from this checkout and build directory, a symbolic link at each recorded path makes it resolve
here (its parent made with mkdir -p), never replacing anything: a recorded path that exists and
is something else fails the step with one line. Then the binaries' shared libraries are looked
up (ldd): one missing here but found in the CUDA toolkit's or a pip package's lib/ (NCCL is, on
the GPU machine, only the pip package's) gets its folder put on LD_LIBRARY_PATH."""

import glob
import json
import os
import re
import shutil
import subprocess
import time

from gpu_check_lib import cache_value, run

BINARIES = ("app/ccscope", "tests/cuda")  # a file, or a folder whose executables are checked


class RelocateError(Exception):
    """A recorded path that cannot be made to resolve here, said in one line."""


def recorded_paths(build_dir):
    """(source root, build directory) that build_dir/CMakeCache.txt was written for."""
    src = cache_value(build_dir, "CMAKE_HOME_DIRECTORY") or cache_value(build_dir,
                                                                         "ccscope_SOURCE_DIR")
    binary = cache_value(build_dir, "ccscope_BINARY_DIR") or cache_value(build_dir,
                                                                          "CMAKE_CACHEFILE_DIR")
    return src, binary


def same(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


def link_recorded(build_dir, root, make=True):
    """Makes the source root and build directory recorded in build_dir's CMakeCache.txt resolve to
    root and build_dir. Returns the links, each {"path", "target", "for", "made"}: made False
    where make is False (what would be linked) or where a link from an earlier run already
    resolves it; [] when the recorded paths are these. The source root first: a build directory
    recorded under it then usually resolves through it."""
    src, binary = recorded_paths(build_dir)
    if not src or not binary:
        raise RelocateError(f"{build_dir}/CMakeCache.txt records no CMAKE_HOME_DIRECTORY or "
                            "ccscope_BINARY_DIR: not a configured ccscope build tree")
    links, planned = [], {}
    for recorded, here, what in ((src, root, "source root"), (binary, build_dir, "build tree")):
        path = resolve_planned(recorded, planned)
        if same(path, here):
            if path == recorded and os.path.islink(path) and path != here:
                links.append({"path": path, "target": os.path.realpath(path), "for": what,
                              "made": False})
            continue
        if os.path.lexists(path):
            kind = (f"a link to {os.readlink(path)}" if os.path.islink(path) else
                    "a folder" if os.path.isdir(path) else "a file")
            raise RelocateError(f"the build tree was made with its {what} at {recorded}, which "
                                f"exists here and is {kind}, not {here}: move it away, or build "
                                "at a path that is free on this machine")
        if make:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.symlink(here, path)
            except OSError as e:
                raise RelocateError(f"cannot link {path} -> {here} (the {what} the build tree "
                                    f"was made with): {e.strerror}") from e
        planned[recorded] = here
        links.append({"path": path, "target": here, "for": what, "made": make})
    return links


def resolve_planned(path, planned):
    """path as it will read once the planned links (recorded path -> here) exist."""
    for recorded, here in planned.items():
        if path == recorded or path.startswith(recorded.rstrip("/") + "/"):
            return here + path[len(recorded.rstrip("/")):]
    return path


def executables(build_dir):
    out = []
    for rel in BINARIES:
        path = os.path.join(build_dir, rel)
        if os.path.isfile(path):
            out.append(path)
        for top, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d != "CMakeFiles"]
            out += [os.path.join(top, f) for f in files
                    if "." not in f and os.access(os.path.join(top, f), os.X_OK)]
    return out


def missing_libraries(r, exes):
    """{library or symbol version: [binaries]} that ldd says are not found."""
    missing = {}
    for exe in exes:
        res = run(["ldd", exe], 30, r.path("gpu.log"))
        for ln in (res.out + res.err).splitlines():
            m = (re.match(r"\s*(\S+) => not found", ln) or
                 re.search(r"version `([^']+)' not found", ln))
            if m:
                missing.setdefault(m.group(1), []).append(os.path.basename(exe))
    return missing


def library_dirs():
    """Folders where a library the carried binaries need may lie on a GPU machine: the CUDA
    toolkit's, then the pip packages' (nvidia/nccl/lib, nvidia/cu13/lib, ...) of python3."""
    dirs = ["/usr/local/cuda/lib64", "/usr/local/cuda/lib",
            "/usr/local/cuda/targets/x86_64-linux/lib"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        top = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        dirs += [os.path.join(top, "lib64"), os.path.join(top, "targets", "x86_64-linux", "lib")]
    py = shutil.which("python3")
    code = "import nvidia; print('\\n'.join(nvidia.__path__))"
    try:
        tops = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=30,
                              check=False).stdout.split() if py else []
    except (OSError, subprocess.TimeoutExpired):
        tops = []
    for top in tops:
        dirs += sorted(glob.glob(os.path.join(top, "*", "lib")))
    return dirs


def find_missing(r, exes, notes):
    """ldd's missing libraries; a library found in library_dirs() puts its folder on
    LD_LIBRARY_PATH (for every later step's commands) and is looked up again."""
    missing = missing_libraries(r, exes) if shutil.which("ldd") else {}
    dirs = library_dirs() if missing else []
    found = {lib: next((d for d in dirs if os.path.exists(os.path.join(d, lib))), None)
             for lib in missing}
    add = list(dict.fromkeys(d for d in found.values() if d))
    if add:
        old = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(add + old)
        notes.append("LD_LIBRARY_PATH gets " + ", ".join(
            f"{d} ({', '.join(lib for lib, x in found.items() if x == d)})" for d in add))
        missing = missing_libraries(r, exes)
    return missing


def step_relocate(r, a, root):
    """Links the recorded paths, then checks the binaries' libraries. False when the step failed
    (every step after it would fail for the same reason)."""
    t0 = time.monotonic()
    try:
        links = link_recorded(a.build_dir, root)
    except RelocateError as e:
        r.record("relocate", "fail", time.monotonic() - t0, str(e))
        return False
    src, binary = recorded_paths(a.build_dir)
    notes = [f"{'linked' if x['made'] else 'already linked'} {x['path']} -> {x['target']}"
             for x in links] or ["the build tree is at the paths it was made at"]
    exes = executables(a.build_dir)
    missing = find_missing(r, exes, notes)
    extra = {"links": links, "recorded": {"source": src, "build": binary},
             "binaries": len(exes), "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
             "carried": read_json(os.path.join(a.build_dir, "carry.json"))}
    if missing:
        what = ", ".join(f"{lib} ({', '.join(sorted(set(b)))})" for lib, b in missing.items())
        r.record("relocate", "fail", time.monotonic() - t0,
                 f"{'; '.join(notes)}; not found here: {what}", **extra)
        return False
    checked = (f"the libraries of {len(exes)} binaries found" if exes else
               "no binaries built to check")
    r.record("relocate", "pass", time.monotonic() - t0, f"{'; '.join(notes)}; {checked}", **extra)
    return True


def read_json(path):
    """scripts/pack-gpu-build.sh's carry.json (where and from what the tree was made), or None."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
