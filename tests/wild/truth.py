#!/usr/bin/env python3
"""Writes each wild case's expected figures from what its log prints, with parsing of its own.

steptop's parser plays no part here: every case's `case.toml` names, in `[[truth.line]]`
entries, Python regexes written by hand for that log, and this script computes the figures
from the numbers those regexes capture. `tests/wild.rs` holds `steptop report --format json`
to them.

    python3 tests/wild/truth.py            # (re)writes fixtures/wild/*/truth.json
    python3 tests/wild/truth.py --check    # exits 1 when a truth.json is not what it would write
    python3 tests/wild/truth.py CASE...    # only these cases (folder names), printed

A `[[truth.line]]` has `regex` (searched in every record: the file is split on \\n and \\r and
ANSI escapes are removed) and optionally `fields`, a table of figure = Python expression over
the regex's named groups (numbers where they parse as numbers). A group named as a figure is
that figure. Figures:

    step        the global training step the line reports
    loss        the per-step training loss
    step_ms     this step's time (also step_s, s_per_it, its = iterations per second)
    avg_ms      a running average of the step time since the start (the last one is the truth)
    elapsed_s   training time so far (a cumulative total: differenced, never a step time)
    data_ms     this step's data-loading wait (also data_s)
    samples_per_s, tokens_per_s (the whole job's), tokens_per_gpu_s

A line with figures but no step belongs to the latest step (a record of its own when that
step has those figures already, or when no step came yet). Optional keys of `[truth]`:
`zero_based` (the counter starts at 0: the step reached may be read as printed or plus one),
`global_batch` and `tokens_per_step` (as the log prints them: samples/s and tokens/s are then
derived from the median step time where the log does not print them, and marked derived),
`run_start` (a regex for a line that starts a new run; without it, a step that goes back to
an earlier number does). The figures are those of the last run in the file.
"""

import json
import math
import re
import statistics
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "wild"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
FIGURES = {
    "step", "loss", "step_ms", "step_s", "s_per_it", "its", "avg_ms", "elapsed_s",
    "data_ms", "data_s", "samples_per_s", "tokens_per_s", "tokens_per_gpu_s",
}


def number(text):
    if isinstance(text, str) and text.strip().lower() in ("nan", "inf", "-inf"):
        return float(text)
    try:
        return int(text)
    except (TypeError, ValueError):
        pass
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return text


def records(path):
    text = path.read_bytes().decode("utf-8", "replace")
    for line in re.split(r"\r\n|\n|\r", text):
        yield ANSI.sub("", line)


def figures_of(line_specs, record):
    """Every figure the record gives, from the first spec whose regex matches it."""
    for spec in line_specs:
        m = spec["re"].search(record)
        if not m:
            continue
        groups = {k: number(v) for k, v in m.groupdict().items() if v is not None}
        out = {k: v for k, v in groups.items() if k in FIGURES}
        for name, expr in spec.get("fields", {}).items():
            out[name] = eval(expr, {"math": math}, dict(groups))
        return out
    return None


def normalise(f):
    """One unit per figure: milliseconds for times."""
    if "step_s" in f:
        f["step_ms"] = f.pop("step_s") * 1000.0
    if "s_per_it" in f:
        f["step_ms"] = f.pop("s_per_it") * 1000.0
    if "its" in f:
        its = f.pop("its")
        f["its"] = its
        if its > 0 and "step_ms" not in f:
            f["step_ms"] = 1000.0 / its
    if "data_s" in f:
        f["data_ms"] = f.pop("data_s") * 1000.0
    return f


def runs(case_dir, case):
    """The steps of each run, in order: a list of runs, each a list of (step, figures)."""
    truth = case["truth"]
    specs = [dict(s, re=re.compile(s["regex"])) for s in truth["line"]]
    start = re.compile(truth["run_start"]) if "run_start" in truth else None
    all_runs, current, last_step = [], [], None
    for f in case["files"]:
        for record in records(case_dir / f["name"]):
            if start and start.search(record) and current:
                all_runs.append(current)
                current, last_step = [], None
            figs = figures_of(specs, record)
            if not figs:
                continue
            figs = normalise(figs)
            step = figs.pop("step", None)
            if step is None:
                if current and current[-1][0] is not None and not figs.keys() & current[-1][1].keys():
                    current[-1][1].update(figs)
                elif figs:
                    # Before any step line, or a figure the latest step already has (a timer
                    # printed before its step): its own record, counted in the run's means.
                    current.append((None, figs))
                continue
            if start is None and last_step is not None and step < last_step and current:
                all_runs.append(current)
                current = []
            current.append((int(step), figs))
            last_step = step
    if current:
        all_runs.append(current)
    return all_runs


def steady(times):
    """True when the run's speed does not change: after the first tenth, the median step time
    of every eighth of the run is within 25% of the run's median, and no stretch of 20 steps
    runs at twice the median or half of it (a slow phase that long is a change, however it
    averages out), and the mean is within half the median of it (outlier steps are not
    half again the run's time)."""
    times = times[len(times) // 10:]
    if len(times) < 10:
        return None
    whole = statistics.median(times)
    size = max(5, len(times) // 8)
    for i in range(0, len(times) - size + 1, size):
        w = statistics.median(times[i:i + size])
        if abs(w / whole - 1) > 0.25:
            return False
    for i in range(0, len(times) - 20 + 1):
        w = statistics.median(times[i:i + 20])
        if w >= 2 * whole or w <= whole / 2:
            return False
    # Slow steps that add half the run's median again to its mean: a run of spikes.
    return statistics.fmean(times) <= 1.5 * whole


def truth_of(case_dir):
    case = tomllib.loads((case_dir / "case.toml").read_text())
    t = case["truth"]
    all_runs = runs(case_dir, case)
    if not all_runs:
        raise SystemExit(f"{case_dir.name}: no line matched the case's regexes")
    run = all_runs[-1]
    figs = [f for _, f in run]

    def col(name):
        return [f[name] for f in figs if name in f]

    out = {"runs": len(all_runs), "steps_last": max(s for s, _ in run if s is not None)}
    out["zero_based"] = bool(t.get("zero_based", False))
    step_ms = col("step_ms")
    avg = col("avg_ms")
    elapsed = [(s, f["elapsed_s"]) for s, f in run if "elapsed_s" in f and s is not None]
    # A total that goes back was restarted (a clock reset after warm-up): only the part
    # after the last restart is differenced.
    for i in range(len(elapsed) - 1, 0, -1):
        if elapsed[i][1] < elapsed[i - 1][1]:
            elapsed = elapsed[i:]
            break
    series = None
    if step_ms:
        out["step_time_ms"] = statistics.fmean(step_ms)
        out["step_time_from"] = "printed step times, mean"
        series = step_ms
    elif avg:
        out["step_time_ms"] = avg[-1]
        out["step_time_from"] = "the printed running average, last"
    elif len(elapsed) >= 2:
        (s0, e0), (s1, e1) = elapsed[0], elapsed[-1]
        out["step_time_ms"] = (e1 - e0) * 1000.0 / (s1 - s0)
        out["step_time_from"] = "the printed cumulative time, differenced"
    else:
        out["step_time_ms"] = None
    if series is None and len(elapsed) >= 3:
        series = [
            (b[1] - a[1]) * 1000.0 / (b[0] - a[0])
            for a, b in zip(elapsed, elapsed[1:])
            if b[0] > a[0]
        ]
    both = [(f["data_ms"], f["step_ms"]) for f in figs if "data_ms" in f and "step_ms" in f]
    out["data_share"] = (
        statistics.fmean(d for d, _ in both) / statistics.fmean(s for _, s in both)
        if both else None
    )
    its = col("its")
    out["iters_per_s"] = statistics.median(its) if its else None
    median_ms = statistics.median(series) if series else out["step_time_ms"]
    for name, per_step in (("samples_per_s", "global_batch"), ("tokens_per_s", "tokens_per_step")):
        printed = col(name)
        out[f"{name}_derived"] = False
        if printed:
            out[name] = statistics.median(printed)
        elif per_step in t and median_ms:
            out[name] = t[per_step] * 1000.0 / median_ms
            out[f"{name}_derived"] = True
        else:
            out[name] = None
    losses = col("loss")
    last = losses[-1] if losses else None
    out["loss_last"] = "nan" if isinstance(last, float) and math.isnan(last) else last
    tgs = col("tokens_per_gpu_s")
    out["tokens_per_gpu_s"] = statistics.median(tgs) if tgs else None
    out["steady"] = steady(series) if series else None
    return out


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")]
    dirs = [ROOT / n for n in names] if names else sorted(p.parent for p in ROOT.glob("*/case.toml"))
    stale = []
    for d in dirs:
        text = json.dumps(truth_of(d), indent=2, sort_keys=True) + "\n"
        path = d / "truth.json"
        if names:
            print(f"{d.name}: {text}")
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(d.name)
        else:
            path.write_text(text)
    if stale:
        print("truth.json out of date (run python3 tests/wild/truth.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
