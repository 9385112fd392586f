#!/usr/bin/env python3
"""Independent numpy/scipy reference for rtfmri's live data-quality (QA) measures (issue 37).

Written from the published definitions, not from rtfmri's C++/OpenCL code, so that the device
results can be compared against it. Everything is computed in float64. Needs Python 3 with numpy,
scipy and nibabel (on the project machines: /usr/bin/python3).

Sources (each function's docstring says which one it follows and where a choice was ours):

* AFNI 3dToutcount and 3dTqual: the programs' -help text (R.W. Cox), and for the corner cases the
  help does not cover, AFNI's source (src/3dToutcount.c, src/3dTqual.c, src/cs_qmed.c in
  github.com/afni/afni) read for the behaviour only.
* MRIQC functional IQMs (tsnr = median of the voxel-wise mean/SD map): mriqc.readthedocs.io,
  "IQMs for functional images".
* FD: Power et al. 2012, NeuroImage 59:2142-2154, rotations as arc length on a 50 mm sphere.
  Censoring with neighbours: Power et al. 2012 (one frame back, two forward) and Power et al.
  2014, NeuroImage 84:320-341 (FD > 0.2 mm, drop kept segments shorter than 5 frames).
* FIRMM: Dosenbach et al. 2017, NeuroImage 161:80-93, and FIRMM's user documentation
  (github.com/FIRMMsoftware/firmm_docs, docs/FIRMM_USAGE.md, docs/FAQ.md).
* Respiration filter of the motion parameters: Fair et al. 2020, NeuroImage 208:116400, as
  implemented in the same lab's pipeline (github.com/DCAN-Labs/dcan_bold_processing,
  matlab_code/filtered_movement_regressors.m and release v4.1.0rc0 notes); low-pass variant after
  Gratton et al. 2020, NeuroImage 217:116866 (0.1 Hz = 6 breaths/min).

Command line::

    /usr/bin/python3 tests/qa/qa_reference.py BOLD.nii.gz --mask MASK.nii.gz --out OUT.tsv \\
        [--motion params.tsv --tr 0.8 --fd-filter notch] [--maps PREFIX]

writes one row per volume (volume, global_signal, outlier_fraction, quality_index, slice_z_min,
slice_z_max, and with --motion: fd and usable_<thr> flags), and with --maps PREFIX the arrays
PREFIX_mean.npy, PREFIX_sd.npy, PREFIX_tsnr.npy, PREFIX_slice_means.npy, PREFIX_slice_z.npy.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import scipy.optimize
import scipy.signal
import scipy.stats

# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _as_4d(data4d):
    data = np.asarray(data4d, dtype=np.float64)
    if data.ndim != 4:
        raise ValueError(f"expected a 4D array (x, y, z, t), got shape {data.shape}")
    return data


def _as_mask(mask, shape3):
    """Boolean 3D mask on the grid shape3; None means every voxel."""
    if mask is None:
        return np.ones(shape3, dtype=bool)
    m = np.asarray(mask)
    if m.ndim == 4 and m.shape[3] == 1:
        m = m[..., 0]
    if m.shape != tuple(shape3):
        raise ValueError(f"mask shape {m.shape} is not the data grid {tuple(shape3)}")
    if m.dtype == bool:
        return m.copy()
    m = m.astype(np.float64)
    return np.isfinite(m) & (m != 0)


def _masked_series(data4d, mask):
    """(V, T) float64 time series of the mask voxels (C order of the grid)."""
    data = _as_4d(data4d)
    m = _as_mask(mask, data.shape[:3])
    return data[m], m


# ---------------------------------------------------------------------------------------------
# tSNR
# ---------------------------------------------------------------------------------------------


def tsnr_maps(data4d, mask=None):
    """Voxel-wise temporal mean, SD and tSNR.

    Definition (MRIQC, "IQMs for functional images": tsnr is the median over the brain mask of the
    map of each voxel's temporal mean divided by its temporal standard deviation; the SD is numpy's
    ``std``, i.e. the population SD)::

        mean_v = (1/n) sum_t x_t(v)
        sd_v   = sqrt((1/n) sum_t (x_t(v) - mean_v)^2)          (ddof = 0)
        tsnr_v = mean_v / sd_v,   0 where sd_v == 0

    Two-pass in float64. A voxel with a non-finite value at any time gets NaN in all three maps
    (numpy propagation; rtfmri's docs/algorithms/qa.md states NaN for that case too). Voxels outside
    ``mask`` (when given) are 0 in all three maps. Returns (mean, sd, tsnr), each of the grid shape.
    MRIQC's scalar ``tsnr`` is ``np.median(tsnr[mask])``.
    """
    data = _as_4d(data4d)
    m = _as_mask(mask, data.shape[:3])
    mean = data.mean(axis=3)
    sd = np.sqrt(((data - mean[..., None]) ** 2).mean(axis=3))
    with np.errstate(divide="ignore", invalid="ignore"):
        tsnr = np.where(sd == 0, 0.0, mean / sd)
    tsnr = np.where(np.isnan(sd), np.nan, tsnr)
    for a in (mean, sd, tsnr):
        a[~m] = 0.0
    return mean, sd, tsnr


# ---------------------------------------------------------------------------------------------
# AFNI 3dToutcount
# ---------------------------------------------------------------------------------------------


def afni_alpha(n, qthr=0.001):
    """alpha = qginv(qthr/N): the upper-tail standard-normal quantile, scipy.stats.norm.isf(qthr/N)."""
    return float(scipy.stats.norm.isf(qthr / n))


def _l1_trend(y, polort):
    """Least-absolute-deviation fit of y on AFNI's 3dToutcount polynomial basis; returns the fit."""
    n = y.size
    tm = 0.5 * (n - 1.0)
    r1 = (np.arange(n) - tm) * (2.0 / n)
    basis = np.stack([r1 ** j for j in range(polort + 1)], axis=1)  # r0 = 1
    k = polort + 1
    # variables: beta (free, k), u >= 0 (n), v >= 0 (n);  y - X beta = u - v;  min sum(u + v)
    c = np.concatenate([np.zeros(k), np.ones(2 * n)])
    a_eq = np.hstack([basis, np.eye(n), -np.eye(n)])
    bounds = [(None, None)] * k + [(0, None)] * (2 * n)
    res = scipy.optimize.linprog(c, A_eq=a_eq, b_eq=y, bounds=bounds, method="highs")
    if not res.success:
        raise RuntimeError(f"L1 detrending failed: {res.message}")
    return basis @ res.x[:k]


def outlier_flags(data4d, mask=None, polort=0, qthr=0.001):
    """Per mask voxel and volume: is the value an outlier in AFNI 3dToutcount's sense? (V, T) bool.

    Definition (3dToutcount -help): "The trend and MAD of each time series are calculated.
    MAD = median absolute value of time series minus trend. Points that are 'far away' from the
    trend are called outliers, where 'far' is defined by alpha * sqrt(PI/2) * MAD,
    alpha = qginv(0.001/N) (inverse of reversed Gaussian CDF), N = length of time series."
    So value x_t of a voxel is an outlier iff

        |x_t - trend_t| > alpha * sqrt(pi/2) * MAD,   alpha = norm.isf(qthr / N),  qthr = 0.001

    (strict '>', as in AFNI's source: resid < -top || resid > top).

    * polort = 0 (AFNI's default): trend = the median of the series. Medians of an even number of
      values are the mean of the two middle values (AFNI's qmed_float, src/cs_qmed.c; = np.median).
    * polort = 1..3: AFNI detrends "with L1 regression, not L2" on the basis 1, r, r^2, r^3 with
      r(t) = (t - (N-1)/2) * 2/N. Here the L1 fit is an exact linear programme (scipy linprog,
      HiGHS). Where the L1 solution is not unique (it can happen with ties or few points) the
      residuals, and so the flags, may differ from AFNI's cl1_solve; polort 0 is exact.
    * MAD == 0 (e.g. a constant voxel, or more than half the values equal): AFNI skips the voxel
      (`if( fmad > 0.0 )` in 3dToutcount.c), so it has no outlier at any time point but still
      counts in the -fraction denominator. Same here; a voxel whose MAD is not finite (a NaN in its
      series; AFNI does not define this) is treated the same way (our choice).

    AFNI refuses series shorter than 5 points; this reference computes for any N >= 1 (useful for
    the live path on the first volumes), with the same formula. AFNI works in single precision;
    values within ~1e-6 relative of the threshold may be classified differently.
    """
    if polort not in (0, 1, 2, 3):
        raise ValueError("polort must be 0, 1, 2 or 3 (AFNI's limits)")
    x, _ = _masked_series(data4d, mask)
    n = x.shape[1]
    if polort == 0:
        trend = np.median(x, axis=1)[:, None]
    else:
        trend = np.empty_like(x)
        for i in range(x.shape[0]):
            if np.all(np.isfinite(x[i])):
                trend[i] = _l1_trend(x[i], polort)
            else:
                trend[i] = np.nan
    absr = np.abs(x - trend)
    mad = np.median(absr, axis=1)
    top = afni_alpha(n, qthr) * math.sqrt(0.5 * math.pi) * mad
    good = np.isfinite(mad) & (mad > 0)
    with np.errstate(invalid="ignore"):
        flags = (absr > top[:, None]) & good[:, None]
    return flags


def outlier_fraction(data4d, mask=None, polort=0, qthr=0.001):
    """Per volume, the fraction of mask voxels that are outliers: AFNI ``3dToutcount -fraction``.

    fraction_t = (number of mask voxels flagged at t by :func:`outlier_flags`) / (number of mask
    voxels). The denominator is every mask voxel, including those with MAD == 0 (AFNI divides the
    count by npass, the voxels that passed the mask). AFNI prints the fraction with 5 decimals
    ("%0.5f"); this returns it unrounded. Returns a (T,) float64 array. Note that the value at
    volume t depends on the whole series given (the trend and MAD are per series).
    """
    flags = outlier_flags(data4d, mask, polort=polort, qthr=qthr)
    nvox = flags.shape[0]
    if nvox == 0:
        return np.full(flags.shape[1], np.nan)
    return flags.sum(axis=0) / float(nvox)


# ---------------------------------------------------------------------------------------------
# AFNI 3dTqual
# ---------------------------------------------------------------------------------------------


def quality_index(data4d, mask=None, median_dtype=None):
    """Per volume, AFNI 3dTqual's default quality index: 1 - Spearman(volume, median volume).

    Definition (3dTqual -help, -spearman, the default): "Quality index is 1 minus the Spearman
    (rank) correlation coefficient of each sub-brick with the median sub-brick." The median
    sub-brick is the voxel-wise median over all volumes (even count: mean of the two middle
    values). Ranks with ties get the average rank (scipy.stats.rankdata 'average', as AFNI's
    rank_order_float); Spearman = Pearson correlation of the two rank vectors. Values: 0 for a
    volume ranked like the median volume, up to 2.

    Corner cases (from AFNI's source): a volume that is constant over the voxels (rank variance 0)
    gets correlation 0, i.e. index 1; if the median volume itself is constant the index is NaN here
    (AFNI divides by zero). 3dTqual has no -mask option (it offers -automask/-clip, which keep the
    voxels whose median value is high); here the voxels are those of ``mask`` (all voxels when
    None), minus any voxel with a non-finite value in any volume (our choice, so that every volume
    is correlated over the same voxels). With ``median_dtype`` (np.float32: AFNI's and rtfmri's working precision)
    the median volume is rounded to it, as a program holding float32 data computes it: the mean of two middle values
    then rounds, which can tie or untie voxels of scaled integer data. Returns a (T,) float64 array.
    """
    x, _ = _masked_series(data4d, mask)
    x = x[np.all(np.isfinite(x), axis=1)]
    t = x.shape[1]
    if x.shape[0] < 2:
        return np.full(t, np.nan)
    med = np.median(x, axis=1)
    if median_dtype is not None:
        med = med.astype(median_dtype).astype(np.float64)
    rm = scipy.stats.rankdata(med)
    rm = rm - rm.mean()
    sm = float(np.dot(rm, rm))
    out = np.empty(t)
    for i in range(t):
        r = scipy.stats.rankdata(x[:, i])
        r = r - r.mean()
        sr = float(np.dot(r, r))
        if sm <= 0:
            out[i] = np.nan
        elif sr <= 0:
            out[i] = 1.0
        else:
            out[i] = 1.0 - float(np.dot(r, rm)) / math.sqrt(sr * sm)
    return out


# ---------------------------------------------------------------------------------------------
# slice means, global signal, slice z-scores
# ---------------------------------------------------------------------------------------------


def _slice_sums(data4d, mask):
    data = _as_4d(data4d)
    m = _as_mask(mask, data.shape[:3])
    ok = m[..., None] & np.isfinite(data)
    sums = np.where(ok, data, 0.0).sum(axis=(0, 1))  # (z, t)
    counts = ok.sum(axis=(0, 1))
    return sums, counts


def slice_means(data4d, mask=None):
    """Per volume and slice (the grid's third axis), the mean of the mask voxels whose value is finite.

    Returns a (T, Z) float64 array, NaN where a slice has no such voxel. This is the input of the
    slice drop-out/spike z-scores (rtfmri's definition, docs/algorithms/qa.md).
    """
    sums, counts = _slice_sums(data4d, mask)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means.T.copy()


def global_signal(data4d, mask=None):
    """Per volume, the mean over every mask voxel with a finite value (NaN where none). (T,) array."""
    sums, counts = _slice_sums(data4d, mask)
    s = sums.sum(axis=0)
    c = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


MAD_TO_SD = 1.4826


def slice_zscores(slice_means_tz, history=30, min_history=5, floor=0.0):
    """Robust z of each slice's mean against the same slice in the volumes before (rtfmri's own rule).

    This is rtfmri's definition for slice drop-out and spike detection (issue 37), not a published
    one. For volume t and slice z, let P be the finite values of slice z's mean in the volumes
    max(0, t - history) .. t - 1 (at most ``history`` volumes, never volume t itself), and m the
    mean at t::

        med = median(P)                      (even count: mean of the two middle values)
        MAD = median(|P - med|)
        s   = 1.4826 * MAD                                        (floor = 0, the default)
        s   = max(1.4826 * MAD, floor * R * |med|)                (floor > 0)
        z   = (m - med) / s

    where R = the median, over the slices that have at least ``min_history`` finite past values
    and med != 0 at this t, of each slice's relative spread 1.4826 * MAD / |med|. floor = 0.5 with
    history = 60, min_history = 10 is the rule docs/algorithms/qa.md states (commit 50420ef:
    "s = max(1.4826 MAD, 1/2 median over slices of (1.4826 MAD / median) * median)"); the defaults
    here are the plain rule of the brief (history 30, min_history 5, no floor).

    z is NaN while P has fewer than ``min_history`` values or m is not finite; where s == 0, z is
    0 if m == med and +inf / -inf otherwise (the sign of m - med). Input (T, Z) as returned by
    :func:`slice_means`; returns (T, Z) float64.

    Caveat (measured in the self-test): without the floor and with few past volumes the MAD is a
    noisy scale estimate, so z is heavy-tailed. On clean Gaussian data (10 slices, 20 seeds) max |z|
    reached 5-23 over volumes 5..29 but stayed within ~3-6 once 30 volumes of history were there.
    """
    sm = np.asarray(slice_means_tz, dtype=np.float64)
    if sm.ndim != 2:
        raise ValueError("slice_means must be (T, Z)")
    if history < 1 or min_history < 1 or min_history > history:
        raise ValueError("need 1 <= min_history <= history")
    if floor < 0:
        raise ValueError("floor must be >= 0")
    t_n, z_n = sm.shape
    z = np.full((t_n, z_n), np.nan)
    for t in range(t_n):
        past = sm[max(0, t - history):t]
        med = np.full(z_n, np.nan)
        sd = np.full(z_n, np.nan)
        for k in range(z_n):
            p = past[:, k]
            p = p[np.isfinite(p)]
            if p.size >= min_history:
                med[k] = float(np.median(p))
                sd[k] = MAD_TO_SD * float(np.median(np.abs(p - med[k])))
        if floor > 0:
            ok = np.isfinite(med) & (med != 0)
            if ok.any():
                rel = float(np.median(sd[ok] / np.abs(med[ok])))
                sd = np.maximum(sd, floor * rel * np.abs(med))
        for k in range(z_n):
            m = sm[t, k]
            if not np.isfinite(med[k]) or not np.isfinite(m):
                continue
            if sd[k] > 0:
                z[t, k] = (m - med[k]) / sd[k]
            elif m == med[k]:
                z[t, k] = 0.0
            else:
                z[t, k] = math.copysign(math.inf, m - med[k])
    return z


# ---------------------------------------------------------------------------------------------
# FD (Power 2012)
# ---------------------------------------------------------------------------------------------


def _as_params(params):
    p = np.asarray(params, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 6:
        raise ValueError(f"motion parameters must be (T, 6), got {p.shape}")
    return p


def framewise_displacement(params, radius=50.0, rotations="degrees"):
    """Framewise displacement of Power et al. 2012 (NeuroImage 59:2142), in mm.

    ``params`` is (T, 6): columns 0-2 the translations in mm, columns 3-5 the rotations in
    ``rotations`` units ('degrees' or 'radians'); reorder first if your tool writes rotations first
    (FSL mcflirt) or in AFNI's (roll, pitch, yaw, dS, dL, dP) order::

        FD_t = |dx_t| + |dy_t| + |dz_t| + radius * (|da_t| + |db_t| + |dg_t|),   d = x_t - x_(t-1)

    with the rotations in radians, i.e. converted to the arc length on a sphere of ``radius`` mm
    (Power: 50 mm, "approximately the mean distance from the cerebral cortex to the center of the
    head"; FIRMM's documentation also assumes 50 mm). FD_0 = 0. Returns (T,) float64.
    """
    p = _as_params(params)
    if rotations == "degrees":
        rot_scale = math.pi / 180.0
    elif rotations == "radians":
        rot_scale = 1.0
    else:
        raise ValueError("rotations must be 'degrees' or 'radians'")
    fd = np.zeros(p.shape[0])
    if p.shape[0] > 1:
        d = np.abs(np.diff(p, axis=0))
        fd[1:] = d[:, :3].sum(axis=1) + radius * rot_scale * d[:, 3:].sum(axis=1)
    return fd


# ---------------------------------------------------------------------------------------------
# respiration filter of the motion parameters (Fair et al. 2020)
# ---------------------------------------------------------------------------------------------

#: ABCD's respiration band in breaths/min used by Fair et al. 2020 (0.3097-0.4288 Hz), the value
#: the DCAN pipeline's release notes quote for ABCD.
ABCD_BAND_BPM = (18.582, 25.726)


def aliased_frequency(f_hz, tr):
    """Frequency (Hz) at which a component of f_hz appears when sampled every tr seconds.

    fa = |f - floor((f + fNy) / fs) * fs|, fs = 1/tr, fNy = fs/2: the folding used by Fair et al.
    2020's filter design (dcan_bold_processing, filtered_movement_regressors.m) so that the notch
    also works when the respiration rate is above the Nyquist frequency (TR >= ~1.2 s).
    """
    fs = 1.0 / tr
    fny = fs / 2.0
    f = np.asarray(f_hz, dtype=np.float64)
    return np.abs(f - np.floor((f + fny) / fs) * fs)


def firmm_filter(params, tr, kind="none", band_bpm=ABCD_BAND_BPM, cutoff_bpm=6.0, order=4,
                 zero_phase=True):
    """Respiration filter of the motion parameters before FD (Fair et al. 2020, NeuroImage 208:116400).

    Filters each of the (T, 6) columns independently and returns the filtered (T, 6) array; compute
    FD from the result with :func:`framewise_displacement`. The filter is linear, so filtering
    rotations in degrees or as arc length in mm gives the same FD.

    kind = 'none'
        returns a copy.
    kind = 'notch' (band-stop; Fair et al. 2020 and their pipeline's implementation)
        band_bpm = (min, max) respiration rate in breaths/min (default ABCD's 18.582-25.726, i.e.
        0.31-0.43 Hz; FIRMM lets the user set "Min/Max Breaths per Minute"). Both edges are
        converted to Hz, folded by :func:`aliased_frequency`, normalised by the Nyquist frequency:
        W = fa / fNy; the centre is W0 = mean(W), the bandwidth BW = |W_max - W_min|. The filter is
        the 2nd-order IIR notch of MATLAB's iirnotch(W0, BW) (-3 dB bandwidth), which is exactly
        scipy.signal.iirnotch(W0, Q=W0/BW). It is applied ``order // 4`` times with zero-phase
        forward-backward filtering (filtfilt; each pass is 2nd order and filtfilt doubles the
        order), at least once. This is the DCAN pipeline's default (motion_filter_order = 4,
        option 'FiltFilt_all' -> one filtfilt pass, release v4.1.0rc0; earlier releases applied it
        twice, effectively 8th order). filtfilt pads like MATLAB: odd extension of
        3 * (max(len(a), len(b)) - 1) samples.
    kind = 'lowpass' (for single-band data; Gratton et al. 2020, NeuroImage 217:116866)
        cutoff_bpm (default 6 breaths/min = 0.1 Hz, Gratton et al.'s value) folded the same way;
        Butterworth low-pass of order ``order // 2`` (at least 1) applied with filtfilt, so the
        effective order is ``order``. Fair et al. do not give a low-pass design (the DCAN code's
        'lp' option designs a fir1 filter but applies it zero times), so THIS DESIGN IS OUR CHOICE,
        in the style of XCP-D's documented 'lp' motion filter (Butterworth, cutoff in bpm).

    zero_phase=False applies the same filters causally (scipy.signal.lfilter, the pipeline's
    'Filt_all' option): two forward passes for each filtfilt pass of the zero-phase variant, so
    the magnitude response is the same; this is what a strictly causal live filter would do. FIRMM's real-time implementation is not
    documented in enough detail to say which it uses; the published offline design is zero-phase.

    A series too short for filtfilt's padding (T <= 3 * (max(len(a), len(b)) - 1)) is returned
    unfiltered (a copy). Raises ValueError if a folded frequency lands on 0 or the Nyquist
    frequency (no notch or cutoff can be designed there).
    """
    p = _as_params(params).copy()
    if kind == "none":
        return p
    if tr <= 0:
        raise ValueError("tr must be positive")
    fny = 0.5 / tr
    if kind == "notch":
        lo, hi = band_bpm
        if not (0 < lo < hi):
            raise ValueError("band_bpm must be (min, max) with 0 < min < max")
        w = aliased_frequency(np.array([lo, hi]) / 60.0, tr) / fny
        w0 = float(np.mean(w))
        bw = float(abs(w[1] - w[0]))
        if not (0 < w0 < 1) or bw <= 0:
            raise ValueError(f"cannot design a notch at normalised frequency {w0} width {bw}")
        b, a = scipy.signal.iirnotch(w0, w0 / bw)
        passes = max(1, order // 4)
    elif kind == "lowpass":
        wn = float(aliased_frequency(cutoff_bpm / 60.0, tr)) / fny
        if not (0 < wn < 1):
            raise ValueError(f"cannot design a low-pass at normalised frequency {wn}")
        b, a = scipy.signal.butter(max(1, order // 2), wn, btype="low")
        passes = 1
    else:
        raise ValueError("kind must be 'none', 'notch' or 'lowpass'")
    padlen = 3 * (max(len(a), len(b)) - 1)
    if p.shape[0] <= padlen:
        return p
    for _ in range(passes):
        if zero_phase:
            p = scipy.signal.filtfilt(b, a, p, axis=0, padtype="odd", padlen=padlen)
        else:
            p = scipy.signal.lfilter(b, a, scipy.signal.lfilter(b, a, p, axis=0), axis=0)
    return p


# ---------------------------------------------------------------------------------------------
# FIRMM usable-data tally and prediction
# ---------------------------------------------------------------------------------------------

_RULES = {
    # FIRMM's documented tally: "good" time = TR * (count of frames with FD < threshold); nothing
    # else is removed.
    "firmm": dict(n_before=0, n_after=0, min_segment=1, skip=0, keep_equal=False),
    # Power et al. 2012/2014: censor FD > threshold and 1 frame before / 2 after, then drop kept
    # segments shorter than 5 frames.
    "power2014": dict(n_before=1, n_after=2, min_segment=5, skip=0, keep_equal=True),
}


def censor_mask(fd, threshold, rule="firmm", **overrides):
    """Frames kept (True) after censoring at ``threshold`` (mm) by ``rule``; (T,) bool.

    Steps, in order: (1) flag frames with FD > threshold (FD >= threshold when keep_equal is
    False); (2) also flag ``n_before`` frames before and ``n_after`` after each flagged frame;
    (3) flag any run of unflagged frames shorter than ``min_segment``; (4) flag the first ``skip``
    frames. Non-finite FD is flagged. Rules ('firmm', 'power2014') give the defaults, any keyword
    overrides them; see :func:`usable_frames`.
    """
    if rule not in _RULES:
        raise ValueError(f"rule must be one of {sorted(_RULES)}")
    cfg = dict(_RULES[rule])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown censoring options {sorted(unknown)}")
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    fd = np.asarray(fd, dtype=np.float64)
    n = fd.size
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(fd) | ((fd > threshold) if cfg["keep_equal"] else (fd >= threshold))
    flagged = bad.copy()
    for i in np.flatnonzero(bad):
        flagged[max(0, i - cfg["n_before"]):min(n, i + cfg["n_after"] + 1)] = True
    keep = ~flagged
    if cfg["min_segment"] > 1:
        i = 0
        while i < n:
            if keep[i]:
                j = i
                while j < n and keep[j]:
                    j += 1
                if j - i < cfg["min_segment"]:
                    keep[i:j] = False
                i = j
            else:
                i += 1
    keep[:cfg["skip"]] = False
    return keep


def usable_frames(fd, tr, thresholds=(0.2, 0.3, 0.5), rule="firmm", **overrides):
    """FIRMM's tally of low-motion data: per threshold, frames kept and their minutes.

    FIRMM (Dosenbach et al. 2017; FIRMM docs, FIRMM_USAGE.md, "Summary table") reports for three
    FD thresholds the "good" time "based on TR*(frame count < low, middle, and high FD
    thresholds)" (defaults there 0.2, 0.3 and 0.4 mm; issue 37 asks for 0.2, 0.3, 0.5) and the
    numbers of good/bad frames since the start. Nothing in FIRMM's documentation removes
    neighbours of a high-motion frame or short segments, so rule='firmm' (the default) keeps
    exactly the frames with FD < threshold (strict), the first frame (FD 0) included.

    rule='power2014' is the offline censoring of Power et al. 2012/2014 (FD > threshold censored
    together with 1 frame before and 2 after; kept segments shorter than 5 frames censored). The
    keywords n_before, n_after, min_segment, skip, keep_equal override either rule (e.g. the DCAN
    pipeline's offline rule is rule='firmm', keep_equal=True, min_segment=5, skip=frames in its
    skip-seconds).

    Returns {threshold: {'keep': (T,) bool, 'frames': int, 'minutes': frames * tr / 60}}.
    """
    out = {}
    for thr in thresholds:
        keep = censor_mask(fd, thr, rule=rule, **overrides)
        k = int(keep.sum())
        out[thr] = {"keep": keep, "frames": k, "minutes": k * tr / 60.0}
    return out


def predict_minutes_to_target(fd, tr, target_minutes=12.5, threshold=0.2, rule="firmm",
                              per_frame=False, **overrides):
    """Scan minutes still needed to reach ``target_minutes`` of usable data (per-run extrapolation).

    FIRMM shows a "Predicted Duration to Scan Criteria" table that "uses the data that has been
    collected so far to predict how long it will take to reach criteria" for each threshold
    (criterion 12.5 min by default; FIRMM docs). FIRMM's documentation does not give the formula,
    and we could not read Dosenbach et al. 2017's methods text, so THIS IS THE SIMPLEST PER-RUN
    VERSION, labelled as such: the run's usable fraction so far is assumed to hold for the rest::

        elapsed = T * tr / 60,   usable = (kept frames) * tr / 60            (minutes)
        remaining = 0                                   if usable >= target
                  = inf                                 if usable == 0
                  = (target - usable) * elapsed / usable otherwise

    (the missing usable minutes divided by the usable minutes gained per scanned minute).
    With per_frame=True, returns a (T,) array whose entry t is the prediction made after frames
    0..t, each prefix censored as if the run ended there (what a live tally shows at that TR).
    """
    fd = np.asarray(fd, dtype=np.float64)

    def one(prefix):
        n = prefix.size
        if n == 0:
            return math.inf
        keep = censor_mask(prefix, threshold, rule=rule, **overrides)
        usable = keep.sum() * tr / 60.0
        if usable >= target_minutes:
            return 0.0
        if usable == 0:
            return math.inf
        elapsed = n * tr / 60.0
        return (target_minutes - usable) * elapsed / usable

    if per_frame:
        return np.array([one(fd[:t + 1]) for t in range(fd.size)])
    return one(fd)


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------


def load_motion(path):
    """Read a (T, 6) motion table: whitespace/comma/tab separated, '#' comments, optional header."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.replace(",", " ").split()
            try:
                rows.append([float(v) for v in fields])
            except ValueError:
                if rows:
                    raise ValueError(f"{path}: non-numeric row after data: {line!r}") from None
                continue  # header
    return _as_params(np.array(rows))


def _fmt(v):
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def _nanmin_max(z):
    zmin = np.full(z.shape[0], np.nan)
    zmax = np.full(z.shape[0], np.nan)
    for t in range(z.shape[0]):
        row = z[t][~np.isnan(z[t])]
        if row.size:
            zmin[t], zmax[t] = row.min(), row.max()
    return zmin, zmax


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bold", help="4D NIfTI (.nii or .nii.gz)")
    ap.add_argument("--mask", help="3D NIfTI mask on the same grid (nonzero = in); default all voxels")
    ap.add_argument("--out", required=True, help="output TSV, one row per volume")
    ap.add_argument("--motion", help="(T, 6) motion parameters: 3 translations (mm), 3 rotations")
    ap.add_argument("--rotations", choices=["degrees", "radians"], default="degrees")
    ap.add_argument("--radius", type=float, default=50.0, help="head radius for FD (mm)")
    ap.add_argument("--tr", type=float, help="TR in seconds (default: the NIfTI header)")
    ap.add_argument("--fd-filter", choices=["none", "notch", "lowpass"], default="none")
    ap.add_argument("--causal", action="store_true",
                    help="filter the motion causally (two forward passes, as a live filter must) instead of filtfilt")
    ap.add_argument("--band-bpm", type=float, nargs=2, default=list(ABCD_BAND_BPM))
    ap.add_argument("--cutoff-bpm", type=float, default=6.0)
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.2, 0.3, 0.5])
    ap.add_argument("--censor-rule", choices=sorted(_RULES), default="firmm")
    ap.add_argument("--polort", type=int, default=0)
    ap.add_argument("--history", type=int, default=30)
    ap.add_argument("--min-history", type=int, default=5)
    ap.add_argument("--z-floor", type=float, default=0.0, help="slice z scale floor (0.5: docs/algorithms/qa.md)")
    ap.add_argument("--float32", action="store_true",
                    help="hold the data as float32 (as rtfmri and AFNI do: scaled integers rounded once), the median "
                         "volume of the quality index too")
    ap.add_argument("--maps", metavar="PREFIX", help="write PREFIX_{mean,sd,tsnr,slice_means,slice_z}.npy")
    args = ap.parse_args(argv)

    import nibabel as nib

    img = nib.load(args.bold)
    data = np.asanyarray(img.dataobj).astype(np.float64)
    if args.float32:
        data = data.astype(np.float32).astype(np.float64)
    if data.ndim != 4:
        ap.error(f"{args.bold} is not 4D (shape {data.shape})")
    mask = None
    if args.mask:
        mask = np.asanyarray(nib.load(args.mask).dataobj)
        try:
            mask = _as_mask(mask, data.shape[:3])
        except ValueError as e:
            ap.error(str(e))
    t_n = data.shape[3]

    gs = global_signal(data, mask)
    frac = outlier_fraction(data, mask, polort=args.polort)
    qi = quality_index(data, mask, median_dtype=np.float32 if args.float32 else None)
    sm = slice_means(data, mask)
    sz = slice_zscores(sm, history=args.history, min_history=args.min_history, floor=args.z_floor)
    zmin, zmax = _nanmin_max(sz)

    cols = ["volume", "global_signal", "outlier_fraction", "quality_index", "slice_z_min", "slice_z_max"]
    table = [np.arange(t_n), gs, frac, qi, zmin, zmax]
    if args.motion:
        tr = args.tr
        if tr is None:
            zooms = img.header.get_zooms()
            tr = float(zooms[3]) if len(zooms) > 3 else 0.0
            unit = img.header.get_xyzt_units()[1]
            tr = tr / 1000.0 if unit == "msec" else tr / 1e6 if unit == "usec" else tr
            if tr <= 0:
                ap.error("no TR in the header: give --tr")
        params = load_motion(args.motion)
        if params.shape[0] != t_n:
            ap.error(f"motion has {params.shape[0]} rows, the BOLD {t_n} volumes")
        params = firmm_filter(params, tr, kind=args.fd_filter, band_bpm=tuple(args.band_bpm),
                              cutoff_bpm=args.cutoff_bpm, zero_phase=not args.causal)
        fd = framewise_displacement(params, radius=args.radius, rotations=args.rotations)
        tally = usable_frames(fd, tr, thresholds=args.thresholds, rule=args.censor_rule)
        cols.append("fd")
        table.append(fd)
        for thr in args.thresholds:
            cols.append(f"usable_{thr:g}")
            table.append(tally[thr]["keep"])

    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\t".join(cols) + "\n")
        for t in range(t_n):
            f.write("\t".join(_fmt(col[t]) for col in table) + "\n")

    if args.maps:
        mean, sd, tsnr = tsnr_maps(data, mask)
        for name, arr in (("mean", mean), ("sd", sd), ("tsnr", tsnr), ("slice_means", sm), ("slice_z", sz)):
            np.save(f"{args.maps}_{name}.npy", arr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
