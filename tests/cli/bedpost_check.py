#!/usr/bin/env python3
"""Helpers of bedpost_checks.sh (`rtfmri bedpost`, docs/algorithms/bedpost.md), on dipy's small_64D (real brain DWI,
10x10x10, one b = 0 and 64 directions at b ~ 1000).

prepare SRC_PREFIX DIR MASK_FRACTION: an FSL bedpostx folder from SRC_PREFIX.{nii,bval,bvec}: data.nii.gz (the series
  as it is), bvals (one row), bvecs (3 rows; the b = 0 volume's NaN vector written as 0 0 0), nodif_brain_mask.nii.gz
  (b0 > MASK_FRACTION * max b0, on the data's grid).
bad DIR CASE: breaks a copy of that folder: short-bvals (one b-value too few), nonunit-bvec (a b > 0 gradient of
  norm 1.5), nan-bvec (a b > 0 gradient's y NaN), no-b0 (every b 1000, bvecs all unit), empty-mask (all zeros),
  no-bvecs (removed); or, accepted, nan-b0 (the b = 0 gradients "nan nan nan", as dipy writes them).
check DIR OUT FIBRES SAMPLES MAX_MEDIAN_DEG: every output of `rtfmri bedpost DIR --out OUT` (FSL's names, dims, ranges,
  zeros outside the mask, means and dyads recomputed from the merged samples, bvals/bvecs copies, bedpost.json), then
  dyads1 against the principal eigenvector of dipy's tensor fit (TensorModel, WLS) on the same data: angle
  arccos(|dot|) in mask voxels with FA > 0.5 and FA > 0.3, its median below MAX_MEDIAN_DEG and its 90th percentile below 20 degrees
  where FA > 0.5.
same OUT_A OUT_B / differ OUT_A OUT_B: the merged samples of two runs are (not) identical."""
import gzip
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nifti_min import read_nifti, write_nifti  # noqa: E402

problems = []


def expect(ok, what):
    if not ok:
        problems.append(what)
        print("FAILED:", what)


def gzip_file(src, dst):
    with open(src, "rb") as f, gzip.open(dst, "wb") as g:
        g.write(f.read())


def read_bvals(d):
    return np.loadtxt(os.path.join(d, "bvals"), ndmin=1)


def read_bvecs(d):
    return np.loadtxt(os.path.join(d, "bvecs"), ndmin=2)  # 3 x N


def prepare(src, d, fraction):
    os.makedirs(d, exist_ok=True)
    gzip_file(src + ".nii", os.path.join(d, "data.nii.gz"))
    bvals = np.loadtxt(src + ".bval", ndmin=1)
    bvecs = np.loadtxt(src + ".bvec", ndmin=2)
    if bvecs.shape[0] != 3:
        bvecs = bvecs.T
    bvecs = np.nan_to_num(bvecs, nan=0.0)
    np.savetxt(os.path.join(d, "bvals"), bvals[None, :], fmt="%.6f")
    np.savetxt(os.path.join(d, "bvecs"), bvecs, fmt="%.10f")
    data = read_nifti(src + ".nii").astype(np.float64)
    b0 = data[..., bvals <= 50].mean(axis=-1)
    mask = (b0 > fraction * b0.max()).astype(np.float32)
    tmp = os.path.join(d, "mask.tmp.nii")
    write_nifti(tmp, mask, like=src + ".nii")
    gzip_file(tmp, os.path.join(d, "nodif_brain_mask.nii.gz"))
    os.remove(tmp)
    print(f"prepared {d}: data {data.shape}, {int(mask.sum())} mask voxels (b0 > {fraction} of its max), "
          f"{int((bvals <= 50).sum())} b = 0 volume(s)")


def bad(d, case):
    if case == "short-bvals":
        b = read_bvals(d)
        np.savetxt(os.path.join(d, "bvals"), b[None, :-1], fmt="%.6f")
    elif case == "nonunit-bvec":
        b, g = read_bvals(d), read_bvecs(d)
        k = int(np.nonzero(b > 50)[0][4])
        g[:, k] *= 1.5
        np.savetxt(os.path.join(d, "bvecs"), g, fmt="%.10f")
    elif case in ("nan-bvec", "nan-b0"):
        b, g = read_bvals(d), read_bvecs(d)
        if case == "nan-bvec":
            g[1, int(np.nonzero(b > 50)[0][4])] = np.nan
        else:
            g[:, b <= 50] = np.nan
        np.savetxt(os.path.join(d, "bvecs"), g, fmt="%.10f")  # numpy writes NaN as "nan", as dipy's files have it
    elif case == "no-b0":  # every b = 1000, the b = 0 volumes given a unit vector (so only bvals is wrong)
        b, g = read_bvals(d), read_bvecs(d)
        g[:, b <= 50] = np.array([[1.0], [0.0], [0.0]])
        np.savetxt(os.path.join(d, "bvals"), np.full((1, b.size), 1000.0), fmt="%.6f")
        np.savetxt(os.path.join(d, "bvecs"), g, fmt="%.10f")
    elif case == "empty-mask":
        path = os.path.join(d, "nodif_brain_mask.nii.gz")
        mask = read_nifti(path)
        tmp = os.path.join(d, "mask.tmp.nii")
        write_nifti(tmp, np.zeros(mask.shape[:3], np.float32), like=path)
        gzip_file(tmp, path)
        os.remove(tmp)
    elif case == "no-bvecs":
        os.remove(os.path.join(d, "bvecs"))
    else:
        raise SystemExit(f"unknown case {case}")


def squeeze3(a):
    return a.reshape(a.shape[:3]) if a.ndim == 4 and a.shape[3] == 1 else a


def mean_dyad(th, ph):
    """Principal eigenvector and 1 - largest eigenvalue of the mean dyadic tensor of samples th, ph [..., sample]."""
    v = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], axis=-1)
    t = np.einsum("nsi,nsj->nij", v, v) / th.shape[-1]
    w, e = np.linalg.eigh(t)
    return e[..., :, -1], 1.0 - w[..., -1], w[..., -1] - w[..., -2]


def angles_deg(a, b):
    return np.degrees(np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0.0, 1.0)))


def check(d, out, fibres, samples, max_median):
    data = read_nifti(os.path.join(d, "data.nii.gz")).astype(np.float64)
    grid = data.shape[:3]
    mask = squeeze3(read_nifti(os.path.join(d, "nodif_brain_mask.nii.gz"))) != 0
    nvox = int(mask.sum())
    outside = ~mask

    def load(name, volumes):
        path = os.path.join(out, name + ".nii.gz")
        if not os.path.isfile(path):
            expect(False, f"{name}.nii.gz missing")
            return None
        a = read_nifti(path).astype(np.float64)
        a = squeeze3(a) if volumes == 1 else a
        want = grid if volumes == 1 else grid + (volumes,)
        expect(a.shape == want, f"{name}: dims {a.shape}, expected {want}")
        if a.shape != want:
            return None
        expect(np.all(np.isfinite(a[mask])), f"{name}: a non-finite value in the mask")
        expect(np.all(a[outside] == 0), f"{name}: non-zero outside the mask")
        return a

    merged = {}
    for i in range(1, fibres + 1):
        for q in ("th", "ph", "f"):
            m = load(f"merged_{q}{i}samples", samples)
            mean = load(f"mean_{q}{i}samples", 1)
            merged[q, i] = m
            if m is not None and mean is not None:
                err = np.abs(m[mask].mean(axis=-1) - mean[mask]).max()
                expect(err <= 1e-4 * max(1.0, np.abs(mean[mask]).max()),
                       f"mean_{q}{i}samples differs from the mean of merged_{q}{i}samples by {err:.3g}")
        dy = load(f"dyads{i}", 3)
        disp = load(f"dyads{i}_dispersion", 1)
        if dy is not None:
            norm = np.linalg.norm(dy[mask], axis=-1)
            expect(np.all(np.abs(norm - 1) < 1e-4), f"dyads{i}: |v| from {norm.min():.6f} to {norm.max():.6f}")
        if disp is not None:
            expect(np.all((disp[mask] >= -1e-6) & (disp[mask] <= 2 / 3 + 1e-6)),
                   f"dyads{i}_dispersion outside [0, 2/3]")
        if dy is not None and disp is not None and merged["th", i] is not None and merged["ph", i] is not None:
            v, s, gap = mean_dyad(merged["th", i][mask], merged["ph", i][mask])
            clear = gap > 1e-3  # elsewhere (a fibre switched off, samples all over the sphere) v is ill-conditioned
            worst_dot = np.abs(np.sum(v[clear] * dy[mask][clear], axis=-1)).min() if clear.any() else 1.0
            worst_disp = np.abs(s - disp[mask]).max()
            print(f"dyads{i} against the mean dyadic tensor of the merged samples: least |dot| {worst_dot:.6f} in the "
                  f"{int(clear.sum())} voxels whose two largest eigenvalues differ by > 1e-3, dispersion within "
                  f"{worst_disp:.2g} in all {nvox}")
            expect(worst_dot > 1 - 1e-4, f"dyads{i}: not the principal eigenvector of the samples' mean dyadic tensor")
            expect(worst_disp < 1e-4, f"dyads{i}_dispersion is not 1 - the largest eigenvalue")
    fs = [merged["f", i] for i in range(1, fibres + 1)]
    if all(f is not None for f in fs):
        fm = np.stack([f[mask] for f in fs])
        expect(np.all((fm >= 0) & (fm <= 1)), "a sampled f outside [0, 1]")
        expect(np.all(fm.sum(axis=0) <= 1 + 1e-6), f"a sample with sum f = {fm.sum(axis=0).max():.6f} > 1")
    f1 = load("mean_f1samples", 1)
    if f1 is not None:
        expect(np.all((f1[mask] >= 0) & (f1[mask] <= 1)), "mean_f1samples outside [0, 1]")
    fsum = load("mean_fsumsamples", 1)
    if fsum is not None:
        expect(np.all((fsum[mask] >= 0) & (fsum[mask] <= 1 + 1e-6)), f"mean_fsumsamples up to {fsum[mask].max()}")
        means = [load(f"mean_f{i}samples", 1) for i in range(1, fibres + 1)]
        if all(m is not None for m in means):
            err = np.abs(sum(means)[mask] - fsum[mask]).max()
            expect(err < 1e-5, f"mean_fsumsamples differs from the sum of mean_f<i>samples by {err:.3g}")
    dmap = load("mean_dsamples", 1)
    if dmap is not None:
        expect(np.all((dmap[mask] > 0) & (dmap[mask] <= 0.005)), "mean_dsamples outside (0, 0.005]")
    s0 = load("mean_S0samples", 1)
    if s0 is not None:
        b0 = data[..., read_bvals(d) <= 50].mean(axis=-1)
        ratio = s0[mask] / b0[mask]
        print(f"mean_S0samples / mean b0 signal: median {np.median(ratio):.3f}, from {ratio.min():.3f} "
              f"to {ratio.max():.3f}")
        expect(np.all(s0[mask] > 0) and 0.8 < np.median(ratio) < 1.2, "mean_S0samples far from the b0 signal")
    omask = load("nodif_brain_mask", 1)
    if omask is not None:
        expect(np.array_equal(omask != 0, mask), "nodif_brain_mask differs from the input mask")
    for name, reader in (("bvals", read_bvals), ("bvecs", read_bvecs)):
        if os.path.isfile(os.path.join(out, name)):
            expect(np.array_equal(reader(out), reader(d)), f"{name} is not a copy of the input's")
        else:
            expect(False, f"{name} missing")
    js = os.path.join(out, "bedpost.json")
    if os.path.isfile(js):
        summary = json.load(open(js))
        print(f"bedpost.json: {summary.get('voxels')} voxels, {summary.get('samples')} samples, "
              f"{summary.get('seconds')} s, device {summary.get('device')}")
        expect(summary.get("voxels") == nvox, f"bedpost.json voxels {summary.get('voxels')}, mask has {nvox}")
        expect(summary.get("samples") == samples, f"bedpost.json samples {summary.get('samples')}, not {samples}")
        expect(summary.get("fibres") == fibres, f"bedpost.json fibres {summary.get('fibres')}, not {fibres}")
    else:
        expect(False, "bedpost.json missing")

    # dyads1 against dipy's tensor.
    from dipy.core.gradients import gradient_table
    from dipy.reconst.dti import TensorModel

    gtab = gradient_table(read_bvals(d), read_bvecs(d).T, b0_threshold=50)
    fit = TensorModel(gtab).fit(data, mask=mask)
    fa = np.nan_to_num(fit.fa)
    e1 = fit.evecs[..., :, 0]
    dy = load("dyads1", 3)
    if dy is None:
        return
    for threshold in (0.5, 0.3):
        sel = mask & (fa > threshold)
        a = angles_deg(dy[sel], e1[sel])
        if a.size == 0:
            expect(False, f"no mask voxel with FA > {threshold}")
            continue
        print(f"dyads1 vs DTI principal eigenvector, FA > {threshold}: {a.size} voxels, median {np.median(a):.2f} deg, "
              f"90th percentile {np.percentile(a, 90):.2f} deg, max {a.max():.2f} deg")
        if threshold == 0.5:
            expect(a.size >= 50, f"only {a.size} voxels with FA > 0.5 (expected a few hundred)")
            expect(np.median(a) < max_median, f"median angle {np.median(a):.2f} deg >= {max_median} deg (FA > 0.5)")
            # The tail is crossing voxels, where the tensor's axis lies between two sticks (measured: 12.1 deg).
            expect(np.percentile(a, 90) < 20.0, f"90th percentile {np.percentile(a, 90):.2f} deg >= 20 deg (FA > 0.5)")
    if f1 is not None:
        sel = mask & (fa > 0.5)
        print(f"mean_f1samples where FA > 0.5: median {np.median(f1[sel]):.3f}; elsewhere in the mask: "
              f"median {np.median(f1[mask & (fa <= 0.5)]):.3f}")


def compare(a, b, want_same):
    names = sorted(n for n in os.listdir(a) if n.startswith("merged_"))
    same = bool(names) and all(
        np.array_equal(read_nifti(os.path.join(a, n)), read_nifti(os.path.join(b, n))) for n in names)
    print(f"{len(names)} merged files of {a} and {b}: {'identical' if same else 'different'}")
    expect(same == want_same, f"merged samples {'differ' if want_same else 'are identical'}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "prepare":
        prepare(args[0], args[1], float(args[2]))
    elif cmd == "bad":
        bad(args[0], args[1])
    elif cmd == "check":
        check(args[0], args[1], int(args[2]), int(args[3]), float(args[4]))
    elif cmd in ("same", "differ"):
        compare(args[0], args[1], cmd == "same")
    else:
        raise SystemExit(__doc__)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
