#!/usr/bin/env python3
"""rtfmri glm --bayes against rtfmri glm --noise ar1 on fmri1 (glm_bayes_checks.sh): per t contrast, |posterior mean -
GLS effect| / posterior SD has median < 0.1, 95th percentile < 0.35, maximum < 0.75, correlation > 0.99; PPM in [0, 1]
and > 0.99 where GLS t > 4; split-R-hat's median in the JSON within 1.01 of 1.
usage: glm_bayes_check.py WORK_DIR"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from connectome_check import read_nifti  # noqa: E402


def main():
    work = sys.argv[1]
    problems = []
    report = json.load(open(os.path.join(work, "b_glm.json")))
    for entry in report["contrasts"]:
        name = entry["name"]
        get = lambda p: read_nifti(os.path.join(work, p)).ravel()
        mean, sd, ppm = (get(f"b_contrast-{name}_stat-{s}.nii.gz") for s in ("postmean", "postsd", "ppm"))
        gls, t = get(f"g_contrast-{name}_stat-effect.nii.gz"), get(f"g_contrast-{name}_stat-t.nii.gz")
        ok = np.isfinite(mean) & np.isfinite(gls) & (sd > 0)
        z = np.abs(mean[ok] - gls[ok]) / sd[ok]
        corr = np.corrcoef(mean[ok], gls[ok])[0, 1]
        strong = ok & (t > 4)
        print(f"{name}: {ok.sum()} voxels, |posterior mean - GLS| / posterior SD median {np.median(z):.3f}, "
              f"95th percentile {np.percentile(z, 95):.3f}, max {z.max():.3f}, correlation {corr:.4f}; "
              f"{strong.sum()} voxels with GLS t > 4, their least PPM {ppm[strong].min() if strong.any() else 'n/a'}; "
              f"split-R-hat median {entry['split_r_hat']['median']:.4f}")
        if not (np.median(z) < 0.1 and np.percentile(z, 95) < 0.35 and z.max() < 0.75 and corr > 0.99):
            problems.append(f"{name}: posterior means differ from GLS more than stated")
        if not (np.all(ppm[ok] >= 0) and np.all(ppm[ok] <= 1)):
            problems.append(f"{name}: a PPM outside [0, 1]")
        if strong.any() and ppm[strong].min() <= 0.99:
            problems.append(f"{name}: PPM <= 0.99 where GLS t > 4")
        if abs(entry["split_r_hat"]["median"] - 1) > 0.01:
            problems.append(f"{name}: split-R-hat median {entry['split_r_hat']['median']}")
    for p in problems:
        print("FAILED:", p)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
