#!/usr/bin/env python3
"""Publishes synthetic per-TR results with the QA stage's fields (docs/protocol.md §8: `qa`, `qa_alarm`, frames
`qa_tsnr`, `qa_cnr` and `qa_carpet`) on a ZeroMQ PUB socket, for the viewer's QA panel without a server. Standard
library only: libzmq through ctypes.

  qa_publisher.py ENDPOINT [--volumes N] [--rate HZ] [--seconds S] [--no-qa]

A 32 x 32 x 16 phantom (an ellipsoid of ~800 with noise), a 4 x 4 connectivity matrix, a tSNR map every 4 volumes
with the CNR map of contrast "task" (noise around 0, a sphere of CNR ~3 left of centre, NaN outside the ellipsoid;
`qa.cnr_p95` its 95th percentile, `qa.sliding_tsnr_median` a little below `tsnr_median`), a 200-row carpet (the first 80
rows grey matter) with a spike at volumes 9 and 10 (every row +3 SD), FD over its threshold at volume 10 (an alarm),
slice 5 flagged at volume 10. Publishes volumes 0..N-1 in a loop (a new run each time round) until S seconds passed.
--no-qa: the same messages without the QA fields and frames (a server with its QA stage off).
"""
import ctypes
import json
import math
import random
import struct
import sys
import time

NX, NY, NZ = 32, 32, 16
ROWS, SPLIT = 200, 80
CNR_P95 = {}  # per run: the last CNR map's 95th percentile (the server keeps it between maps)


def zmq():
    lib = ctypes.CDLL("libzmq.so.5")
    lib.zmq_ctx_new.restype = ctypes.c_void_p
    lib.zmq_socket.restype = ctypes.c_void_p
    lib.zmq_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.zmq_bind.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.zmq_send.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return lib


def f32(values):
    return struct.pack(f"<{len(values)}f", *values)


def phantom(rng):
    inside, volume = [], []
    for z in range(NZ):
        for y in range(NY):
            for x in range(NX):
                r = ((x - NX / 2) / 13) ** 2 + ((y - NY / 2) / 14) ** 2 + ((z - NZ / 2) / 7) ** 2
                inside.append(r < 1)
                volume.append(800 + 40 * math.cos(x / 3) + rng.gauss(0, 10) if r < 1 else rng.gauss(20, 5))
    return inside, volume


def cnr_map(rng, inside):
    """Noise around 0 in the ellipsoid, an active sphere (radius 4, CNR ~3) at (9, 16, 8), NaN outside."""
    out = []
    for i, within in enumerate(inside):
        x, y, z = i % NX, (i // NX) % NY, i // (NX * NY)
        active = (x - 9) ** 2 + (y - 16) ** 2 + (z - 8) ** 2 < 16
        out.append(rng.gauss(3.0 if active else 0.0, 0.4) if within else math.nan)
    return out


def p95(values):
    v = sorted(x for x in values if not math.isnan(x))
    return v[int(0.95 * (len(v) - 1))]


def message(run, volume, seq, rng, inside, base, with_qa=True):
    spike = volume in (9, 10)
    fd = None if volume == 0 else (0.9 if volume == 10 else 0.05 + 0.03 * rng.random())
    frames, blobs = [], []

    def add(name, shape, values):
        frames.append({"name": name, "dtype": "float32", "shape": shape, "bytes": 4 * len(values)})
        blobs.append(f32(values))

    add("volume", [NX, NY, NZ], [v + rng.gauss(0, 5) for v in base])
    add("connectivity", [4, 4], [1.0 if i == j else 0.6 * math.cos(i + j + volume / 5) for i in range(4)
                                 for j in range(4)])
    qa = {"volume": volume, "fd_mm": fd, "global_signal": 812 + rng.gauss(0, 1) + (6 if spike else 0),
          "outlier_fraction": None if volume < 5 else (0.08 if spike else 0.004 + 0.002 * rng.random()),
          "quality_index": None if volume < 5 else 0.01 + 0.002 * rng.random(),
          "slice_z_worst": -9.1 if volume == 10 else 1.5 * rng.gauss(0, 1), "worst_slice": 5 if volume == 10 else 2,
          "flagged_slices": [5] if volume == 10 else [],
          "tsnr_median": None if volume < 4 else 40 + volume * 0.5,
          "sliding_tsnr_median": None if volume < 8 else 36 + volume * 0.4, "cnr_p95": None,
          "usable": [{"fd_threshold_mm": t, "frames": volume - (1 if t < 0.9 and volume > 10 else 0),
                      "minutes": volume / 60, "minutes_to_target": None if t == 0.2 else max(12.5 - volume / 60, 0)}
                     for t in (0.2, 0.3, 0.5)],
          "target_minutes": 12.5,
          "thresholds": {"fd_mm": 0.5, "outlier_fraction": 0.05, "slice_z": 8.0, "tsnr_min": None},
          "carpet_rows": ROWS, "carpet_split": SPLIT, "tsnr_map_in_this_message": volume % 4 == 0}
    add("qa_carpet", [ROWS], [rng.gauss(3 if spike else 0, 1) for _ in range(ROWS)])
    if volume % 4 == 0:
        add("qa_tsnr", [NX, NY, NZ], [30 + 40 * rng.random() if i else 0.0 for i in inside])
        if volume > 0:  # the design's GLM needs a few volumes
            cnr = cnr_map(rng, inside)
            add("qa_cnr", [NX, NY, NZ], cnr)
            CNR_P95[run] = p95(cnr)
    qa["cnr_p95"] = CNR_P95.get(run)
    header = {"run": run, "volume": volume, "seq": seq, "skipped": 0, "feedback": math.sin(volume / 3),
              "motion": [0.01 * volume, 0, 0, 0, 0, 0], "fd_mm": fd, "dvars": 10 + rng.random() + (20 if spike else 0),
              "dims": [NX, NY, NZ], "affine": [3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1],
              "device": "qa_publisher.py (synthetic)", "t_map_contrast": "task", "regions": ["A", "B", "C", "D"], "stream": "00000000000000aa",
              "qa": qa,
              "latency_ms": {"written": 0.2, "uploaded": 0.5, "motion": 1.0, "end_to_end": 2.0}, "frames": frames}
    if not with_qa:
        del header["qa"]
        frames[2:] = []
        blobs[2:] = []
        return [b"rtfmri.tr", json.dumps(header).encode()] + blobs
    if volume == 10:
        header["qa_alarm"] = [{"metric": "fd_mm", "volume": 10, "value": 0.9, "threshold": 0.5, "where": ""},
                              {"metric": "slice_z", "volume": 10, "value": -9.1, "threshold": 8.0, "where": "slice 5"}]
    if volume == 9:
        header["qa_alarm"] = [{"metric": "outlier_fraction", "volume": 9, "value": 0.08, "threshold": 0.05,
                               "where": ""}]
    return [b"rtfmri.tr", json.dumps(header).encode()] + blobs


def main():
    args = sys.argv[1:]
    endpoint = args[0]
    volumes = int(args[args.index("--volumes") + 1]) if "--volumes" in args else 40
    rate = float(args[args.index("--rate") + 1]) if "--rate" in args else 10.0
    seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 60.0
    lib = zmq()
    ctx = lib.zmq_ctx_new()
    sock = lib.zmq_socket(ctx, 1)  # ZMQ_PUB
    if lib.zmq_bind(sock, endpoint.encode()) != 0:
        print(f"qa_publisher: cannot bind {endpoint}", file=sys.stderr)
        return 1
    rng = random.Random(7)
    inside, base = phantom(rng)
    start, seq, run = time.time(), 0, 0
    while time.time() - start < seconds:
        run += 1
        for v in range(volumes):
            parts = message(f"run-{run:02d}", v, seq, rng, inside, base, "--no-qa" not in args)
            for k, p in enumerate(parts):
                lib.zmq_send(sock, p, len(p), 2 if k + 1 < len(parts) else 0)  # ZMQ_SNDMORE
            seq += 1
            time.sleep(1 / rate)
            if time.time() - start >= seconds:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
