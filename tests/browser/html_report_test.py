#!/usr/bin/env python3
"""Browser test of the HTML report (ctest label "browser").

Makes real results (`ccscope bench allreduce --algo all` over shm and a tcp run), renders them
with `ccscope report --baseline`, opens the page in headless Chromium over the DevTools pipe and
checks: no console errors, no exceptions, no network requests; each chart holds one
path.series-line per series (computed here from the JSON Lines, independently of the C++ code)
with one point per message size; every point has a hover <title>; baseline paths are dashed;
the table has one row per result. A negative control (the same page with an external image and
a console.error) must be caught, so the checks can fail. Writes the screenshot to OUT_DIR.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp_page  # noqa: E402


def run(cmd, timeout=300, ok=(0,)):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in ok:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-2000:]}\n"
                 f"{proc.stderr[-2000:]}")
    return proc


def expected_series(path):
    """{series name: number of sizes}, by the rule in docs/reports.md (single dtype/op runs)."""
    label = os.path.splitext(os.path.basename(path))[0]
    sizes = OrderedDict()
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") != "result":
                continue
            name = f"{label} · {rec['transport']} · {rec['algorithm']}"
            sizes.setdefault(name, {"oop": set(), "ip": set()})
            sizes[name]["ip" if rec["in_place"] else "oop"].add(rec["bytes"])
    return OrderedDict((k, len(v["oop"] or v["ip"])) for k, v in sizes.items())


CHART_PROBE = r"""
(() => {
  const charts = [...document.querySelectorAll('figure.chart')].map(fig => ({
    id: fig.id,
    lines: [...fig.querySelectorAll('path.series-line')].map(p => ({
      series: p.dataset.series, declared: Number(p.dataset.points),
      drawn: (p.getAttribute('d').match(/[ML]/g) || []).length})),
    baselines: [...fig.querySelectorAll('path.baseline-line')].map(p => ({
      series: p.dataset.series, drawn: (p.getAttribute('d').match(/[ML]/g) || []).length,
      dashed: p.getAttribute('stroke-dasharray') !== null})),
    points: fig.querySelectorAll('circle.pt:not(.baseline-pt)').length,
    tips: [...fig.querySelectorAll('circle.pt:not(.baseline-pt) > title')]
            .filter(t => /busbw .* GB\/s/.test(t.textContent)).length,
    width: fig.querySelector('svg').getBoundingClientRect().width,
  }));
  return {charts, rows: document.querySelectorAll('table.rows tbody tr').length,
          heatmap: !!document.querySelector('#heatmap'),
          verdict: document.querySelector('#verdict').textContent};
})()
"""


def check_page(page, expected, baseline_of, n_rows):
    errors = []
    charts = page["charts"]
    if len(charts) != 2:
        errors.append(f"expected 2 charts (busbw, latency), found {len(charts)}")
    for chart in charts:
        got = {l["series"]: l for l in chart["lines"]}
        if sorted(got) != sorted(expected):
            errors.append(f"{chart['id']}: series {sorted(got)} != expected {sorted(expected)}")
        for name, n in expected.items():
            line = got.get(name)
            if line and (line["drawn"] != n or line["declared"] != n):
                errors.append(f"{chart['id']}: {name}: {line['drawn']} points drawn, "
                              f"{line['declared']} declared, {n} sizes in the results")
        want_points = sum(expected.values())
        if chart["points"] != want_points or chart["tips"] != want_points:
            errors.append(f"{chart['id']}: {chart['points']} points with {chart['tips']} hover "
                          f"titles, expected {want_points}")
        base = {b["series"]: b for b in chart["baselines"]}
        for name in expected:
            if baseline_of(name) and (name not in base or base[name]["drawn"] != expected[name]
                                      or not base[name]["dashed"]):
                errors.append(f"{chart['id']}: {name}: dashed baseline path missing or short")
            if not baseline_of(name) and name in base:
                errors.append(f"{chart['id']}: {name}: baseline path without a baseline")
        if chart["width"] < 300:
            errors.append(f"{chart['id']}: rendered only {chart['width']} px wide")
    if page["rows"] != n_rows:
        errors.append(f"table has {page['rows']} rows, results have {n_rows}")
    if not page["heatmap"]:
        errors.append("heatmap section missing")
    return errors


def inspect(browser, html_path):
    url = "file://" + os.path.abspath(html_path)
    events = cdp_page.load(browser, url)
    return cdp_page.problems_in(events, url), cdp_page.evaluate(browser, CHART_PROBE)


def negative_control(browser, html_path, out_dir):
    """The checks must catch a page that loads something and logs an error."""
    with open(html_path, encoding="utf-8") as f:
        html = f.read()
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    html = html.replace("<body>", '<body><img src="http://127.0.0.1:9/probe.png" alt="">'
                        '<script>console.error("negative control")</script>', 1)
    bad = os.path.join(out_dir, "report-negative-control.html")
    with open(bad, "w", encoding="utf-8") as f:
        f.write(html)
    problems, _ = inspect(browser, bad)
    caught_net = any("network request: http://127.0.0.1:9/" in p for p in problems)
    caught_console = any("negative control" in p for p in problems)
    if not (caught_net and caught_console):
        return [f"negative control not caught (network {caught_net}, console {caught_console}): "
                f"{problems}"]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ccscope", required=True)
    ap.add_argument("--out-dir", required=True, help="results, report and screenshot go here")
    ap.add_argument("--screenshot", help="screenshot path (default OUT_DIR/report-screenshot.png)")
    ap.add_argument("--screenshot-height", type=int, default=2400, help="page height captured")
    ap.add_argument("--max-bytes", default="1M")
    args = ap.parse_args()
    chromium = cdp_page.find_chromium()
    if not chromium:
        print("SKIP: chromium not found (apt-get install chromium; scripts/install-deps.sh)")
        return 77
    out = os.path.abspath(args.out_dir)
    os.makedirs(out, exist_ok=True)
    shm, tcp = os.path.join(out, "shm.jsonl"), os.path.join(out, "tcp.jsonl")
    common = ["bench", "allreduce", "--np", "4", "-b", "8", "-e", args.max_bytes, "-n", "10"]
    run([args.ccscope, *common, "--algo", "all", "--json", shm])
    run([args.ccscope, *common, "--transport", "tcp", "--json", tcp])
    html = os.path.join(out, "report.html")
    run([args.ccscope, "report", shm, tcp, "--baseline", shm, "--html", html])
    expected = OrderedDict(list(expected_series(shm).items()) + list(expected_series(tcp).items()))
    n_rows = sum(1 for p in (shm, tcp) for l in open(p) if json.loads(l)["type"] == "result")

    browser = cdp_page.Browser(chromium, os.path.join(out, "chromium.log"))
    try:
        browser.open_page()
        problems, page = inspect(browser, html)
        errors = problems + check_page(page, expected, lambda s: s.startswith("shm "), n_rows)
        shot = args.screenshot or os.path.join(out, "report-screenshot.png")
        cdp_page.screenshot(browser, shot, max_height=args.screenshot_height)
        errors += negative_control(browser, html, out)
    finally:
        browser.close()
    if not os.path.getsize(shot) > 10000:
        errors.append(f"screenshot {shot} is suspiciously small")
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"OK: {len(expected)} series x 2 charts, {n_rows} rows, no console errors, no network "
          f"requests; verdict '{page['verdict']}'; screenshot {shot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
