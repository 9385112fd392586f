#!/usr/bin/env python3
"""rtfmri glm --bayes against rtfmri glm --noise arL on fmri1 (glm_bayes_checks.sh).
AR(1) (prefixes b, g): per t contrast, |posterior mean - GLS effect| / posterior SD has median < 0.1, 95th percentile
< 0.35, maximum < 0.75, correlation > 0.99; PPM in [0, 1] and > 0.99 where GLS t > 4; split-R-hat's median in the JSON
within 1.01 of 1.
AR(4) (prefixes b4, g4; 40 volumes leave 36 whitened rows for 5 + 4 coefficients, and GLSAR's Yule-Walker AR
estimates from OLS residuals sit below the posterior's: measured over seeds 3, 4, 5 median 0.18-0.22, 95th percentile
0.62-0.79, maximum 1.5-2.3, correlation 0.920-0.944, least PPM where GLS t > 4 0.79-0.96): median < 0.3, 95th
percentile < 1.0, maximum < 3.5, correlation > 0.88, PPM > 0.7 where GLS t > 4; PREFIX_ar_postmean is 4D with 4
volumes, each correlated > 0.6 with GLS's AR map (measured 0.73-0.89); the JSON has ar_order 4 and four coefficients'
split-R-hat and ESS.
usage: glm_bayes_check.py WORK_DIR [BAYES_PREFIX GLS_PREFIX ORDER]"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from connectome_check import read_nifti  # noqa: E402

# order: (median, 95th percentile, max, correlation, least PPM where GLS t > 4)
BOUNDS = {1: (0.1, 0.35, 0.75, 0.99, 0.99), 4: (0.3, 1.0, 3.5, 0.88, 0.7)}


def main():
    work = sys.argv[1]
    bayes, gls_prefix, order = (sys.argv[2], sys.argv[3], int(sys.argv[4])) if len(sys.argv) > 4 else ("b", "g", 1)
    med_max, p95_max, z_max, corr_min, ppm_min = BOUNDS[order]
    problems = []
    report = json.load(open(os.path.join(work, f"{bayes}_glm.json")))
    for entry in report["contrasts"]:
        name = entry["name"]
        get = lambda p: read_nifti(os.path.join(work, p)).ravel()
        mean, sd, ppm = (get(f"{bayes}_contrast-{name}_stat-{s}.nii.gz") for s in ("postmean", "postsd", "ppm"))
        gls = get(f"{gls_prefix}_contrast-{name}_stat-effect.nii.gz")
        t = get(f"{gls_prefix}_contrast-{name}_stat-t.nii.gz")
        ok = np.isfinite(mean) & np.isfinite(gls) & (sd > 0)
        z = np.abs(mean[ok] - gls[ok]) / sd[ok]
        corr = np.corrcoef(mean[ok], gls[ok])[0, 1]
        strong = ok & (t > 4)
        print(f"AR({order}) {name}: {ok.sum()} voxels, |posterior mean - GLS| / posterior SD median {np.median(z):.3f}, "
              f"95th percentile {np.percentile(z, 95):.3f}, max {z.max():.3f}, correlation {corr:.4f}; "
              f"{strong.sum()} voxels with GLS t > 4, their least PPM {ppm[strong].min() if strong.any() else 'n/a'}; "
              f"split-R-hat median {entry['split_r_hat']['median']:.4f}")
        if not (np.median(z) < med_max and np.percentile(z, 95) < p95_max and z.max() < z_max and corr > corr_min):
            problems.append(f"{name}: posterior means differ from GLS more than stated")
        if not (np.all(ppm[ok] >= 0) and np.all(ppm[ok] <= 1)):
            problems.append(f"{name}: a PPM outside [0, 1]")
        if strong.any() and ppm[strong].min() <= ppm_min:
            problems.append(f"{name}: PPM <= {ppm_min} where GLS t > 4")
        if abs(entry["split_r_hat"]["median"] - 1) > 0.01:
            problems.append(f"{name}: split-R-hat median {entry['split_r_hat']['median']}")
    if order > 1:
        rho = read_nifti(os.path.join(work, f"{bayes}_ar_postmean.nii.gz"))
        rho_gls = read_nifti(os.path.join(work, f"{gls_prefix}_ar.nii.gz"))
        if rho.ndim != 4 or rho.shape[3] != order:
            problems.append(f"{bayes}_ar_postmean has shape {rho.shape}, not 4D with {order} volumes")
        else:
            for k in range(order):
                x, y = rho[..., k].ravel(), rho_gls[..., k].ravel()
                ok = np.isfinite(x) & np.isfinite(y)
                corr = np.corrcoef(x[ok], y[ok])[0, 1]
                print(f"rho_{k + 1}: posterior mean median {np.median(x[ok]):.3f}, GLS median {np.median(y[ok]):.3f}, "
                      f"correlation {corr:.3f}")
                if corr <= 0.6:
                    problems.append(f"rho_{k + 1}: correlation with GLS {corr:.3f}")
        if report.get("ar_order") != order or len(report.get("ar", [])) != order or any(
                "split_r_hat" not in a or "ess" not in a for a in report.get("ar", [])):
            problems.append("the JSON lacks ar_order or the coefficients' split-R-hat / ESS")
    for p in problems:
        print("FAILED:", p)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
