#!/usr/bin/env python3
"""Scale-out benchmark of the offline commands (docs/scale.md): the same command on 1, 2, 4 ... devices in one process
(--devices) and under mpirun (one rank per device), timed end to end, every configuration's output files compared
with the first configuration's (bit for bit; JSON reports without their timing and device keys).

  scale_bench.py make-randomise DIR [--dims X Y Z] [--subjects N] [--fwhm MM]
      N subjects' maps (smoothed noise plus an effect blob) as DIR/data.nii and an ellipsoid brain mask DIR/mask.nii
  scale_bench.py make-bedpost DIR [--voxels V]
      a bedpostx folder: V voxels of 69 measurements (64 directions at b 1000, 5 b = 0), a third each with 1, 2 (60
      degrees) and 3 fibres, SNR 30, spread over a 91 x 109 x 91 grid
  scale_bench.py make-connectome DIR --nodes N --length L
      a 4D series of N voxels (the first N of a cube in a grid) and L volumes (random normal) with its mask
  scale_bench.py run --case randomise|bedpost|connectome --data DIR --work DIR --configs "C1;C2;..." [--runs R]
                     [--rtfmri CMD] [--mpirun CMD] [--args '...'] --out FILE.json
      a configuration is 'gpus=K' (the first K GPUs in one process), 'devices=SPEC' (one process), 'mpi=K' (K ranks,
      --devices local-gpu: one GPU each) or 'mpi=K:SPEC';
      the first configuration (--warmup-each: every one) runs --warmup times untimed (kernel caches), then each
      --runs times;
      the JSON has per configuration the median wall time, the command's own compute time, speed-up and efficiency
      against the first configuration (which must use one device), and whether the outputs were equal;
      --digest compares outputs by digests (blake2b of 256 MiB segments, in parallel threads) and removes each run's
      outputs once digested: for outputs too large to keep twice (a connectome at density 1% of 10^6 nodes: 120 GB).
numpy only (no nibabel): tests/cli/nifti_min.py writes the NIfTI files.
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "cli"))
from nifti_min import write_nifti  # noqa: E402
from same_json import strip  # noqa: E402  (JSON reports without timings, devices, ranks)


def gaussian_smooth(volume, fwhm_voxels):
    """Separable Gaussian smoothing by FFT (periodic edges: the mask stays inside)."""
    sigma = fwhm_voxels / np.sqrt(8 * np.log(2))
    out = np.fft.rfftn(volume)
    for axis, n in enumerate(volume.shape):
        f = np.fft.rfftfreq(n) if axis == volume.ndim - 1 else np.fft.fftfreq(n)
        shape = [1] * volume.ndim
        shape[axis] = f.size
        out *= np.exp(-2 * (np.pi * sigma * f) ** 2).reshape(shape)
    return np.fft.irfftn(out, s=volume.shape)


def ellipsoid(dims, fill=0.42):
    x, y, z = np.meshgrid(*[np.linspace(-1, 1, d) for d in dims], indexing="ij")
    r = (x / 0.9) ** 2 + (y / 0.92) ** 2 + (z / 0.85) ** 2
    return r <= fill ** (2 / 3) * 1.55


def make_randomise(a):
    os.makedirs(a.dir, exist_ok=True)
    dims = tuple(a.dims)
    mask = ellipsoid(dims)
    rng = np.random.default_rng(1)
    data = np.zeros(dims + (a.subjects,), np.float32)
    x, y, z = np.meshgrid(*[np.arange(d) for d in dims], indexing="ij")
    blob = np.exp(-(((x - dims[0] * 0.6) ** 2 + (y - dims[1] * 0.5) ** 2 + (z - dims[2] * 0.5) ** 2) / (2 * 5.0**2)))
    for s in range(a.subjects):
        noise = gaussian_smooth(rng.standard_normal(dims), a.fwhm / 2.0)
        noise /= noise[mask].std()
        data[..., s] = np.where(mask, noise + 0.8 * blob, 0.0)
    write_nifti(os.path.join(a.dir, "data.nii"), data)
    write_nifti(os.path.join(a.dir, "mask.nii"), mask.astype(np.float32))
    print(f"randomise data: {a.subjects} subjects, {int(mask.sum())} voxels in the mask")


def make_bedpost(a):
    os.makedirs(a.dir, exist_ok=True)
    rng = np.random.default_rng(2)
    g = rng.standard_normal((64, 3))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    bvecs = np.vstack([np.zeros((5, 3)), g])
    bvals = np.concatenate([np.zeros(5), np.full(64, 1000.0)])
    dims = (91, 109, 91)
    total = int(np.prod(dims))
    where = (np.arange(a.voxels, dtype=np.int64) * total) // a.voxels
    v = a.voxels
    fibres = np.arange(v) % 3 + 1

    def unit(theta, phi):
        return np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], axis=-1)

    theta1 = np.arccos(rng.uniform(-1, 1, v))
    phi1 = rng.uniform(0, 2 * np.pi, v)
    d1 = unit(theta1, phi1)
    helper = np.where(np.abs(d1[:, :1]) < 0.9, np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]]))
    p = np.cross(d1, helper)
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    q = np.cross(d1, p)
    d2 = np.cos(np.pi / 3) * d1 + np.sin(np.pi / 3) * p
    d3 = q
    d = 1.5e-3
    s0 = 1000.0
    f = np.zeros((v, 3))
    f[fibres == 1] = [0.6, 0, 0]
    f[fibres == 2] = [0.35, 0.3, 0]
    f[fibres == 3] = [0.25, 0.22, 0.2]
    signal = (1 - f.sum(1))[:, None] * np.exp(-bvals[None, :] * d)
    for k, dk in enumerate((d1, d2, d3)):
        signal += f[:, k : k + 1] * np.exp(-bvals[None, :] * d * (dk @ bvecs.T) ** 2)
    signal *= s0
    sigma = s0 / 30.0
    noisy = np.sqrt((signal + rng.normal(0, sigma, signal.shape)) ** 2 + rng.normal(0, sigma, signal.shape) ** 2)
    data = np.zeros((total, 69), np.float32)
    data[where] = noisy
    mask = np.zeros(total, np.float32)
    mask[where] = 1
    write_nifti(os.path.join(a.dir, "data.nii"), data.reshape(dims + (69,), order="F"))
    write_nifti(os.path.join(a.dir, "nodif_brain_mask.nii"), mask.reshape(dims, order="F"))
    np.savetxt(os.path.join(a.dir, "bvals"), bvals[None, :], fmt="%g")
    np.savetxt(os.path.join(a.dir, "bvecs"), bvecs.T, fmt="%.6f")
    print(f"bedpost data: {v} voxels, 69 measurements")


def make_connectome(a):
    os.makedirs(a.dir, exist_ok=True)
    side = int(np.ceil(a.nodes ** (1 / 3))) + 2
    dims = (side, side, side)
    total = side**3
    mask = np.zeros(total, np.float32)
    mask[: a.nodes] = 1
    rng = np.random.default_rng(3)
    path = os.path.join(a.dir, "bold.nii")
    # Written volume by volume: N x L floats may not fit twice in memory.
    write_nifti(path, np.zeros(dims + (1,), np.float32))
    with open(path, "r+b") as fh:
        import struct

        hdr = bytearray(fh.read(352))
        struct.pack_into("<8h", hdr, 40, 4, side, side, side, a.length, 1, 1, 1)
        fh.seek(0)
        fh.write(hdr)
        fh.seek(352)
        for _ in range(a.length):
            vol = np.zeros(total, np.float32)
            vol[: a.nodes] = rng.standard_normal(a.nodes, dtype=np.float32)
            fh.write(vol.tobytes())
    write_nifti(os.path.join(a.dir, "mask.nii"), mask.reshape(dims, order="F"))
    print(f"connectome data: {a.nodes} nodes, {a.length} volumes")


COMMANDS = {
    "randomise": lambda d, o, extra: ["randomise", "-i", f"{d}/data.nii", "-m", f"{d}/mask.nii", "-o", f"{o}/r", "-1"]
    + (extra or "-x -c 3.1 -T -n 10000 --seed 1").split(),
    "bedpost": lambda d, o, extra: ["bedpost", d, "--out", f"{o}/bp.bedpostX"] + (extra or "").split(),
    "connectome": lambda d, o, extra: ["connectome", f"{d}/bold.nii", "--mask", f"{d}/mask.nii", "--out", f"{o}/c"]
    + (extra or "--threshold 0.5").split(),
}


def compute_seconds(case, out):
    """The command's own figure for its spread part, from its JSON report."""
    try:
        if case == "randomise":
            r = json.load(open(f"{out}/r_randomise.json"))
            return sum(c.get("seconds", 0.0) for c in r["contrasts"])
        if case == "bedpost":
            r = json.load(open(f"{out}/bp.bedpostX/bedpost.json"))
            return r.get("chunks_seconds")
        if case == "connectome":
            return json.load(open(f"{out}/c_connectome.json")).get("device_seconds")
    except (OSError, KeyError, ValueError):
        return None
    return None


def same_outputs(a, b):
    """Every file under a equals b's (JSON: apart from timings and devices). Returns (equal, first difference)."""
    for root, _, files in os.walk(a):
        for name in files:
            pa = os.path.join(root, name)
            pb = os.path.join(b, os.path.relpath(pa, a))
            if not os.path.exists(pb):
                return False, f"{pb} missing"
            if name.endswith(".json"):
                if strip(json.load(open(pa)), set()) != strip(json.load(open(pb)), set()):
                    return False, f"{name} differs"
            elif open(pa, "rb").read() != open(pb, "rb").read():
                return False, f"{name} differs"
    return True, ""


SEGMENT = 256 << 20


def file_digest(path, pool):
    """blake2b of each 256 MiB segment (read and hashed on the pool's threads: both release the GIL), then of those."""
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = pool.map(lambda at: hashlib.blake2b(os.pread(fd, SEGMENT, at)).digest(), range(0, size, SEGMENT))
        return hashlib.blake2b(b"".join(parts) + size.to_bytes(8, "little")).hexdigest()
    finally:
        os.close(fd)


def output_digests(out):
    """{relative path: digest} of every output file (JSON reports: their content without timings and devices)."""
    digests = {}
    with ThreadPoolExecutor(max_workers=min(32, os.cpu_count() or 1)) as pool:
        for root, _, files in os.walk(out):
            for name in files:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, out)
                if name.endswith(".json"):
                    digests[rel] = json.dumps(strip(json.load(open(path)), set()), sort_keys=True)
                else:
                    digests[rel] = file_digest(path, pool)
    return digests


def device_count(rtfmri, spec):
    """How many devices `--devices spec` opens in one process (from `rtfmri --devices SPEC devices`)."""
    p = subprocess.run(rtfmri.split() + ["--devices", spec, "devices"], stdout=subprocess.PIPE, text=True)
    lines = p.stdout.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("--devices"):
            return sum(1 for x in lines[k + 1 :] if x.startswith("    "))
    return None


def gpu_specs(rtfmri):
    """The P:D spec of every GPU that `rtfmri devices` lists, in order."""
    p = subprocess.run(rtfmri.split() + ["devices"], stdout=subprocess.PIPE, text=True)
    specs, current = [], None
    for line in p.stdout.splitlines():
        head = line[2:].split()
        if line[:1] in (" ", "*") and head and ":" in head[0] and head[0].replace(":", "").isdigit():
            current = head[0]
        elif "type: GPU" in line and current:
            specs.append(current)
    return specs


def write_report(a, results):
    """The JSON report of the configurations so far, with speed-up and efficiency against the first."""
    base = results[0]
    for e in results:
        for key in ("wall_median_s", "compute_median_s"):
            if e[key] and base[key]:
                speedup = base[key] / e[key]
                e[key.replace("median_s", "speedup")] = speedup
                if e["device_count"]:
                    e[key.replace("median_s", "efficiency")] = speedup / e["device_count"]
    report = {"case": a.case, "args": a.args, "runs": a.runs, "warmup": a.warmup, "date": time.strftime("%Y-%m-%d"),
              "results": results}
    with open(a.out + ".partial", "w") as f:
        json.dump(report, f, indent=2)
    os.replace(a.out + ".partial", a.out)


def run(a):
    results = []
    gpus = gpu_specs(a.rtfmri)
    base_out = None
    base_digests = None
    for config in a.configs.split(";"):
        kind, _, value = config.partition("=")
        prefix = []
        if kind == "gpus":  # the first K GPUs in one process
            if len(gpus) < int(value):
                sys.exit(f"{config}: only {len(gpus)} GPU(s) here")
            kind, value = "devices", ",".join(gpus[: int(value)])
        if kind == "devices":
            devices = value
            prefix = a.rtfmri.split() + ["--devices", value]
            count = device_count(a.rtfmri, value)
        elif kind == "mpi":
            ranks, _, spec = value.partition(":")
            spec = spec or "local-gpu"
            devices = spec
            prefix = a.mpirun.split() + ["-np", ranks] + a.rtfmri.split() + ["--devices", spec]
            count = int(ranks) * (device_count(a.rtfmri, spec) if spec != "local-gpu" else 1)
        else:
            sys.exit(f"bad configuration {config}")
        walls, computes = [], []
        out = os.path.join(a.work, config.replace("=", "-").replace(":", "-").replace(",", "+").replace("/", "_"))
        warmups = a.warmup if (a.warmup_each or not results) else 0
        for r in range(-warmups, a.runs):
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            cmd = prefix + COMMANDS[a.case](a.data, out, a.args)
            t0 = time.monotonic()
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            wall = time.monotonic() - t0
            with open(out + ".log", "w") as log:  # the last run's log beside its outputs
                log.write(p.stdout)
            if p.returncode != 0:
                print(p.stdout[-3000:])
                sys.exit(f"{config}: exit status {p.returncode}")
            if r < 0:
                print(f"{a.case} {config} warm-up: {wall:.2f} s", flush=True)
                continue
            walls.append(wall)
            computes.append(compute_seconds(a.case, out))
            print(f"{a.case} {config} run {r + 1}: {wall:.2f} s (compute {computes[-1]})", flush=True)
            if a.digest:
                t0 = time.monotonic()
                digests = output_digests(out)
                shutil.rmtree(out, ignore_errors=True)
                print(f"  digested {len(digests)} file(s) in {time.monotonic() - t0:.1f} s", flush=True)
        entry = {
            "config": config,
            "devices": devices,
            "device_count": count,
            "wall_median_s": statistics.median(walls),
            "walls_s": walls,
            "compute_median_s": statistics.median([c for c in computes if c is not None]) if any(computes) else None,
        }
        if a.digest:
            entry["digests"] = digests
            if base_digests is None:
                base_digests = digests
                entry["outputs_equal_to_first"] = True
            else:
                differ = sorted(k for k in set(base_digests) | set(digests) if base_digests.get(k) != digests.get(k))
                entry["outputs_equal_to_first"] = not differ
                if differ:
                    entry["difference"] = ", ".join(differ)
        elif base_out is None:
            base_out = out + ".base"
            shutil.rmtree(base_out, ignore_errors=True)
            shutil.copytree(out, base_out)
            entry["outputs_equal_to_first"] = True
        else:
            equal, why = same_outputs(base_out, out)
            entry["outputs_equal_to_first"] = equal
            if not equal:
                entry["difference"] = why
        results.append(entry)
        write_report(a, results)  # after every configuration: a run cut short keeps what it measured
    for e in results:
        print(json.dumps({k: v for k, v in e.items() if k not in ("walls_s", "digests")}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    m = sub.add_parser("make-randomise")
    m.add_argument("dir")
    m.add_argument("--dims", type=int, nargs=3, default=[91, 109, 91])
    m.add_argument("--subjects", type=int, default=49)
    m.add_argument("--fwhm", type=float, default=8.0, help="mm, 2 mm voxels")
    m = sub.add_parser("make-bedpost")
    m.add_argument("dir")
    m.add_argument("--voxels", type=int, default=150000)
    m = sub.add_parser("make-connectome")
    m.add_argument("dir")
    m.add_argument("--nodes", type=int, required=True)
    m.add_argument("--length", type=int, required=True)
    r = sub.add_parser("run")
    r.add_argument("--case", required=True, choices=sorted(COMMANDS))
    r.add_argument("--data", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--configs", required=True)
    r.add_argument("--runs", type=int, default=3)
    r.add_argument("--warmup", type=int, default=1, help="untimed runs before the first configuration's timed ones")
    r.add_argument("--warmup-each", action="store_true", help="--warmup before every configuration")
    r.add_argument("--rtfmri", default="rtfmri")
    r.add_argument("--mpirun", default="mpirun --oversubscribe")
    r.add_argument("--args", default="")
    r.add_argument("--digest", action="store_true", help="compare outputs by digests and remove them after each run")
    r.add_argument("--out", required=True)
    a = ap.parse_args()
    {"make-randomise": make_randomise, "make-bedpost": make_bedpost, "make-connectome": make_connectome, "run": run}[
        a.what
    ](a)


if __name__ == "__main__":
    main()
