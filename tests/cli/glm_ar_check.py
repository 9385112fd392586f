#!/usr/bin/env python3
"""`rtfmri glm --noise arP --ar-fwhm 0` against statsmodels' GLSAR (tests/cli/glm_ar_checks.sh).

  glm_ar_check.py BOLD PREFIX ORDER ITERATIONS T_COLUMN F_COLUMNS
reads BOLD (4D NIfTI), PREFIX_design.tsv, PREFIX_contrast-*_stat-t / _stat-F and PREFIX_ar.nii.gz, and for every
voxel whose series is not constant fits GLSAR(y, X, rho=ORDER).iterative_fit(maxiter=ITERATIONS, rtol=-1) (the early
stop disabled): the t of column T_COLUMN, the F of the columns F_COLUMNS (comma-separated) and the AR coefficients of
the last fit must agree. Exit 0 when they do; prints the largest differences."""
import glob
import sys
import warnings

import numpy as np
import statsmodels.api as sm

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


if __name__ == "__main__":
    sys.exit(main())
