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
    avg_ms      a running average of the step time (also avg_s), since the run's start or, with
                `avg_key`, since the start of what `avg_key` names (an epoch); `avg_steps`, the
                steps it covers (default: the steps since the first line of its segment)
    avg_data_ms, avg_samples_per_s   the data wait's and the samples/s's running averages
    elapsed_s   training time so far (a cumulative total: differenced, never a step time)
    data_ms     this step's data-loading wait (also data_s)
    samples_per_s, tokens_per_s (the whole job's), tokens_per_gpu_s

A line with figures but no step belongs to the latest step (a record of its own when that
step has those figures already, or when no step came yet). Optional keys of `[truth]`:
`zero_based` (the counter starts at 0: the step reached may be read as printed or plus one),
`global_batch` and `tokens_per_step` (as the log prints them: samples/s and tokens/s are then
derived from the step time where the log does not print them, and marked derived),
`run_start` (a regex for a line that starts a new run; without it, a step that goes back to
an earlier number does), `pause` (a regex for the lines of an evaluation or a checkpoint),
`tqdm_smoothing` (the rate is a tqdm bar's moving average with this factor, 0.3 by default in
tqdm: each step's own time is recovered from two redraws one step apart, `(rate - (1 -
factor) x rate before) / factor`, at least a tenth of the rate; a redraw of the same step
gives no time; after a jump of several steps the rate is taken as it is).
The figures are those of the last run in the file.

What a figure means (docs/figures.md says the same; steptop is held to it):

- Each printed figure stands for the steps it covers. A per-step value stands for the steps
  since the previous training line; a running average, differenced from the first line of
  its segment, for the steps between that line and its own; an elapsed total, for the steps
  between two of its lines. The run's figure is the step-weighted mean, taken from what
  covers the most steps: running averages, then elapsed totals, then per-step values (a tie
  goes to the first). Rates are the same as times: steps over the time they took (a
  step-weighted harmonic mean of the printed rates).
- The steps up to a run's first training line, and up to the first line of a running
  average's segment (an epoch's first batch, when the loader restarts), are the start: a
  compile, a loader's first fetches. They are left out, never weighed as more than they are.
- Evaluation and checkpoint pauses are not training steps: a training line right after a
  `pause` line whose time is over 1.5 times the run's median is the pause's, not a step's.
  Step time, data share and rates are training-only. A case names `pause` where its
  framework's step clock runs through the pause (steptop tells it from the log's timestamps
  where there are any); where the clock restarts after it (mmcv's), the line after is a step.
- A step line printed twice (a logger's copy beside a print) is one step: the regexes match
  one copy.
- A slow step that comes at a fixed period of the printed lines (a save every fourth print, a
  loader's restart at each epoch's first line: over 3 times the run's median, every k-th
  line) keeps its true weight, one step: the other steps since the previous line are the
  run's usual step (its median), never the slow one. Slow steps at no fixed period are what
  the run's steps are like, and stand for their lines' steps as any other.
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
    "step", "loss", "step_ms", "step_s", "s_per_it", "its", "avg_ms", "avg_s", "avg_key",
    "avg_steps", "avg_data_ms", "avg_data_s", "avg_samples_per_s", "elapsed_s", "data_ms",
    "data_s", "samples_per_s", "tokens_per_s", "tokens_per_gpu_s",
}
# A training line right after a pause whose time is over this times the median is the pause's.
PAUSED = 1.5
# A sampled line over this times the median is one slow step, not its whole interval.
SPIKE = 3.0


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
    if "avg_s" in f:
        f["avg_ms"] = f.pop("avg_s") * 1000.0
    if "avg_data_s" in f:
        f["avg_data_ms"] = f.pop("avg_data_s") * 1000.0
    return f


def runs(case_dir, case):
    """The steps of each run, in order: a list of runs, each a list of (step, figures)."""
    truth = case["truth"]
    specs = [dict(s, re=re.compile(s["regex"])) for s in truth["line"]]
    start = re.compile(truth["run_start"]) if "run_start" in truth else None
    pause = re.compile(truth["pause"]) if "pause" in truth else None
    all_runs, current, last_step = [], [], None
    paused = False
    for f in case["files"]:
        for record in records(case_dir / f["name"]):
            if start and start.search(record) and current:
                all_runs.append(current)
                current, last_step = [], None
            if pause and pause.search(record):
                paused = True
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
            if paused:
                figs["after_pause"] = True
                paused = False
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
    # A tqdm bar's moving average: each step's own time, from two redraws one step apart.
    alpha = t.get("tqdm_smoothing")
    if alpha:
        before = None
        for s, f in run:
            if s is None or "step_ms" not in f:
                continue
            printed = f["step_ms"]
            if before is not None and s == before[0]:
                del f["step_ms"]
            elif before is not None and s == before[0] + 1:
                f["step_ms"] = max((printed - (1 - alpha) * before[1]) / alpha, printed / 10)
            before = (s, printed)

    # The steps each record stands for: since the previous training line; none for the first
    # (the run's start).
    weights, prev = [], None
    for s, _ in run:
        if prev is None:
            weights.append(0)
        else:
            weights.append(s - prev if s is not None and s > prev else 1)
        prev = s if s is not None else prev
    # The first line of a running average's segment (an epoch's first batch) is its start.
    starts, seen_keys = set(), set()
    for s, f in run:
        if "avg_ms" in f and f.get("avg_key") not in seen_keys:
            seen_keys.add(f.get("avg_key"))
            starts.add(id(f))
    per_step = [
        (f["step_ms"], n, f) for (s, f), n in zip(run, weights)
        if "step_ms" in f and n > 0 and id(f) not in starts
    ]
    if per_step:
        median = statistics.median(ms for ms, _, _ in per_step)
        per_step = [
            (ms, n, f) for ms, n, f in per_step
            if not (f.get("after_pause") and ms > PAUSED * median)
        ]
        # A slow step at a fixed period of the lines stands for itself; the rest of its
        # interval, for the usual step.
        slow = [i for i, (ms, _, _) in enumerate(per_step) if ms > SPIKE * median]
        gaps = {b - a for a, b in zip(slow, slow[1:])}
        periodic = len(slow) >= 3 and len(gaps) == 1 and min(gaps) > 1
        spread = []
        for ms, n, f in per_step:
            if periodic and ms > SPIKE * median and n > 1:
                spread.append((ms, 1, f))
                spread.append((median, n - 1, {}))
            else:
                spread.append((ms, n, f))
        per_step = spread
    # Running averages: each segment's first and last line, and the steps each covers; the
    # segment stands for the steps between them.
    firsts, segments = {}, {}
    for s, f in run:
        if "avg_ms" not in f or s is None or not math.isfinite(f["avg_ms"]):
            continue
        key = f.get("avg_key")
        first = firsts.setdefault(key, dict(f, step=s, covered=f.get("avg_steps", 1)))
        covered = f.get("avg_steps", s - first["step"] + first["covered"])
        if covered > first["covered"]:
            segments[key] = (first, dict(f, covered=covered))

    def between(first, last, name):
        """The mean of `name` over the steps between a segment's first and last line."""
        n = last["covered"] - first["covered"]
        return (last[name] * last["covered"] - first[name] * first["covered"]) / n
    elapsed = [(s, f["elapsed_s"]) for s, f in run if "elapsed_s" in f and s is not None]
    # A total that goes back was restarted (a clock reset after warm-up): only the part
    # after the last restart is differenced.
    for i in range(len(elapsed) - 1, 0, -1):
        if elapsed[i][1] < elapsed[i - 1][1]:
            elapsed = elapsed[i:]
            break
    sources = []
    if segments:
        spans = [(b["covered"] - a["covered"], between(a, b, "avg_ms")) for a, b in segments.values()]
        covered = sum(n for n, _ in spans)
        total = sum(n * ms for n, ms in spans)
        sources.append((covered, total / covered, "the printed running averages, step-weighted"))
    if len(elapsed) >= 2 and elapsed[-1][0] > elapsed[0][0]:
        (s0, e0), (s1, e1) = elapsed[0], elapsed[-1]
        sources.append((s1 - s0, (e1 - e0) * 1000.0 / (s1 - s0), "the printed cumulative time, differenced"))
    if per_step:
        covered = sum(n for _, n, _ in per_step)
        total = sum(ms * n for ms, n, _ in per_step)
        sources.append((covered, total / covered, "printed step times, step-weighted"))
    series = [ms for ms, _, _ in per_step] or None
    if sources:
        best = max(sources, key=lambda x: x[0])
        out["step_time_ms"], out["step_time_from"] = best[1], best[2]
    else:
        out["step_time_ms"] = None
    if series is None and len(elapsed) >= 3:
        series = [
            (b[1] - a[1]) * 1000.0 / (b[0] - a[0])
            for a, b in zip(elapsed, elapsed[1:])
            if b[0] > a[0]
        ]
    # The data share over the same figures as the step time.
    averaged = [(a, b) for a, b in segments.values() if "avg_data_ms" in a and "avg_data_ms" in b]
    if averaged and out.get("step_time_from", "").startswith("the printed running averages"):
        out["data_share"] = sum(
            (b["covered"] - a["covered"]) * between(a, b, "avg_data_ms") for a, b in averaged
        ) / sum((b["covered"] - a["covered"]) * between(a, b, "avg_ms") for a, b in averaged)
    else:
        both = [(f["data_ms"], ms, n) for ms, n, f in per_step if "data_ms" in f]
        out["data_share"] = (
            sum(d * n for d, _, n in both) / sum(ms * n for _, ms, n in both) if both else None
        )

    def rate(name):
        """A printed rate over the run: steps over the time they took."""
        if name == "samples_per_s":
            # Each average's time: the steps it covers over its rate.
            avg = [
                (a, b) for a, b in segments.values()
                if a.get("avg_samples_per_s", 0) > 0 and b.get("avg_samples_per_s", 0) > 0
            ]
            if avg:
                steps = sum(b["covered"] - a["covered"] for a, b in avg)
                time = sum(
                    b["covered"] / b["avg_samples_per_s"] - a["covered"] / a["avg_samples_per_s"]
                    for a, b in avg
                )
                return steps / time
        # Lines with a step time weigh as they do for it (a slow one, one step, the rest of
        # its interval at the usual rate); lines with a rate alone, their interval.
        weight = {}
        for _, n, f in per_step:
            if f:
                weight[id(f)] = n
        printed = [f[name] for _, _, f in per_step if name in f and f[name] > 0]
        usual = statistics.median(printed) if printed else None
        pairs = [(usual, n) for _, n, f in per_step if not f and usual]
        for (s, f), n in zip(run, weights):
            if name not in f or f[name] <= 0 or n == 0:
                continue
            if "step_ms" not in f:
                pairs.append((f[name], n))
            elif id(f) in weight:
                pairs.append((f[name], weight[id(f)]))
        if not pairs:
            return None
        return sum(n for _, n in pairs) / sum(n / r for r, n in pairs)

    out["iters_per_s"] = rate("its")
    step_ms_run = out["step_time_ms"]
    for name, per in (("samples_per_s", "global_batch"), ("tokens_per_s", "tokens_per_step")):
        printed = rate(name)
        out[f"{name}_derived"] = False
        if printed:
            out[name] = printed
        elif per in t and step_ms_run:
            out[name] = t[per] * 1000.0 / step_ms_run
            out[f"{name}_derived"] = True
        else:
            out[name] = None
    losses = col("loss")
    last = losses[-1] if losses else None
    out["loss_last"] = "nan" if isinstance(last, float) and math.isnan(last) else last
    out["tokens_per_gpu_s"] = rate("tokens_per_gpu_s")
    out["steady"] = steady(series) if series else None
    return out


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")]
    # Metric-file runs have truth of their own (metric_truth.py): no lines to match.
    dirs = [ROOT / n for n in names] if names else sorted(
        p.parent for p in ROOT.glob("*/case.toml")
        if not re.search(r'^kind = "metric-files"$', p.read_text(), re.M)
    )
    return write_truths(
        dirs, lambda d: json.dumps(truth_of(d), indent=2, sort_keys=True) + "\n",
        show=bool(names), check=check, script="truth.py",
    )


def write_truths(dirs, text_of, show, check, script):
    """Writes each case's truth.json as `text_of` gives it, or with `check` lists the ones that
    differ; `show` prints them. Shared with metric_truth.py."""
    stale = []
    for d in dirs:
        d = Path(d)
        text = text_of(d)
        path = d / "truth.json"
        if show:
            print(f"{d.name}: {text}")
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(d.name)
        else:
            path.write_text(text)
    if stale:
        print(f"truth.json out of date (run python3 tests/wild/{script}): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
