#!/usr/bin/env python3
"""Scores `ccscope analyze` on labelled real logs: each NAME.log beside a NAME.json that holds
the layer the thread established. Runs the analyzer once per log (as a user would, one file),
compares the layer it names with the label, and prints the right share in all, per label layer
and per confidence the analyzer gave, the logs it left with "nothing conclusive", and the misses.
Several binaries side by side (the build before a change and after it).

Usage: scripts/score_analyze.py [--bin NAME=PATH ...] [--json OUT] DIR [DIR ...]
  --bin   a binary to score (repeatable; default: build/app/ccscope as "build")
  --json  every case's label and prediction per binary, for a later comparison
Exit 0 when every log was analyzed (whatever the score), 2 on bad arguments."""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIDENCES = ["high", "medium", "low", "none"]


def cases(dirs):
    out = []
    for d in dirs:
        if not os.path.isdir(d):
            sys.exit(f"score_analyze: {d}: not a directory")
        for name in sorted(os.listdir(d)):
            if name.endswith(".json") and os.path.exists(os.path.join(d, name[:-5] + ".log")):
                with open(os.path.join(d, name)) as f:
                    label = json.load(f)
                out.append((os.path.join(d, name[:-5] + ".log"), label.get("layer", "")))
    return out


def predict(binary, log):
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        res = subprocess.run([binary, "analyze", "--json", tmp.name, log], capture_output=True,
                             text=True, timeout=120)
        if res.returncode not in (0, 1):
            return {"layer": "error", "confidence": "none",
                    "verdict": (res.stderr or res.stdout).strip()[:200]}
        with open(tmp.name) as f:
            d = json.load(f)
    d = d.get("diagnosis", d)
    if not d.get("conclusive", False):
        return {"layer": "none", "confidence": "none", "verdict": d.get("verdict", "")}
    return {"layer": d.get("layer", ""), "confidence": d.get("confidence", ""),
            "verdict": d.get("verdict", "")}


def share(right, total):
    return f"{right}/{total}" + (f" ({100 * right / total:.0f}%)" if total else "")


def report(name, rows):
    right = sum(r["right"] for r in rows)
    print(f"== {name}: {share(right, len(rows))} with the labelled layer")
    by_layer = collections.defaultdict(lambda: [0, 0])
    by_conf = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        by_layer[r["label"]][0] += r["right"]
        by_layer[r["label"]][1] += 1
        by_conf[r["confidence"]][0] += r["right"]
        by_conf[r["confidence"]][1] += 1
    print("  per label layer: " + ", ".join(f"{k} {share(*v)}" for k, v in sorted(by_layer.items())))
    print("  per confidence:  " + ", ".join(f"{c} {share(*by_conf[c])}" for c in CONFIDENCES
                                             if c in by_conf))
    none = [r for r in rows if r["layer"] == "none"]
    print(f"  nothing conclusive: {len(none)} of {len(rows)}")
    for r in rows:
        if not r["right"]:
            print(f"  miss {os.path.basename(r['log'])}: {r['label']} labelled, {r['layer']} "
                  f"({r['confidence']}): {r['verdict'][:110]}")


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--json")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    bins = []
    for b in a.bin or [f"build={os.path.join(ROOT, 'build', 'app', 'ccscope')}"]:
        name, _, path = b.partition("=")
        if not path or not os.access(path, os.X_OK):
            print(f"score_analyze: --bin {b}: want NAME=PATH to an executable", file=sys.stderr)
            return 2
        bins.append((name, path))
    todo = cases(a.dirs)
    if not todo:
        print("score_analyze: no NAME.log with NAME.json in " + " ".join(a.dirs), file=sys.stderr)
        return 2
    out = {}
    for name, path in bins:
        rows = []
        for log, label in todo:
            p = predict(path, log)
            rows.append({"log": log, "label": label, **p, "right": p["layer"] == label})
        report(name, rows)
        out[name] = rows
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
