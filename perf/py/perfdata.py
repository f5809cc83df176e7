"""What the summaries of perf/compare.sh share: reading a result directory's JSON Lines, sizes,
medians and ratios printed alike."""
import json
import pathlib
import statistics

median = statistics.median


def records(path):
    """Every JSON object of a JSON Lines file; a line that is not one (a cut run) is skipped."""
    for line in pathlib.Path(path).read_text().splitlines():
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


def results(path):
    """The out-of-place result records of a file (the goals are stated on them)."""
    for r in records(path):
        if r.get("type") == "result" and not r.get("in_place"):
            yield r


def runs(directory):
    """(path, the dot-separated fields of its name) for each JSON Lines file of a directory."""
    for f in sorted(pathlib.Path(directory).glob("*.jsonl")):
        yield f, f.name.split(".")


def ranks(field):
    """The rank count of a file name's npN field."""
    return int(field[2:])


def is_auto(r):
    """Whether a row is `--algo auto`'s (older files say so only in the note)."""
    return r.get("requested_algorithm") == "auto" or r.get("note", "").startswith("auto picked")


def human(b):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b // size}{unit}"
    return f"{b}B"


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def num(x, width, digits=2):
    """x right-aligned in width columns, or a dash where there is none."""
    return f"{x:{width}.{digits}f}" if x else f"{'-':>{width}}"


def ratio(a, b, width=6):
    """a / b right-aligned, or a dash where either is missing."""
    return f"{a / b:{width}.2f}" if a and b else f"{'-':>{width}}"


def trial_ratios(x, ref):
    """x's value over ref's in each trial both have ({trial: value} each), in trial order."""
    return [x[t] / ref[t] for t in sorted(x) if t in ref and ref[t]]


def ratios_text(ratios):
    """The median of per-trial ratios, then every one: "1.023; 1.01 0.98 ..."."""
    if not ratios:
        return "-"
    return f"{median(ratios):.3f}; " + " ".join(f"{r:.2f}" for r in ratios)
