#!/usr/bin/env python3
"""`rtfmri decode` as a whole process against a PyTorch peer on the same GPU (issue 38's training case: 200 volumes
in two runs x ~60,000 voxels, logistic regression, C = 1).

  decode_peer.py RTFMRI WORK_DIR [--repeats 5]
writes two runs of a 40x40x38 grid (60,800 voxels, every one in the mask) x 100 volumes (noise plus a pattern in
alternate blocks of 10 volumes, 2 s TR) as uncompressed NIfTI with an events file, then times (median of --repeats):
  - `rtfmri decode ... --cv k-fold --folds 12 --model logistic` as a whole process (reading, the device's work, the
    12 folds and the final fit, writing every file), and the phases it reports in PREFIX_decode.json;
  - the PyTorch peer a user would write: the two runs read with numpy, moved to the GPU, linearly detrended and
    z-scored per run, then sklearn's logistic objective (C sum log-loss + |w|^2 / 2, intercept free) minimised by
    torch.optim.LBFGS (strong Wolfe line search, tolerance 1e-9) in float64 on the GPU, once on all samples
    (no cross-validation: the peer does less work than the command).
Prints one JSON line: both times, and the cosine between the two weight vectors and the relative difference of the
decision values (the same objective: they should agree)."""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
from nifti_min import read_nifti, write_nifti  # noqa: E402

DIMS = (40, 40, 38)
VOLUMES = 100
TR = 2.0


def make(work):
    rng = np.random.default_rng(3)
    pattern = rng.standard_normal(DIMS).astype(np.float32)
    for r in range(2):
        data = (1000 + 10 * rng.standard_normal(DIMS + (VOLUMES,))).astype(np.float32)
        for t in range(VOLUMES):
            data[..., t] += (0.5 if (t // 10) % 2 else -0.5) * pattern
        write_nifti(f"{work}/run{r + 1}.nii", data)
    write_nifti(f"{work}/mask.nii", np.ones(DIMS, np.float32))
    with open(f"{work}/events.tsv", "w") as f:
        f.write("onset\tduration\ttrial_type\n")
        for b in range(VOLUMES // 10):
            f.write(f"{b * 10 * TR}\t{10 * TR}\t{'b' if b % 2 else 'a'}\n")


def run_rtfmri(rtfmri, work):
    args = [rtfmri, "decode", f"{work}/run1.nii", f"{work}/run2.nii", "--events", f"{work}/events.tsv",
            f"{work}/events.tsv", "--mask", f"{work}/mask.nii", "--tr", str(TR), "--lag", "0", "--cv", "k-fold",
            "--folds", "12", "--model", "logistic", "--out", f"{work}/rt"]
    t = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def torch_peer(work):
    import torch
    dev = torch.device("cuda")
    t0 = time.perf_counter()
    mask = read_nifti(f"{work}/mask.nii").reshape(-1, order="F") != 0
    xs = []
    for r in range(2):
        data = read_nifti(f"{work}/run{r + 1}.nii")
        series = torch.from_numpy(np.ascontiguousarray(data.reshape(-1, data.shape[3], order="F")[mask].T)).to(dev)
        series = series.double()
        t = torch.linspace(-1, 1, series.shape[0], device=dev, dtype=torch.float64)
        design = torch.stack([torch.ones_like(t), t], 1)
        beta = torch.linalg.lstsq(design, series).solution
        z = series - design @ beta
        xs.append((z - z.mean(0)) / z.std(0, unbiased=False))
    x = torch.cat(xs)
    y = torch.tensor([1.0 if (i % VOLUMES // 10) % 2 else -1.0 for i in range(2 * VOLUMES)], device=dev,
                     dtype=torch.float64)
    w = torch.zeros(x.shape[1], device=dev, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, device=dev, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1, max_iter=1000, tolerance_grad=1e-9, tolerance_change=1e-15,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-y * (x @ w + b)).sum() + 0.5 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    decisions = (x @ w + b).detach().cpu().numpy()
    weights = w.detach().cpu().numpy()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, weights, decisions, x.cpu().numpy()


def main():
    rtfmri, work = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--repeats" else 5
    os.makedirs(work, exist_ok=True)
    make(work)
    run_rtfmri(rtfmri, work)  # the kernel cache warmed
    ours = [run_rtfmri(rtfmri, work) for _ in range(repeats)]
    phases = json.load(open(f"{work}/rt_decode.json"))["timing_s"]
    torch_peer(work)  # CUDA and cuBLAS started
    peer = [torch_peer(work) for _ in range(repeats)]
    model = json.load(open(f"{work}/rt_model.json"))
    w_ours = np.array(model["coef"][0])
    _, w_peer, d_peer, x = peer[-1]
    d_ours = x @ w_ours + model["intercept"][0]
    print(json.dumps({
        "bench": "decode_whole_process", "volumes": 2 * VOLUMES, "voxels": int(np.prod(DIMS)),
        "rtfmri_decode_s": {"median": statistics.median(ours), "min": min(ours)}, "rtfmri_phases_s": phases,
        "torch_lbfgs_fit_s": {"median": statistics.median(p[0] for p in peer), "min": min(p[0] for p in peer)},
        "weights_cosine": float(w_ours @ w_peer / np.linalg.norm(w_ours) / np.linalg.norm(w_peer)),
        "decision_rel_diff": float(np.abs(d_ours - d_peer).max() / np.abs(d_peer).max())}))


if __name__ == "__main__":
    main()
