#!/usr/bin/env python3
"""`rtfmri glm --noise arP --ar-fwhm 0` against statsmodels' GLSAR (tests/cli/glm_ar_checks.sh).

  glm_ar_check.py BOLD PREFIX ORDER ITERATIONS T_COLUMN F_COLUMNS
reads BOLD (4D NIfTI), PREFIX_design.tsv, PREFIX_contrast-*_stat-t / _stat-F and PREFIX_ar.nii.gz, and for every
voxel whose series is not constant fits GLSAR(y, X, rho=ORDER).iterative_fit(maxiter=ITERATIONS, rtol=-1) (the early
stop disabled): the t of column T_COLUMN, the F of the columns F_COLUMNS (comma-separated) and the AR coefficients of
the last fit must agree. Exit 0 when they do; prints the largest differences.

  glm_ar_check.py --permutation PREFIX NAME PERMUTATIONS THRESHOLD
checks the permutation outputs of contrast NAME: the null files hold PERMUTATIONS maxima with the observed first (the
t map's maximum over the mask; the largest cluster of t > THRESHOLD as scipy.ndimage labels it, 26-connected), and
the vox_corrp and clustere_corrp maps equal 1 - p recomputed from the t map, scipy.ndimage's clusters and the nulls."""
import glob
import sys
import warnings

import numpy as np
import statsmodels.api as sm
from scipy import ndimage

from nifti_min import read_nifti


def main():
    bold_path, prefix, order, iterations, t_column, f_columns = sys.argv[1:7]
    order, iterations = int(order), int(iterations)
    bold = read_nifti(bold_path).astype(np.float64)
    with open(prefix + "_design.tsv") as f:
        names = f.readline().rstrip("\n").split("\t")
    x = np.loadtxt(prefix + "_design.tsv", skiprows=1, ndmin=2)
    t_map = read_nifti(glob.glob(prefix + "_contrast-*_stat-t.nii.gz")[0])
    f_map = read_nifti(glob.glob(prefix + "_contrast-*_stat-F.nii.gz")[0])
    rho_map = read_nifti(prefix + "_ar.nii.gz")
    tc = names.index(t_column)
    fc = [names.index(c) for c in f_columns.split(",")]
    r = np.zeros((len(fc), x.shape[1]))
    for i, c in enumerate(fc):
        r[i, c] = 1.0
    worst_t = worst_f = worst_rho = 0.0
    compared = 0
    flat = bold.reshape(-1, bold.shape[3], order="F")
    for v in range(flat.shape[0]):
        y = flat[v]
        if np.ptp(y) == 0:
            continue
        model = sm.GLSAR(y, x, rho=order)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = model.iterative_fit(maxiter=iterations, rtol=-1)
            f_value = float(np.squeeze(res.f_test(r).fvalue))
        ijk = np.unravel_index(v, bold.shape[:3], order="F")
        t_ours, f_ours = float(t_map[ijk]), float(f_map[ijk])
        rho_ours = np.array([rho_map[ijk + (k,)] for k in range(order)]) if order > 1 else np.array([rho_map[ijk]])
        t_ref = res.tvalues[tc]
        worst_t = max(worst_t, abs(t_ours - t_ref) / max(abs(t_ref), 1.0))
        worst_f = max(worst_f, abs(f_ours - f_value) / max(abs(f_value), 1.0))
        worst_rho = max(worst_rho, float(np.max(np.abs(rho_ours - model.rho))))
        compared += 1
    print(f"GLSAR AR({order}), {iterations} fits, {compared} voxels: largest t difference {worst_t:.2e} "
          f"(relative, floor 1), F {worst_f:.2e}, rho {worst_rho:.2e}")
    ok = compared > 100 and worst_t < 1e-4 and worst_f < 1e-4 and worst_rho < 1e-5
    print("ok" if ok else "FAILED (bounds: t and F 1e-4 relative, rho 1e-5, more than 100 voxels)")
    return 0 if ok else 1


def volume(path):
    a = read_nifti(path)
    return a[..., 0] if a.ndim == 4 else a


def one_minus_p(values, null, slack):
    null = np.sort(np.asarray(null, dtype=np.float64))
    out = np.zeros(len(values))
    for i, v in enumerate(values):
        if v > 0:
            out[i] = 1.0 - (len(null) - np.searchsorted(null, v * (1.0 - slack), side="left")) / len(null)
    return out


def permutation(prefix, name, permutations, threshold):
    base = f"{prefix}_contrast-{name}"
    t = volume(base + "_stat-t.nii.gz").astype(np.float64)
    mask = volume(prefix + "_mask.nii.gz") != 0
    null_vox = np.loadtxt(base + "_null_vox.txt")
    null_ext = np.loadtxt(base + "_null_clustere.txt")
    problems = []
    if len(null_vox) != permutations or len(null_ext) != permutations:
        problems.append(f"{len(null_vox)} and {len(null_ext)} null values for {permutations} permutations")
    tm = np.where(mask, t, -np.inf)
    if abs(null_vox[0] - np.nanmax(tm)) > 1e-5 * abs(null_vox[0]):
        problems.append(f"first voxel null {null_vox[0]} is not the observed maximum {np.nanmax(tm)}")
    labels, count = ndimage.label(mask & (np.nan_to_num(t) > threshold), structure=np.ones((3, 3, 3)))
    sizes = np.bincount(labels.ravel())[1:] if count else np.zeros(0)
    if int(null_ext[0]) != (int(sizes.max()) if count else 0):
        problems.append(f"first extent null {null_ext[0]}, scipy.ndimage's largest cluster {sizes.max() if count else 0}")
    vox = volume(base + "_vox_corrp.nii.gz")[mask]
    expected_vox = one_minus_p(np.nan_to_num(t[mask], nan=-np.inf), null_vox, 1e-5)
    ext = volume(base + "_clustere_corrp.nii.gz")[mask]
    extent = np.where(labels > 0, np.concatenate([[0], sizes])[labels], 0)[mask]
    expected_ext = one_minus_p(extent, null_ext, 0.0)
    if np.max(np.abs(vox - expected_vox)) > 1e-6:
        problems.append(f"vox_corrp differs from the recomputation by {np.max(np.abs(vox - expected_vox))}")
    if np.max(np.abs(ext - expected_ext)) > 1e-6:
        problems.append(f"clustere_corrp differs from the recomputation by {np.max(np.abs(ext - expected_ext))}")
    print(f"{name}: {len(null_vox)} permutations, observed max t {null_vox[0]:.3f} (null 95th percentile "
          f"{np.percentile(null_vox, 95):.3f}), {count} cluster(s) at t > {threshold}, largest {null_ext[0]:.0f}")
    for p in problems:
        print("FAILED:", p)
    return 0 if not problems else 1


if __name__ == "__main__":
    if sys.argv[1] == "--permutation":
        sys.exit(permutation(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
    sys.exit(main())
