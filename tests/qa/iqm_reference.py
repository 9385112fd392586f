#!/usr/bin/env python3
"""Independent numpy/scipy reference for MRIQC's functional image-quality metrics (IQMs) in rtfmri
(core/qa/image_quality.*, docs/algorithms/qa.md "MRIQC's image-quality metrics").

Written from the published definitions, vectorised, not from rtfmri's C++:

* EFC, FBER, SNR, GSR: MRIQC's documentation ("IQMs for functional images", mriqc.qc.anatomical and
  mriqc.qc.functional) and its FunctionalQC interface for how it applies them to the mean EPI: non-finite
  values and negative ones set to 0; EFC over every voxel of the image (Atkinson et al. 1997, normalised by
  the EFC of a constant image); FBER = median |x|^2 inside the mask / median outside (-1 when the latter is
  below 1e-3); SNR = median / (SD * sqrt(n / (n - 1))) inside the mask eroded once by scipy's
  generate_binary_structure(3, 2); GSR = (mean(ghost) - mean(other background)) / median(brain), the ghost
  being the mask np.roll-ed by N // 2 along x or y, outside the mask.
* FWHM: AFNI 3dFWHMx's classic first-difference estimate (its -help, "(Classic) METHOD"; Forman et al.
  1995): inside the mask, per axis, FWHM = sqrt(8 ln 2) * sqrt(-1 / (4 ln(1 - var(d) / (2 var(x))))) * voxel
  size, d the differences between neighbours both inside the mask, variances with n - 1; undefined (NaN)
  where 3dFWHMx reports a failure (fewer than 9 voxels or 6 differences, no variance, the log's argument
  outside (0, 1)). fwhm_avg: 3dFWHMx's combined value, the geometric mean of the axes estimated.
* DVARS std / vstd: nipype's compute_dvars as MRIQC calls it (Nichols 2013, "Notes on creating a
  standardized version of DVARS"): data scaled to median 1000 in the mask; robust SD = (P75 - P25) / 1.349
  with numpy's "lower" percentiles; voxels whose robust SD is not above 1e-7 left out; AR(1) by Yule-Walker
  (lag-1 over lag-0 autocovariance of the demeaned series); predicted SD of the differences
  sqrt(2 (1 - AR1)) * robust SD; std = RMS over voxels of the differences / mean predicted SD; vstd = RMS
  over voxels of each difference over its voxel's predicted SD. MRIQC's summary: the means over volumes 1..
* GCOR: AFNI's @compute_gcor (Saad et al. 2013): each masked voxel's demeaned series scaled to unit length
  (a constant one stays 0), averaged over the mask; GCOR = the squared length of that average = the mean of
  the whole correlation matrix, each voxel with itself included.

A voxel whose series holds a non-finite value is left out of DVARS and GCOR (rtfmri's rule; MRIQC has none).

Command line (Debian's /usr/bin/python3, which has numpy, scipy and nibabel)::

    /usr/bin/python3 tests/qa/iqm_reference.py BOLD.nii[.gz] MASK.nii.gz > out.json

prints the image measures of the mean over time of BOLD and the series measures of BOLD, the data held as
float32 (as rtfmri holds them) and computed in float64. Undefined values are null.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import scipy.ndimage as ndi


def prepare(image):
    """MRIQC's preparation of the mean EPI: non-finite and negative values to 0."""
    x = np.asarray(image, dtype=np.float64)
    return np.where(np.isfinite(x) & (x > 0), x, 0.0)


def efc(x):
    n = x.size
    b = math.sqrt(float(np.sum(x * x)))
    efc_max = n * (1.0 / math.sqrt(n)) * math.log(1.0 / math.sqrt(n)) if n > 0 else 0.0
    if b <= 0 or efc_max == 0:
        return math.nan
    return float(np.sum((x / b) * np.log((x + 1e-16) / b)) / efc_max)


def fber(x, mask):
    if not mask.any() or mask.all():
        return math.nan
    fg = np.median(np.abs(x[mask]) ** 2)
    bg = np.median(np.abs(x[~mask]) ** 2)
    return -1.0 if bg < 1e-3 else float(fg / bg)


def snr(x, mask):
    eroded = ndi.binary_erosion(mask, structure=ndi.generate_binary_structure(3, 2))
    v = x[eroded]
    n = v.size
    if n < 2 or v.std() == 0:
        return math.nan
    return float(np.median(v) / (v.std() * math.sqrt(n / (n - 1))))


def gsr(x, mask, axis):
    ghost = np.roll(mask, mask.shape[axis] // 2, axis=axis) & ~mask
    other = ~mask & ~ghost
    signal = np.median(x[mask]) if mask.any() else math.nan
    if not ghost.any() or not other.any() or not signal:
        return math.nan
    return float((x[ghost].mean() - x[other].mean()) / signal)


def fwhm(x, mask, zooms):
    out = [math.nan] * 3
    inside = x[mask]
    if inside.size < 9:
        return out
    var = inside.var(ddof=1)
    if not var > 0:
        return out
    for axis in range(3):
        n = x.shape[axis]
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis] = slice(0, n - 1)
        hi[axis] = slice(1, n)
        both = mask[tuple(lo)] & mask[tuple(hi)]
        d = (x[tuple(hi)] - x[tuple(lo)])[both]
        if d.size < 6:
            continue
        arg = 1.0 - 0.5 * d.var(ddof=1) / var
        if 0 < arg < 1:
            out[axis] = math.sqrt(8 * math.log(2)) * math.sqrt(-1.0 / (4 * math.log(arg))) * float(zooms[axis])
    return out


def image_measures(mean_epi, mask, zooms):
    x = prepare(mean_epi)
    q = {"efc": efc(x)}
    if not mask.any():
        return q
    q["fber"] = fber(x, mask)
    q["snr"] = snr(x, mask)
    q["gsr_x"] = gsr(x, mask, 0)
    q["gsr_y"] = gsr(x, mask, 1)
    fx, fy, fz = fwhm(x, mask, zooms)
    q.update(fwhm_x=fx, fwhm_y=fy, fwhm_z=fz)
    estimated = [f for f in (fx, fy, fz) if math.isfinite(f)]
    q["fwhm_avg"] = math.exp(np.mean(np.log(estimated))) if estimated else math.nan
    return q


def series_measures(data4d, mask):
    """DVARS std/vstd per volume (volume 0 NaN) and their means, and GCOR."""
    t = data4d.shape[3]
    q = {"dvars_std": [math.nan] * t, "dvars_vstd": [math.nan] * t}
    series = np.asarray(data4d[mask], dtype=np.float64)  # (V, T)
    series = series[np.isfinite(series).all(axis=1)]
    if t < 2 or series.shape[0] == 0:
        return q
    demeaned = series - series.mean(axis=1, keepdims=True)
    # GCOR (@compute_gcor): unit-length demeaned series, constant ones left at 0, averaged over the mask.
    length = np.sqrt((demeaned ** 2).sum(axis=1))
    unit = np.divide(demeaned, length[:, None], out=np.zeros_like(demeaned), where=length[:, None] > 0)
    g = unit.mean(axis=0)
    q["gcor"] = float(g @ g) if (length > 0).any() else math.nan
    # DVARS (nipype's compute_dvars).
    scaled = series / np.median(series) * 1000.0
    robust_sd = (np.percentile(scaled, 75, axis=1, method="lower")
                 - np.percentile(scaled, 25, axis=1, method="lower")) / 1.349
    scaled_demeaned = scaled - scaled.mean(axis=1, keepdims=True)
    r0 = (scaled_demeaned ** 2).sum(axis=1)
    r1 = (scaled_demeaned[:, 1:] * scaled_demeaned[:, :-1]).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ar1 = r1 / r0
        diff_sd = np.sqrt(2.0 * (1.0 - ar1)) * robust_sd
    keep = (robust_sd > 1e-7) & (diff_sd > 0)
    if not keep.any():
        return q
    diffs = np.diff(scaled[keep], axis=1)
    dvars_nstd = np.sqrt((diffs ** 2).mean(axis=0))
    std = dvars_nstd / diff_sd[keep].mean()
    vstd = np.sqrt(((diffs / diff_sd[keep][:, None]) ** 2).mean(axis=0))
    q["dvars_std"] = [math.nan] + std.tolist()
    q["dvars_vstd"] = [math.nan] + vstd.tolist()
    q["dvars_std_mean"] = float(std.mean())
    q["dvars_vstd_mean"] = float(vstd.mean())
    return q


def iqms(data4d, mask, zooms):
    """Every field of rtfmri's ImageQuality and SeriesQuality (NaN where undefined)."""
    names = ("efc", "fber", "snr", "gsr_x", "gsr_y", "fwhm_x", "fwhm_y", "fwhm_z", "fwhm_avg", "dvars_std_mean",
             "dvars_vstd_mean", "gcor")
    q = dict.fromkeys(names, math.nan)
    q.update(image_measures(np.asarray(data4d, dtype=np.float64).mean(axis=3), mask, zooms))
    q.update(series_measures(data4d, mask))
    return q


def _json_value(v):
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v if math.isfinite(v) else None


def main(argv):
    import nibabel as nib

    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    bold = nib.load(argv[1])
    data = np.asarray(bold.get_fdata(dtype=np.float32), dtype=np.float32)
    if data.ndim != 4:
        print(f"{argv[1]}: not a 4D series", file=sys.stderr)
        return 2
    mask = np.asarray(nib.load(argv[2]).dataobj)
    mask = mask.reshape(mask.shape[:3]) != 0
    q = iqms(data, mask, bold.header.get_zooms()[:3])
    json.dump({k: _json_value(v) for k, v in q.items()}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
