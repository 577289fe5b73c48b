#!/usr/bin/env python3
"""Writes the expected figures of the wild cases that are metric-file runs (`kind =
"metric-files"` in case.toml) from the files themselves, read here with no part of steptop: the
TFRecord framing and the event protobufs are decoded by hand, JSON and CSV by the standard
library.

    python3 tests/wild/metric_truth.py            # (re)writes their truth.json
    python3 tests/wild/metric_truth.py --check    # exits 1 when a truth.json is not what it would write
    python3 tests/wild/metric_truth.py CASE...    # only these cases (folder names), printed

Which file is read. The case folder is searched recursively. The first kind present, in this
order, is the source of every figure: mmengine `scalars.json`, HF `trainer_state.json`,
Lightning `metrics.csv`, TensorBoard event files (`*tfevents*`, every one in the folder, merged).
(A case folder that holds one run in two forms, e.g. an HF dir with trainer_state.json and
runs/events, takes its figures from the first kind; `source` in truth.json names it.)
A `last-checkpoint/` or `checkpoint-N/` copy of trainer_state.json is ignored when a top-level
one exists (the top-level one is the run's end state).

How each figure is computed
---------------------------
Training vs evaluation: a metric name (tag / column / key) is EVALUATION when, lower-cased, it
contains "val", "eval", "test" or "valid", or the event file lies under a folder named
`validation`/`eval`/`val`/`test` (Keras). Everything else is training.
The TRAINING-LOSS series: among training names containing "loss", prefer (1) names containing
"train" (2) names ending "_step"/"batch_" prefixed (per-step, not per-epoch) (3) a plain
total-loss name (`loss`, `train_loss`, `train/loss`, with an optional _step suffix) over a
component (`value_loss`, `box_loss`) (4) the name with the most points; Keras `epoch_loss` under `train/` counts as training. `loss` in scalars.json and
trainer_state.json is the training loss (`eval_loss` is evaluation).

steps_last  the largest step of the training-loss series (trainer_state.json: also the step of
            the closing summary entry holding `train_runtime`, when larger). Printed as the
            file has it (Lightning's CSV and TB steps are global_step as logged, Keras's
            epoch_* tags count epochs from 0).
loss_last   the training-loss value at the largest step (the last such point in file order
            when a step repeats).
step_time_ms
  events:   the training-loss points sorted by step, one point per step (the latest wall_time
            when a step repeats). For each consecutive pair (s1,t1),(s2,t2): a gap of
            (t2-t1) over (s2-s1) steps. A gap is LEFT OUT when an evaluation scalar's
            wall_time falls strictly between t1 and t2 (an eval pause), or t2 <= t1 (a
            restart). step_time_ms = 1000 * sum(kept gaps) / sum(their steps). Null when no gap
            is kept, or when the only training-loss series is an epoch-level one (Keras
            `epoch_loss`, Lightning `*_epoch`): its step counts epochs, not batches.
  trainer_state.json: 1000 / train_steps_per_second of the closing summary entry, ONLY when no
            log_history entry has an `eval_*` key (otherwise train_runtime includes the
            evaluations and the figure is null; notes say so).
  scalars.json: training lines = JSON lines holding "loss". Runs appended to one file are split
            where the step goes back; the LAST run is used (notes say so). Each training line
            after the run's first weighs (step - previous training line's step); the first
            line (start-up) is left out, and so is a training line that comes right after
            an evaluation line (mmengine's iter timer runs through the evaluation, so its
            `time`/`data_time` hold the pause; notes give the figure with them). step_time_ms = 1000 * sum(time_i * w_i) / sum(w_i).
  metrics.csv: only if a time column exists (a training column named like time/step_time/
            batch_time/iter_time, seconds); then as scalars.json. Otherwise null.
data_share  scalars.json only: (sum data_time_i * w_i) / (sum time_i * w_i), same lines and
            weights as step_time_ms (i.e. weighted mean data_time / weighted mean time).
            Null elsewhere (no file here prints a data wait).
samples_per_s / iters_per_s
  trainer_state.json: `train_samples_per_second` / `train_steps_per_second` of the closing
            summary, under the same no-evaluation condition as step_time_ms.
  events:   a training tag named like *samples_per_second*/*samples_per_sec*/*samples/s*
            (samples) or *steps_per_second*/*it/s*/*iters_per_sec* (iterations). A single
            point (HF's closing `train/train_*_per_second`) is taken as printed, under the
            no-evaluation condition; a series is a step-weighted harmonic mean (weights = steps
            since the previous point; the first point left out).
  otherwise null.
steady      always null (not judged here).
source      the file(s) the figures come from; notes: what was left out and why.
"""

import csv
import json
import math
import re
import struct
import sys
from pathlib import Path

# truth.py is imported for its writer: no bytecode beside the sources.
sys.dont_write_bytecode = True
from truth import write_truths  # noqa: E402

EVAL_RE = re.compile(r"val|eval|test|valid", re.I)
EVAL_DIRS = {"validation", "eval", "val", "test", "valid"}
SAMPLES_RE = re.compile(r"samples_per_sec|samples_per_second|samples/s", re.I)
ITERS_RE = re.compile(r"steps_per_second|it/s|iters_per_sec|iter_per_sec", re.I)
TIME_COLS = ("time", "step_time", "batch_time", "iter_time", "train_time_per_step")


def blank():
    return {"steps_last": None, "loss_last": None, "step_time_ms": None, "data_share": None,
            "samples_per_s": None, "iters_per_s": None, "steady": None, "source": None,
            "notes": []}


def is_eval(name):
    return bool(EVAL_RE.search(name))


def pick_loss(names, counts):
    cands = [n for n in names if "loss" in n.lower() and not is_eval(n)]
    if not cands:
        return None

    def key(n):
        low = n.lower()
        per_step = low.endswith("_step") or low.startswith("batch_") or "epoch" not in low
        base = re.sub(r"^(train[/_])", "", low.split("/")[-1] if "/" in low else low)
        plain = re.sub(r"_(step|epoch)$", "", base) in ("loss", "train_loss")
        return ("train" in low, per_step, plain, counts.get(n, 0))
    return max(cands, key=key)


def epoch_level(name):
    low = name.lower()
    return low.startswith("epoch_") or low.endswith("_epoch")


# ---------------------------------------------------------------- TensorBoard event files
def read_events(path):
    """(wall_time, step, tag, value) for every scalar in a TFRecord event file, framing parsed
    here (u64 length, u32 crc, data, u32 crc) and the Event protobuf decoded by tensorboard's
    own protos. Both summary v1 simple_value and v2 scalar tensors are read."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.util import tensor_util
    data = path.read_bytes()
    out, i = [], 0
    while i + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[i:i + 8])
        rec = data[i + 12:i + 12 + n]
        i += 12 + n + 4
        if len(rec) < n:
            break
        ev = event_pb2.Event()
        ev.ParseFromString(rec)
        if ev.WhichOneof("what") != "summary":
            continue
        for v in ev.summary.value:
            kind = v.WhichOneof("value")
            if kind == "simple_value":
                val = float(v.simple_value)
            elif kind == "tensor" and v.metadata.plugin_data.plugin_name == "scalars":
                arr = tensor_util.make_ndarray(v.tensor)
                if arr.size != 1:
                    continue
                val = float(arr.reshape(-1)[0])
            else:
                continue
            out.append((ev.wall_time, ev.step, v.tag, val))
    return out


def from_events(files, case):
    t = blank()
    t["source"] = [str(f.relative_to(case)) for f in files]
    train, evals = {}, []
    for f in files:
        in_eval_dir = any(p.lower() in EVAL_DIRS for p in f.relative_to(case).parts[:-1])
        for wall, step, tag, val in read_events(f):
            if in_eval_dir or is_eval(tag):
                evals.append(wall)
            else:
                train.setdefault(tag, []).append((wall, step, val))
    counts = {k: len(v) for k, v in train.items()}
    tag = pick_loss(train.keys(), counts)
    if tag is None:
        t["notes"].append("no training-loss tag")
        return t
    t["notes"].append(f"training-loss tag: {tag!r} ({counts[tag]} points)")
    pts = {}
    for wall, step, val in train[tag]:  # file order; a repeated step keeps the latest
        if step not in pts or wall >= pts[step][0]:
            pts[step] = (wall, val)
    steps = sorted(pts)
    t["steps_last"] = steps[-1]
    t["loss_last"] = pts[steps[-1]][1]
    evals.sort()
    if epoch_level(tag):
        t["notes"].append("epoch-level loss tag: step counts epochs; no per-step time")
    else:
        gap_s = gap_n = 0.0
        left_eval = left_back = 0
        for a, b in zip(steps, steps[1:]):
            t1, t2 = pts[a][0], pts[b][0]
            if t2 <= t1:
                left_back += 1
                continue
            if any(t1 < w < t2 for w in evals):
                left_eval += 1
                continue
            gap_s += t2 - t1
            gap_n += b - a
        if gap_n:
            t["step_time_ms"] = 1000 * gap_s / gap_n
        t["notes"].append(f"{len(steps) - 1} gaps, {left_eval} left out (eval between), "
                          f"{left_back} left out (clock goes back)")
    # throughput tags
    for key, rx in (("samples_per_s", SAMPLES_RE), ("iters_per_s", ITERS_RE)):
        tags = [k for k in train if rx.search(k)]
        if not tags:
            continue
        series = sorted({s: v for _, s, v in train[tags[0]]}.items())
        if len(series) == 1:
            if evals:
                t["notes"].append(f"{tags[0]} = {series[0][1]} printed, but evaluation ran: "
                                  "it covers eval time, left null")
            else:
                t[key] = series[0][1]
        else:
            w = [(b[0] - a[0], b[1]) for a, b in zip(series, series[1:]) if b[1] > 0]
            if w:
                t[key] = sum(n for n, _ in w) / sum(n / r for n, r in w)
    return t


# ---------------------------------------------------------------- HF trainer_state.json
def from_trainer_state(path, case):
    t = blank()
    t["source"] = [str(path.relative_to(case))]
    st = json.loads(path.read_text())
    hist = st.get("log_history", [])
    train = [(i, e) for i, e in enumerate(hist) if "loss" in e]
    summary = [e for e in hist if "train_runtime" in e]
    evals = [e for e in hist if any(k.startswith("eval_") for k in e)]
    if train:
        mx = max(e["step"] for _, e in train)
        last = [e for _, e in train if e["step"] == mx][-1]
        t["steps_last"] = mx
        t["loss_last"] = last["loss"]
    if summary:
        s = summary[-1]
        if t["steps_last"] is None or s.get("step", 0) > t["steps_last"]:
            t["steps_last"] = s.get("step")
        if evals:
            t["notes"].append(
                f"{len(evals)} evaluation entries in log_history: train_runtime "
                f"({s['train_runtime']} s) includes them, so step time and rates are null "
                f"(printed: {s.get('train_steps_per_second')} steps/s, "
                f"{s.get('train_samples_per_second')} samples/s)")
        else:
            if s.get("train_steps_per_second"):
                t["step_time_ms"] = 1000 / s["train_steps_per_second"]
                t["iters_per_s"] = s["train_steps_per_second"]
                n = s.get("step") or st.get("global_step")
                if n:
                    t["notes"].append(
                        f"train_steps_per_second is printed rounded ({s['train_steps_per_second']});"
                        f" train_runtime / steps = {1000 * s['train_runtime'] / n:.1f} ms")
            t["samples_per_s"] = s.get("train_samples_per_second")
    else:
        t["notes"].append("no closing train_runtime entry (a checkpoint's state): no step time")
    t["notes"].append(f"{len(train)} training-loss entries, global_step {st.get('global_step')}")
    return t


# ---------------------------------------------------------------- Lightning metrics.csv
def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def from_metrics_csv(path, case):
    t = blank()
    t["source"] = [str(path.relative_to(case))]
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    cols = list(rows[0].keys()) if rows else []
    counts = {c: sum(1 for r in rows if num(r.get(c)) is not None) for c in cols}
    col = pick_loss([c for c in cols if c not in ("step", "epoch")], counts)
    if col is None:
        t["notes"].append("no training-loss column")
        return t
    t["notes"].append(f"training-loss column: {col!r} ({counts[col]} rows)")
    pts = [(int(num(r["step"])), num(r[col]), r) for r in rows
           if num(r.get(col)) is not None and num(r.get("step")) is not None]
    mx = max(p[0] for p in pts)
    t["steps_last"] = mx
    t["loss_last"] = [p[1] for p in pts if p[0] == mx][-1]
    if epoch_level(col):
        t["notes"].append("epoch-level loss column (one row per epoch)")
    tcol = next((c for c in cols if c.lower() in TIME_COLS and not is_eval(c)), None)
    if tcol:
        seq = sorted((p[0], num(p[2].get(tcol))) for p in pts if num(p[2].get(tcol)) is not None)
        w = [(b[0] - a[0], b[1]) for a, b in zip(seq, seq[1:]) if b[0] > a[0]]
        if w:
            t["step_time_ms"] = 1000 * sum(n * v for n, v in w) / sum(n for n, _ in w)
    else:
        t["notes"].append("no time column: step_time_ms null")
    return t


# ---------------------------------------------------------------- mmengine scalars.json
def from_scalars(path, case):
    t = blank()
    t["source"] = [str(path.relative_to(case))]
    runs, prev = [[]], None
    n_eval = 0
    after_eval = False
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if "loss" not in d:
            n_eval += 1
            after_eval = True
            continue
        if prev is not None and d["step"] <= prev:
            runs.append([])
        d = dict(d, _after_eval=after_eval)
        after_eval = False
        runs[-1].append(d)
        prev = d["step"]
    if len(runs) > 1:
        t["notes"].append(f"{len(runs)} runs appended in one file (step goes back); the last "
                          f"run ({len(runs[-1])} lines) is used; earlier runs' last steps: "
                          f"{[r[-1]['step'] for r in runs[:-1]]}")
    run = runs[-1]
    t["steps_last"] = run[-1]["step"]
    t["loss_last"] = run[-1]["loss"]
    w_all = [(b["step"] - a["step"], b) for a, b in zip(run, run[1:])]
    w = [(n, d) for n, d in w_all if not d["_after_eval"]]
    if len(w) < len(w_all):
        sk = [(n, d) for n, d in w_all if d["_after_eval"]]
        t["notes"].append(
            f"{len(sk)} training line(s) right after an evaluation left out (their time "
            f"covers the eval pause: {[round(d['time'], 3) for _, d in sk]} s); with them "
            f"step_time would be "
            f"{1000 * sum(n * d['time'] for n, d in w_all) / sum(n for n, _ in w_all):.1f} ms")
    sw = sum(n for n, _ in w)
    if sw:
        t["step_time_ms"] = 1000 * sum(n * d["time"] for n, d in w) / sw
        if all("data_time" in d for _, d in w):
            t["data_share"] = (sum(n * d["data_time"] for n, d in w)
                               / sum(n * d["time"] for n, d in w))
    t["notes"].append(f"{len(run)} training lines ({len(w)} weighed, the first left out), "
                      f"{n_eval} evaluation lines")
    return t


def truth(case):
    case = Path(case)
    files = sorted(p for p in case.rglob("*") if p.is_file())
    sc = [p for p in files if p.name == "scalars.json"]
    ts = [p for p in files if p.name == "trainer_state.json"]
    mc = [p for p in files if p.name == "metrics.csv"]
    ev = [p for p in files if "tfevents" in p.name]
    if sc:
        return from_scalars(sc[0], case)
    if ts:
        ts.sort(key=lambda p: (len(p.relative_to(case).parts), str(p)))
        return from_trainer_state(ts[0], case)
    if mc:
        return from_metrics_csv(mc[0], case)
    if ev:
        return from_events(ev, case)
    raise SystemExit(f"{case}: no metric file")


ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "wild"


def metric_cases():
    """The case folders whose case.toml says `kind = "metric-files"`."""
    return sorted(
        p.parent for p in ROOT.glob("*/case.toml")
        if re.search(r'^kind = "metric-files"$', p.read_text(), re.M)
    )


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")]
    dirs = [ROOT / n for n in names] if names else metric_cases()
    return write_truths(dirs, text_of, show=bool(names), check=check, script="metric_truth.py")


def text_of(case):
    """A case's truth.json: its figures, rounded as written."""
    t = truth(str(case))
    for k in ("step_time_ms", "data_share", "samples_per_s", "iters_per_s"):
        if isinstance(t[k], float) and math.isfinite(t[k]):
            t[k] = round(t[k], 6)
    return json.dumps(t, indent=2) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
