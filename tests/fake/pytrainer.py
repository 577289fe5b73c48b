"""A trainer-shaped Python program for the stack tests: no torch, the same shape.

The main thread takes batches from worker processes and runs a step that spends most of its
time in one Python function (`_generate_targets`, nested loops, as in the users' seed 003),
then waits a little (as on a GPU). Each worker reads a sample (a blocking wait, as on a slow
disk) and decodes it (Python arithmetic). Every part times itself; on SIGTERM (or after
`--seconds`) the measured shares are written as JSON to `--truth`, the figures steptop's
samples are held to. Step lines go to `--log`.

Usage: pytrainer.py --log FILE --truth FILE [--workers N] [--seconds S] [--hot-ms MS]
                    [--threads N] [--sync-ms MS] [--tolist N] [--cuda-driver LIB]
"""

import argparse
import array
import ctypes
import functools
import json
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import types


def read_sample(ms):
    # A blocking read: the thread sleeps in the kernel, as on a slow disk or network.
    time.sleep(ms / 1000.0)
    return bytes(64)


def decode_sample(raw, ms):
    # Python work that holds the CPU for about `ms`.
    end = time.perf_counter() + ms / 1000.0
    acc = 0
    while time.perf_counter() < end:
        for b in raw:
            acc = (acc * 31 + b) % 1000003
    return acc


def worker(queue, stats, read_ms, decode_ms):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    reading = decoding = 0.0
    while True:
        t0 = time.perf_counter()
        raw = read_sample(read_ms)
        t1 = time.perf_counter()
        value = decode_sample(raw, decode_ms)
        t2 = time.perf_counter()
        reading += t1 - t0
        decoding += t2 - t1
        stats.put((os.getpid(), reading, decoding))
        queue.put(value)


def _generate_targets(batch, ms):
    # The hot function: nested Python loops run in every step.
    end = time.perf_counter() + ms / 1000.0
    out = 0
    while time.perf_counter() < end:
        for i in range(50):
            for j in range(20):
                out += (batch + i * j) % 7
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--truth", required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seconds", type=float, default=600.0)
    p.add_argument("--hot-ms", type=float, default=60.0)
    p.add_argument("--wait-ms", type=float, default=20.0)
    p.add_argument("--read-ms", type=float, default=20.0)
    p.add_argument("--decode-ms", type=float, default=20.0)
    # Idle Python threads beside the loop, as a real trainer has (pin memory, logging,
    # compile workers): what a stack read has to walk.
    p.add_argument("--threads", type=int, default=0)
    # A wait in C at a line that reads like a GPU sync (`loss.item()`), as a CUDA step has.
    p.add_argument("--sync-ms", type=float, default=0.0)
    # CPU work in C at a line that reads like a GPU sync: a list of N numbers made from an
    # array (`heatmaps.tolist()`), as a CPU trainer's target builder does.
    p.add_argument("--tolist", type=int, default=0)
    # A library loaded as the NVIDIA driver's CUDA library would be (a file named
    # libcuda.so.1 in the process's maps): the process then looks like one that uses a GPU.
    p.add_argument("--cuda-driver")
    a = p.parse_args()
    if a.cuda_driver:
        ctypes.CDLL(a.cuda_driver)
    heatmaps = array.array("d", range(a.tolist))
    idle = threading.Event()
    for _ in range(a.threads):
        threading.Thread(target=idle.wait, daemon=True).start()

    queue, stats = mp.Queue(maxsize=8), mp.Queue()
    workers = [
        mp.Process(target=worker, args=(queue, stats, a.read_ms, a.decode_ms), daemon=True)
        for _ in range(a.workers)
    ]
    for w in workers:
        w.start()

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    start = time.perf_counter()
    hot = 0.0
    step = 0
    # `--log -`: the step lines on stdout, as a job started by `steptop run` prints them.
    log = sys.stdout if a.log == "-" else open(a.log, "a", buffering=1)
    loss = types.SimpleNamespace(item=functools.partial(time.sleep, a.sync_ms / 1000.0))
    print("ready", flush=True)
    while not stopping and time.perf_counter() - start < a.seconds:
        t0 = time.perf_counter()
        batch = queue.get()
        t1 = time.perf_counter()
        _generate_targets(batch, a.hot_ms)
        t2 = time.perf_counter()
        time.sleep(a.wait_ms / 1000.0)
        if a.sync_ms:
            loss.item()
        if a.tolist:
            targets = heatmaps.tolist()
            del targets
        t3 = time.perf_counter()
        hot += t2 - t1
        step += 1
        log.write(
            f"step {step}/100000 | loss={1.0 / step:.4f} | {1.0 / (t3 - t0):.2f} samples/s"
            f" | data_time={(t1 - t0) * 1000:.1f}ms\n"
        )
    wall = time.perf_counter() - start
    latest = {}
    while True:
        try:
            pid, reading, decoding = stats.get(timeout=0.2)
        except Exception:
            break
        latest[pid] = (reading, decoding)
    reading = sum(r for r, _ in latest.values())
    decoding = sum(d for _, d in latest.values())
    truth = {
        "pid": os.getpid(),
        "steps": step,
        "main_hot_share": hot / wall,
        "hot_function": "_generate_targets",
        "worker_pids": sorted(latest),
        "workers_reading_share": reading / max(reading + decoding, 1e-9),
        "workers_decoding_share": decoding / max(reading + decoding, 1e-9),
    }
    with open(a.truth, "w") as f:
        json.dump(truth, f)
    for w in workers:
        w.terminate()
    sys.exit(0)


if __name__ == "__main__":
    main()
