#!/usr/bin/env python3
"""Writes the expected figures of the wild cases that are metric-file runs (`kind =
"metric-files"` in case.toml) from the files themselves, read here with no part of steptop: the
TFRecord framing and the event protobufs are decoded by hand, JSON and CSV by the standard
library.

    python3 tests/wild/metric_truth.py            # (re)writes their truth.json
    python3 tests/wild/metric_truth.py --check    # exits 1 when a truth.json is not what it would write
    python3 tests/wild/metric_truth.py CASE...    # only these cases (folder names), printed

Which file is read. The case folder is searched recursively. The first kind present, in this
order, is the source of every figure: a W&B run file (`*.wandb`, the latest run folder's), an
MLflow run (a file store's latest-started run, or a SQLite store's latest active run, read with
sqlite3), mmengine `scalars.json`, HF `trainer_state.json`, Lightning `metrics.csv`,
TensorBoard event files (`*tfevents*`, every one in the folder, merged).

Trackers. W&B: the LevelDB log framing is parsed here, the records decoded by wandb's own
protobufs (`pip install wandb`); a history row's step is its framework's step key (the first
of STEP_KEYS whose values are whole numbers), else W&B's `_step`; a row of evaluation figures
with no training loss is an evaluation (its time leaves a gap out); HF's closing
`train_runtime` row counts toward steps_last, as in trainer_state.json. MLflow: points of
`system/*` keys are left out of the training series. Both: then as event files, and
`gpu_series` holds every GPU figure the tracker recorded (W&B's `gpu.<i>.<figure>` stats
items, MLflow's `system/gpu_<i>_*`), as [time, value] in file order, for tests/trackers.rs;
`host_series` W&B's memory share in use and memory available.
A W&B run that logged no row has `no_steps`.
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
total-loss name (`loss`, `train_loss`, `train/loss`, `total_loss`, with an optional _step suffix)
over a component (`value_loss`, `box_loss`) (4) the name with the most points; Keras `epoch_loss` under `train/` counts as training. `loss` in scalars.json and
trainer_state.json is the training loss (`eval_loss` is evaluation).
A run that trains two models logs the trained one's loss as the loss: an RLHF actor's
(`actor/pg_loss`, `actor_loss`) over its critic's, a GAN's generator's (`generator_loss`,
`g_loss`) over its discriminator's; these count as total-loss names. A run that logs no
total-loss name and only PARTS of its loss (names whose last part ends `_loss` or starts
`loss_`) has as its loss the sum of the parts logged at each step (Ultralytics' training loss
is its box, class and DFL parts added).

steps_last  the largest step of the training-loss series (trainer_state.json: also the step of
            the closing summary entry holding `train_runtime`, when larger; a tracker's run,
            W&B or MLflow: the largest step of any training series, as a run that logs its
            loss every 10 steps still reached the step its last learning rate, epoch or
            closing `train_runtime` row was logged at). Printed as the
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


TRAINED_MODEL_LOSSES = ("actor/pg_loss", "actor/loss", "actor_loss", "act_loss",
                        "generator_loss", "gen_loss", "g_loss", "loss_g")


def plain_loss(name):
    low = name.lower()
    base = re.sub(r"^(train[/_])", "", low.split("/")[-1] if "/" in low else low)
    return (re.sub(r"_(step|epoch)$", "", base) in ("loss", "train_loss", "total_loss",
                                                     "loss_total")
            or any(low == n or low.endswith("/" + n) for n in TRAINED_MODEL_LOSSES))


def loss_part(name):
    last = name.lower().split("/")[-1]
    return not last.endswith("_epoch") and (last.endswith("_loss") or last.startswith("loss_"))


def pick_loss(names, counts):
    """The training-loss name, or a list of the parts whose sum is the loss."""
    cands = [n for n in names if "loss" in n.lower() and not is_eval(n)]
    if not cands:
        return None
    if not any(plain_loss(n) for n in cands):
        parts = sorted(n for n in cands if loss_part(n))
        if parts:
            return parts

    def key(n):
        low = n.lower()
        per_step = low.endswith("_step") or low.startswith("batch_") or "epoch" not in low
        return ("train" in low, per_step, plain_loss(n), counts.get(n, 0))
    return max(cands, key=key)


def summed(train, parts):
    """The parts' points added step by step: (the latest wall time, step, sum)."""
    by_step = {}
    for tag in parts:
        for wall, step, val in train[tag]:
            w, v = by_step.get(step, (wall, 0.0))
            by_step[step] = (max(w, wall), v + val)
    return [(w, s, v) for s, (w, v) in sorted(by_step.items())]


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
    train, evals = {}, []
    for f in files:
        in_eval_dir = any(p.lower() in EVAL_DIRS for p in f.relative_to(case).parts[:-1])
        for wall, step, tag, val in read_events(f):
            if in_eval_dir or is_eval(tag):
                evals.append(wall)
            else:
                train.setdefault(tag, []).append((wall, step, val))
    return from_points(train, evals, [str(f.relative_to(case)) for f in files])


def from_points(train, evals, source):
    """The figures from training series (tag -> [(wall_time, step, value)]) and the wall times
    of evaluation points, as for event files."""
    t = blank()
    t["source"] = source
    counts = {k: len(v) for k, v in train.items()}
    tag = pick_loss(train.keys(), counts)
    if tag is None:
        t["notes"].append("no training-loss tag")
        return t
    if isinstance(tag, list):
        series = summed(train, tag)
        t["notes"].append(f"training loss: the sum of {' + '.join(tag)} ({len(series)} steps)")
        tag = " + ".join(tag)
    else:
        series = train[tag]
        t["notes"].append(f"training-loss tag: {tag!r} ({counts[tag]} points)")
    pts = {}
    for wall, step, val in series:  # file order; a repeated step keeps the latest
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


# ---------------------------------------------------------------- W&B run files
# The training step a framework logs as a history key of its own (`train/global_step`); W&B's
# `_step` counts rows (or is the step the script passed to wandb.log) and is used without one.
STEP_KEYS = ("global_step", "update_step", "iteration", "iter", "step")


def wandb_records(path):
    """Every record of a `.wandb` file as wandb's own `Record` protobuf; the LevelDB log framing
    (7-byte file header, 32 KiB blocks, fragments of CRC32 + length + type) parsed here. A
    record left unfinished at the end of the file is dropped, as wandb's reader does."""
    from wandb.proto import wandb_internal_pb2 as pb
    import zlib
    data = path.read_bytes()
    i, pending, out = 7, None, []
    while i + 7 <= len(data):
        left = 32768 - i % 32768
        if left < 7:
            i += left
            continue
        crc, n, kind = struct.unpack("<IHB", data[i:i + 7])
        frag = data[i + 7:i + 7 + n]
        if kind == 0 or len(frag) < n:
            break
        assert zlib.crc32(bytes([kind]) + frag) & 0xFFFFFFFF == crc, f"{path}: crc at {i}"
        i += 7 + n
        if kind == 1:
            out.append(frag)
        elif kind == 2:
            pending = frag
        elif pending is not None:
            pending += frag
            if kind == 4:
                out.append(pending)
                pending = None
    recs = []
    for raw in out:
        r = pb.Record()
        r.ParseFromString(raw)
        recs.append(r)
    return recs


def history_rows(path):
    """Each history row as {name: value} (numbers only), the name from `key` or `nested_key`."""
    rows = []
    for r in wandb_records(path):
        if r.WhichOneof("record_type") != "history":
            continue
        row = {}
        for it in r.history.item:
            name = it.key or ".".join(it.nested_key)
            try:
                v = json.loads(it.value_json)
            except ValueError:
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row[name] = float(v)
        rows.append(row)
    return rows


def wandb_stats_series(path, keep):
    """Every stats item whose name `keep` accepts: {name: [[time, value], ...]} in file order."""
    series = {}
    for r in wandb_records(path):
        if r.WhichOneof("record_type") != "stats":
            continue
        t = r.stats.timestamp.seconds + r.stats.timestamp.nanos / 1e9
        for it in r.stats.item:
            name = it.key or ".".join(it.nested_key)
            if keep(name):
                try:
                    series.setdefault(name, []).append([t, float(json.loads(it.value_json))])
                except (TypeError, ValueError):
                    pass
    return series


def wandb_host_series(path):
    """The host's memory as W&B samples it: its share in use (`memory_percent`, `memory` before
    0.18) and what is available (`proc.memory.availableMB`)."""
    return wandb_stats_series(
        path, lambda n: n in ("memory_percent", "memory", "proc.memory.availableMB"))


def wandb_gpu_series(path):
    """The `gpu.<i>.<figure>` stats items steptop reads."""
    return wandb_stats_series(path, lambda n: re.match(
        r"^gpu\.\d+\.(gpu|memory|memoryAllocatedBytes|powerWatts|enforcedPowerLimitWatts|"
        r"temp|smClock)$", n) is not None)


def from_wandb(path, case):
    rows = history_rows(path)
    names = {k for r in rows for k in r}
    # The step key: the first of STEP_KEYS (in that order) that names a key whose values are
    # all whole numbers (verl's `timing_s/step` is seconds, not a step).
    def whole(k):
        return all(float(r[k]).is_integer() for r in rows if k in r)
    ranked = sorted((STEP_KEYS.index(re.split(r"[/.]", k)[-1].lower()), k) for k in names
                    if not is_eval(k) and re.split(r"[/.]", k)[-1].lower() in STEP_KEYS
                    and whole(k))
    step_key = ranked[0][1] if ranked else "_step"
    train, evals = {}, []
    for r in rows:
        wall = r.get("_timestamp")
        step = r.get(step_key)
        if wall is None or step is None:
            continue
        figures = {k: v for k, v in r.items() if not k.startswith("_") and k != step_key}
        if any(is_eval(k) for k in figures) and not any("loss" in k.lower() and not is_eval(k)
                                                          for k in figures):
            evals.append(wall)
            continue
        for k, v in figures.items():
            if not is_eval(k):
                train.setdefault(k, []).append((wall, int(step), v))
    t = from_points(train, evals, [str(path.relative_to(case))])
    reached(t, train)
    t["notes"].append(f"step key: {step_key!r}; {len(rows)} history rows")
    if not rows:
        # A run that logged no row: reading it must give no step (its GPU series are the test).
        t["no_steps"] = True
    t["gpu_series"] = wandb_gpu_series(path)
    t["host_series"] = wandb_host_series(path)
    return t


def reached(t, train):
    """A tracker's run reached the largest step any training series was logged at (HF's closing
    `train_runtime` row, a learning rate logged after the last loss)."""
    last = max((step for pts in train.values() for _, step, _ in pts), default=None)
    if t["steps_last"] is not None and last is not None and last > t["steps_last"]:
        t["steps_last"] = int(last)
        t["notes"].append("steps_last: the largest step of any training series")


# ---------------------------------------------------------------- MLflow stores
def mlflow_points(case):
    """The latest-started run's points {key: [(time_s, step, value)]} and params, from a file
    store (`meta.yaml` beside `metrics/`) or a SQLite store (`*.db`), read with no MLflow code."""
    metas = [p for p in case.rglob("meta.yaml") if (p.parent / "metrics").is_dir()]
    dbs = [p for p in case.rglob("*.db")]
    points = {}
    if metas:
        def start(p):
            m = re.search(r"^start_time: (\d+)", p.read_text(), re.M)
            return int(m.group(1)) if m else 0
        meta = max(metas, key=lambda p: (start(p), str(p)))
        for f in sorted((meta.parent / "metrics").rglob("*")):
            if not f.is_file():
                continue
            key = str(f.relative_to(meta.parent / "metrics"))
            for line in f.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 2:
                    step = int(parts[2]) if len(parts) > 2 else 0
                    points.setdefault(key, []).append((int(parts[0]) / 1000, step, float(parts[1])))
        return meta, points
    import sqlite3
    db = dbs[0]
    con = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    run = con.execute("SELECT run_uuid FROM runs WHERE lifecycle_stage = 'active' "
                      "ORDER BY start_time DESC, run_uuid DESC LIMIT 1").fetchone()[0]
    for key, ts, step, value, nan in con.execute(
            "SELECT key, timestamp, step, value, is_nan FROM metrics WHERE run_uuid = ? "
            "ORDER BY timestamp, step, key", (run,)):
        if not nan:
            points.setdefault(key, []).append((ts / 1000, step, value))
    return db, points


def from_mlflow(case):
    where, points = mlflow_points(case)
    train, evals = {}, []
    for key, pts in points.items():
        if key.startswith("system/"):
            continue
        if is_eval(key):
            evals.extend(w for w, _, _ in pts)
        else:
            train[key] = sorted(pts, key=lambda p: (p[1], p[0]))
    t = from_points(train, evals, [str(where.relative_to(case))])
    reached(t, train)
    t["gpu_series"] = {k: [[w, v] for w, _, v in sorted(pts)] for k, pts in points.items()
                       if re.match(r"^system/(node_[^/]+/)?gpu_\d+_", k)}
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
    wb = [p for p in files if p.suffix == ".wandb"]
    if wb:
        # The latest run of a project's `wandb/` (run folders sort by their time stamp).
        return from_wandb(max(wb, key=lambda p: p.parent.name), case)
    if any(p.name == "meta.yaml" and (p.parent / "metrics").is_dir() for p in files) or any(
            p.suffix == ".db" for p in files):
        return from_mlflow(case)
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
