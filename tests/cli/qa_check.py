#!/usr/bin/env python3
"""`rtfmri qa` against the independent numpy/scipy reference tests/qa/qa_reference.py (tests/cli/qa_checks.sh).

  qa_check.py PREFIX REF_TSV REF_PREFIX [IQM_JSON]
reads rtfmri's PREFIX_qa.tsv and PREFIX_qa_{mean,sd,tsnr,mask}.nii.gz and the reference's REF_TSV and REF_PREFIX_{mean,sd,
tsnr,slice_z}.npy (qa_reference.py run with rtfmri's mask and the same slice options) and checks, per volume: the
global signal within 1e-5 relative, the outlier fraction equal (AFNI's rule on the same floats; a value within 1e-5 of
the threshold may fall either way, so at most one voxel's difference is allowed in at most one volume in a hundred),
the quality index within 1e-4 relative, the worst slice z within 1e-4 relative (NaN where the reference's is); and the
mean, SD and tSNR maps inside the mask within 1e-4 relative; with motion, FD within 1e-5 relative (printed to 6
digits) and the usable frames
per threshold equal; with IQM_JSON (tests/qa/iqm_reference.py on the same BOLD and rtfmri's mask), MRIQC's
image-quality metrics in PREFIX_qa.json (efc, fber, snr, gsr_x, gsr_y, fwhm_*, gcor, dvars_std, dvars_vstd) and the
per-volume dvars_std and dvars_vstd columns within 1e-4 relative (IQM_TOLERANCE says where a looser one applies and
why). Exit 0 when all agree; prints the largest differences."""
import csv
import sys

import numpy as np

from nifti_min import read_nifti


def read_tsv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return rows


def number(text):
    return np.nan if text in ("n/a", "nan", "") else float(text)


def relative(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    both = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return np.inf
    if not both.any():
        return 0.0
    return float(np.max(np.abs(a[both] - b[both]) / np.maximum(np.abs(b[both]), 1e-12)))


# rtfmri's qa.json name -> iqm_reference.py's.
IQM_FIELDS = {"efc": "efc", "fber": "fber", "snr": "snr", "gsr_x": "gsr_x", "gsr_y": "gsr_y", "fwhm_x": "fwhm_x",
              "fwhm_y": "fwhm_y", "fwhm_z": "fwhm_z", "fwhm_avg": "fwhm_avg", "gcor": "gcor",
              "dvars_std": "dvars_std_mean", "dvars_vstd": "dvars_vstd_mean"}
IQM_TOLERANCE = {}  # every IQM within 1e-4 relative


def check_iqms(prefix, ours_rows, iqm_json, check):
    """MRIQC's IQMs of rtfmri qa against iqm_reference.py's."""
    import json
    ours = json.load(open(prefix + "_qa.json"))
    ref = json.load(open(iqm_json))
    as_number = lambda v: np.nan if v is None else float(v)
    for name, ref_name in IQM_FIELDS.items():
        got, want = as_number(ours.get(name)), as_number(ref.get(ref_name))
        print(f"  {name}: {got:.8g} (reference {want:.8g})")
        check(f"{name} (relative)", relative([got], [want]), IQM_TOLERANCE.get(name, 1e-4))
    # The TSV's 6 significant digits are within 5e-6 of the value.
    for column in ("dvars_std", "dvars_vstd"):
        check(f"{column} per volume (relative)", relative([number(r[column]) for r in ours_rows],
                                                           [as_number(v) for v in ref[column]]), 1e-4)


def main():
    prefix, ref_tsv, ref_prefix = sys.argv[1:4]
    ours, ref = read_tsv(prefix + "_qa.tsv"), read_tsv(ref_tsv)
    ok = True
    if len(ours) != len(ref):
        print(f"{len(ours)} rows against the reference's {len(ref)}")
        return 1
    mask = read_nifti(prefix + "_qa_mask.nii.gz").reshape(-1, order="F") != 0
    voxels = int(mask.sum())

    def check(name, worst, tolerance):
        nonlocal ok
        print(f"{name}: largest difference {worst:.3g} (tolerance {tolerance:g})")
        if not worst <= tolerance:
            ok = False

    check("global signal (relative)",
          relative([number(r["global_signal"]) for r in ours], [number(r["global_signal"]) for r in ref]), 1e-5)
    counts_ours = np.array([round(number(r["outlier_fraction"]) * voxels) for r in ours])
    counts_ref = np.array([round(number(r["outlier_fraction"]) * voxels) for r in ref])
    differ = np.abs(counts_ours - counts_ref)
    print(f"outliers: {int(counts_ref.sum())} in all; volumes differing {int((differ > 0).sum())}, by at most "
          f"{int(differ.max())} voxel(s)")
    if differ.max() > 1 or (differ > 0).sum() > max(1, len(ours) // 100):
        ok = False
    check("quality index (relative)",
          relative([number(r["quality_index"]) for r in ours], [number(r["quality_index"]) for r in ref]), 1e-4)
    ref_z = np.load(ref_prefix + "_slice_z.npy")  # (T, Z)
    worst_ref = []
    for zs in ref_z:
        finite = zs[np.isfinite(zs)]
        worst_ref.append(finite[np.argmax(np.abs(finite))] if finite.size else np.nan)
    check("worst slice z (relative)", relative([number(r["slice_z_worst"]) for r in ours], worst_ref), 1e-4)
    if "fd" in ours[0] and "fd" in ref[0]:  # with --motion: FD and FIRMM's tally
        # rtfmri prints 6 significant digits: within 5e-6 of the exact value.
        check("FD (relative)", relative([number(r["fd"]) for r in ours], [number(r["fd"]) for r in ref]), 1e-5)
        import json
        usable = json.load(open(prefix + "_qa.json"))["usable"]
        for u in usable:
            column = f"usable_{u['fd_threshold_mm']:g}"
            kept = sum(int(float(r[column])) for r in ref)
            print(f"usable frames at {u['fd_threshold_mm']:g} mm: {u['frames']} (reference {kept})")
            if kept != u["frames"]:
                ok = False
    for name in ("mean", "sd", "tsnr"):
        got = read_nifti(f"{prefix}_qa_{name}.nii.gz").reshape(-1, order="F")[mask]
        want = np.load(f"{ref_prefix}_{name}.npy").reshape(-1, order="F")[mask]
        check(f"{name} map in the mask (relative)", relative(got, want), 1e-4)
    if len(sys.argv) > 4:
        check_iqms(prefix, ours, sys.argv[4], check)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
