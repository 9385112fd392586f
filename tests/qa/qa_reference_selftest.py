#!/usr/bin/env python3
"""Self-test of tests/qa/qa_reference.py on synthetic data with known answers, then on real BOLD.

Run from the repository root:  /usr/bin/python3 tests/qa/qa_reference_selftest.py   (exit 0 = pass)

Each check is against a value computed by hand from the published definition (written out in the
comments), or against an independent formulation (a plain per-voxel loop, scipy.stats.spearmanr).
Real BOLD (nitime's fmri1/fmri2, the pyneal test series of the extra data) is only checked to run and give
finite values in range; it is skipped with a message where absent.
"""

from __future__ import annotations

import glob
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.stats

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import qa_reference as qa  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
FAILURES = []


def check(cond, what):
    if cond:
        print(f"  ok    {what}")
    else:
        print(f"  FAIL  {what}")
        FAILURES.append(what)


def close(a, b, tol=1e-12):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


# ---------------------------------------------------------------------------------------------


def test_tsnr():
    print("tsnr_maps")
    d = np.zeros((2, 1, 1, 4))
    d[0, 0, 0] = [1, 2, 3, 4]  # mean 2.5, population var ((1.5^2+0.5^2)*2)/4 = 1.25
    d[1, 0, 0] = 7.0  # constant: sd 0 -> tsnr 0
    mean, sd, tsnr = qa.tsnr_maps(d)
    check(close(mean[:, 0, 0], [2.5, 7.0]), "mean by hand")
    check(close(sd[:, 0, 0], [math.sqrt(1.25), 0.0]), "population SD (ddof 0) by hand")
    check(close(tsnr[:, 0, 0], [2.5 / math.sqrt(1.25), 0.0]), "tsnr = mean/sd, 0 where sd == 0")
    mask = np.array([[[True]], [[False]]])
    mean, sd, tsnr = qa.tsnr_maps(d, mask)
    check(mean[1, 0, 0] == 0 and tsnr[1, 0, 0] == 0, "outside the mask: 0")
    d[0, 0, 0, 2] = np.nan
    _, _, tsnr = qa.tsnr_maps(d)
    check(np.isnan(tsnr[0, 0, 0]), "a non-finite value gives NaN")


def naive_outliers(series, qthr=0.001):
    """Straight from the 3dToutcount help text, one voxel at a time, sorted-list medians."""
    n = len(series)

    def med(v):
        s = sorted(v)
        return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])

    m = med(series)
    mad = med([abs(v - m) for v in series])
    if not mad > 0:
        return [False] * n
    alpha = scipy.stats.norm.isf(qthr / n)
    return [abs(v - m) > alpha * math.sqrt(math.pi / 2) * mad for v in series]


def test_outliers():
    print("outlier_flags / outlier_fraction (3dToutcount)")
    rng = np.random.default_rng(1234)
    shape = (6, 6, 4, 60)
    d = 100.0 + rng.standard_normal(shape)
    spike_vox, spike_t = (2, 3, 1), 37
    d[spike_vox + (spike_t,)] += 30.0
    flags = qa.outlier_flags(d)
    row = np.ravel_multi_index(spike_vox, shape[:3])
    check(flags[row, spike_t] and flags[row].sum() == 1,
          "injected spike is an outlier at its volume and nowhere else in that voxel")
    frac = qa.outlier_fraction(d)
    check(close(frac, flags.sum(0) / 144.0), "fraction = outlier count / mask voxels (144)")
    check(frac[spike_t] >= 1 / 144.0, "spike volume has a nonzero fraction")

    # independent per-voxel loop on data with a few spikes
    d2 = 50.0 + rng.standard_normal((4, 3, 2, 25))
    d2[0, 0, 0, 3] += 20
    d2[3, 2, 1, 24] -= 15
    d2[1, 1, 1, :] = 9.0  # MAD 0
    flags2 = qa.outlier_flags(d2)
    ref = np.array([naive_outliers(list(s)) for s in d2.reshape(-1, 25)])
    check(np.array_equal(flags2, ref), "matches a naive per-voxel loop (incl. a MAD == 0 voxel)")

    # threshold exactness, N = 20: core values +-0.5 .. +-4.5 plus two extremes; median 0,
    # |dev| sorted: 0.5,0.5,1,1,...,2.5,2.5 | 3,3,... -> MAD = (2.5 + 3)/2 = 2.75
    n = 20
    thr = qa.afni_alpha(n) * math.sqrt(0.5 * math.pi) * 2.75
    core = [s * 0.5 * k for k in range(1, 10) for s in (1, -1)]
    for value, expect in ((thr * (1 + 1e-9), True), (thr, False), (thr * (1 - 1e-9), False)):
        series = np.array(core + [value, -100.0]).reshape(1, 1, 1, n)
        f = qa.outlier_flags(series)[0]
        check(f[18] == expect and f[19], f"value {value / thr:.9f} x threshold -> outlier {expect} (strict >)")
    check(abs(qa.afni_alpha(20) - 3.890591886) < 1e-8, "alpha = norm.isf(0.001/20) = 3.8906")

    # even-length median = mean of the two middle values (AFNI qmed_float):
    # [0,0,0,0,2,2,2,9]: median 1, |dev| = 1,1,1,1,1,1,1,8 -> MAD 1 -> 9 is an outlier.
    # (A lower-median convention would give median 0 and MAD 0: no outlier at all.)
    s = np.array([0, 0, 0, 0, 2, 2, 2, 9], float).reshape(1, 1, 1, 8)
    check(list(qa.outlier_flags(s)[0]) == [False] * 7 + [True], "even N: median averages the middle pair")

    # MAD == 0 voxel: never an outlier, but counted in the denominator
    d3 = np.zeros((2, 1, 1, 30))
    d3[0, 0, 0] = 10 + rng.standard_normal(30)
    d3[0, 0, 0, 10] += 25
    d3[1, 0, 0] = 5.0
    d3[1, 0, 0, 10] = 50.0  # 29 equal values: MAD 0
    frac3 = qa.outlier_fraction(d3)
    check(frac3[10] == 0.5 and frac3.sum() == 0.5, "MAD == 0 voxel: no outlier, still in the denominator")

    # polort 1 (L1 detrending): steep ramp + small noise + spike at 20
    t = np.arange(60, dtype=float)
    ramp = (3.0 * t + 0.1 * rng.standard_normal(60)).reshape(1, 1, 1, 60)
    ramp[0, 0, 0, 20] += 5.0
    f1 = qa.outlier_flags(ramp, polort=1)[0]
    check(f1[20] and f1.sum() == 1, "polort 1: spike on a ramp flagged exactly at its volume")
    f0 = qa.outlier_flags(ramp, polort=0)[0]
    check(not f0[20], "polort 0 on the same ramp does not see it (MAD dominated by the trend)")


def test_quality_index():
    print("quality_index (3dTqual)")
    rng = np.random.default_rng(7)
    base = rng.uniform(100, 200, size=(5, 4, 3))
    lo1, lo2, hi1, hi2 = (rng.uniform(1, 10, size=base.shape) for _ in range(4))
    # voxel-wise median of these 5 volumes is exactly `base` (2 below, 2 above)
    d = np.stack([base - lo1, base + hi1, base, base - lo2, base + hi2], axis=3)
    qi = qa.quality_index(d)
    check(abs(qi[2]) < 1e-12, "a volume equal to the median volume has index 0")
    med = np.median(d, axis=3).ravel()
    ref = [1 - scipy.stats.spearmanr(d[..., i].ravel(), med)[0] for i in range(5)]
    check(close(qi, ref, 1e-12), "equals 1 - scipy.stats.spearmanr(volume, median volume)")
    # reversed ranks -> correlation -1 -> index 2; a constant volume -> index 1 (AFNI)
    rev = np.stack([base, base, base, 300 - base, np.full(base.shape, 3.0)], axis=3)
    qi2 = qa.quality_index(rev)
    check(abs(qi2[3] - 2) < 1e-12 and qi2[4] == 1.0, "reversed ranks -> 2, constant volume -> 1")
    # ties get average ranks (check against spearmanr on tied data)
    tied = np.round(d / 20.0)
    medt = np.median(tied, axis=3).ravel()
    reft = [1 - scipy.stats.spearmanr(tied[..., i].ravel(), medt)[0] for i in range(5)]
    check(close(qa.quality_index(tied), reft, 1e-12), "ties: average ranks, as spearmanr")
    mask = np.zeros(base.shape, bool)
    mask[:3] = True
    medm = np.median(d[mask], axis=1)
    refm = [1 - scipy.stats.spearmanr(d[mask][:, i], medm)[0] for i in range(5)]
    check(close(qa.quality_index(d, mask), refm, 1e-12), "mask restricts the voxels")


def test_slices():
    print("slice_means / global_signal / slice_zscores")
    d = np.arange(2 * 2 * 3 * 2, dtype=float).reshape(2, 2, 3, 2)
    mask = np.ones((2, 2, 3), bool)
    mask[0, 0, 0] = False
    d[1, 1, 1, 0] = np.nan
    mask[:, :, 2] = False  # empty slice -> NaN
    sm = qa.slice_means(d, mask)
    # slice 0, t 0: voxels (0,1),(1,0),(1,1) -> d[...,0,0] values
    v = d[:, :, 0, 0]
    check(close(sm[0, 0], (v[0, 1] + v[1, 0] + v[1, 1]) / 3), "slice mean skips masked-out voxels")
    v = d[:, :, 1, 0]
    check(close(sm[0, 1], (v[0, 0] + v[0, 1] + v[1, 0]) / 3), "slice mean skips non-finite voxels")
    check(np.isnan(sm[0, 2]) and sm.shape == (2, 3), "empty slice -> NaN; shape (T, Z)")
    gs = qa.global_signal(d, mask)
    allv = [d[i, j, k, 1] for i in range(2) for j in range(2) for k in range(2) if mask[i, j, k]]
    check(close(gs[1], sum(allv) / len(allv)), "global signal = mean over every finite mask voxel")

    # hand z: history [10, 12, 11, 13, 9] -> median 11, |dev| 1,1,0,2,2 -> MAD 1
    s = np.array([[10.0], [12.0], [11.0], [13.0], [9.0], [15.0], [11.0]])
    z = qa.slice_zscores(s, history=30, min_history=5)
    check(np.all(np.isnan(z[:5, 0])), "NaN while fewer than min_history volumes")
    check(close(z[5, 0], (15 - 11) / 1.4826), "z = (m - median)/(1.4826 MAD) by hand")
    # at t=6 history is [10,12,11,13,9,15] -> median 11.5, |dev| 1.5,.5,.5,1.5,2.5,3.5 -> MAD 1.5
    check(close(z[6, 0], (11 - 11.5) / (1.4826 * 1.5)), "even history: median/MAD average the middle pair")
    s2 = np.array([[5.0]] * 6 + [[5.0], [6.0], [4.0]])
    z2 = qa.slice_zscores(s2, history=6, min_history=5)
    check(z2[6, 0] == 0 and z2[7, 0] == math.inf, "MAD == 0: 0 if equal, +inf above")
    # window: history=3 -> at t=5 uses volumes 2..4 only
    s3 = np.array([[100.0], [100.0], [1.0], [2.0], [3.0], [2.0]])
    z3 = qa.slice_zscores(s3, history=3, min_history=3)
    check(close(z3[5, 0], 0.0), "only the last `history` volumes are used")

    # floor (docs/algorithms/qa.md rule): slice 0 history [10,12,11,13,9] (med 11, 1.4826 MAD =
    # 1.4826), slice 1 [100,100,100,100,101] (med 100, MAD 0). R = median(1.4826/11, 0) = 0.067391;
    # slice 1: s = max(0, 0.5 R 100) = 3.36955 -> z(110) = 10/3.36955 = 2.96776;
    # slice 0: floor 0.5 R 11 = 0.37065 < 1.4826 -> z(15) = 4/1.4826
    sf = np.array([[10, 100], [12, 100], [11, 100], [13, 100], [9, 101], [15, 110]], float)
    zf = qa.slice_zscores(sf, history=30, min_history=5, floor=0.5)
    r = 0.5 * (1.4826 / 11)
    check(close(zf[5], [4 / 1.4826, 10 / (0.5 * r * 100)]), "scale floor (0.5 x median relative spread) by hand")
    check(qa.slice_zscores(sf)[5, 1] == math.inf, "without the floor the MAD-0 slice gives +inf")

    # phantom: a slice halved at volume 40
    rng = np.random.default_rng(2024)
    ph = 1000.0 + 10.0 * rng.standard_normal((8, 8, 10, 60))
    ph[:, :, 4, 40] *= 0.5
    zz = qa.slice_zscores(qa.slice_means(ph))
    check(zz[40, 4] < -100, f"halved slice: z = {zz[40, 4]:.0f} at (volume 40, slice 4)")
    others = np.abs(zz.copy())
    others[40, 4] = np.nan
    mx = np.nanmax(others[30:])
    check(mx < 6, f"no false alarm once the history is full (volumes 30..59): max |z| = {mx:.2f} < 6")
    # With only 5..29 past volumes the MAD is a noisy scale estimate and the robust z is heavy
    # tailed: on this clean phantom |z| reaches ~11 at volume 7 (up to ~23 over other seeds).
    early = np.nanmax(others[:30])
    print(f"  info  volumes 5..29 (short history): max |z| = {early:.2f} on the clean phantom")
    check(np.isfinite(others).sum() == 55 * 10 - 1, "z defined from volume 5 on (min_history = 5)")
    zd = qa.slice_zscores(qa.slice_means(ph), history=60, min_history=10, floor=0.5)
    od = np.abs(zd)
    od[40, 4] = np.nan
    check(zd[40, 4] < -100 and np.nanmax(od) < 8,
          f"qa.md rule (60/10/floor 0.5): z = {zd[40, 4]:.0f} at the drop-out, max |z| elsewhere "
          f"{np.nanmax(od):.2f} < 8")


def test_fd():
    print("framewise_displacement (Power 2012)")
    p = np.zeros((5, 6))
    p[1, 0] = 0.1  # +0.1 mm x
    p[2, 0] = 0.1
    p[2, 5] = 0.5  # +0.5 deg about z
    p[3] = 0.0  # both back
    p[4, 1] = -0.2
    p[4, 3] = 1.0  # -0.2 mm y, +1 deg about x
    arc = 50.0 * math.pi / 180.0  # mm per degree on a 50 mm sphere = 0.8726646
    hand = [0.0, 0.1, 0.5 * arc, 0.1 + 0.5 * arc, 0.2 + 1.0 * arc]
    check(close(qa.framewise_displacement(p), hand), "FD of known steps (degrees, 50 mm)")
    pr = p.copy()
    pr[:, 3:] *= math.pi / 180
    check(close(qa.framewise_displacement(pr, rotations="radians"), hand), "radians input")
    check(close(qa.framewise_displacement(p, radius=80.0)[2], 0.5 * 80 * math.pi / 180), "radius")


def test_usable():
    print("usable_frames / predict_minutes_to_target (FIRMM)")
    fd = [0.0, 0.1, 0.25, 0.1, 0.6, 0.1, 0.1, 0.1, 0.35, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.15]
    tr = 2.0
    # FIRMM rule (kept iff FD < thr): thr 0.2 drops 2,4,8,9 -> 12; 0.3 drops 4,8 -> 14; 0.5 drops 4 -> 15
    u = qa.usable_frames(fd, tr)
    check([u[t]["frames"] for t in (0.2, 0.3, 0.5)] == [12, 14, 15], "FIRMM tally by hand: 12, 14, 15")
    check(close(u[0.2]["minutes"], 12 * 2 / 60), "minutes = frames * TR / 60")
    check(not u[0.2]["keep"][9], "FD == threshold is not kept (FIRMM counts FD < threshold)")
    # Power 2014 at 0.2: bad (FD > 0.2) = 2,4,8; +1 back/+2 forward flags 1..10; kept 0 and 11..15;
    # segment [0] is shorter than 5 -> dropped; 11..15 (5 frames) kept -> 5
    # at 0.5: bad = 4 -> flags 3..6; kept 0..2 (3 < 5, dropped) and 7..15 (9) -> 9
    p = qa.usable_frames(fd, tr, thresholds=(0.2, 0.5), rule="power2014")
    check(p[0.2]["frames"] == 5 and list(np.flatnonzero(p[0.2]["keep"])) == [11, 12, 13, 14, 15],
          "Power 2014 rule by hand at 0.2: frames 11..15")
    check(p[0.5]["frames"] == 9, "Power 2014 rule by hand at 0.5: 9 frames")
    o = qa.usable_frames(fd, tr, thresholds=(0.2,), rule="firmm", min_segment=5, keep_equal=True)
    # FD > 0.2 drops 2,4,8 -> runs [0,1],[3],[5,6,7],[9..15]; only the last (7 frames) is >= 5
    check(o[0.2]["frames"] == 7, "overrides: FD > thr with 5-frame segments -> 7 (by hand)")

    # prediction: 300 frames at TR 2 s (10 min), every other frame usable -> 5 usable min;
    # target 12.5 -> (12.5 - 5) / (5/10) = 15 more minutes
    fd2 = np.array([0.1 if i % 2 == 0 else 0.5 for i in range(300)])
    fd2[0] = 0.0
    check(close(qa.predict_minutes_to_target(fd2, 2.0, 12.5, 0.2), 15.0), "prediction 15 min by hand")
    check(qa.predict_minutes_to_target(np.full(10, 0.9), 2.0) == math.inf, "no usable frame -> inf")
    check(qa.predict_minutes_to_target(np.zeros(400), 2.0) == 0.0, "target reached -> 0")
    per = qa.predict_minutes_to_target(fd2[:4], 2.0, 1.0, 0.2, per_frame=True)
    # after 1 frame: 1 usable of 1 (1/30 min) -> (1 - 1/30) * 1 = 0.96667; after 2: 1 of 2 ->
    # (1 - 1/30) * (2/30)/(1/30) = 1.93333; after 3: 2 of 3 -> (1 - 2/30) * 1.5 = 1.4; after 4: 2 of 4
    check(close(per, [1 - 1 / 30, 2 * (1 - 1 / 30), 1.5 * (1 - 2 / 30), 2 * (1 - 2 / 30)]),
          "per-frame predictions by hand")


def amplitude_at(x, t, f):
    """Least-squares amplitude of the f Hz sinusoid in x(t) (mean removed)."""
    a = np.stack([np.sin(2 * np.pi * f * t), np.cos(2 * np.pi * f * t), np.ones_like(t)], axis=1)
    c = np.linalg.lstsq(a, x, rcond=None)[0]
    return math.hypot(c[0], c[1])


def test_filter():
    print("firmm_filter (Fair et al. 2020 notch; low-pass)")
    tr, n = 0.8, 600
    t = np.arange(n) * tr
    slow = np.sin(2 * np.pi * 0.01 * t)
    mid = slice(100, 500)
    for f_resp, band, label in ((0.37, qa.ABCD_BAND_BPM, "ABCD band 18.6-25.7 bpm"),
                                (0.30, (15.0, 21.0), "band 15-21 bpm (0.25-0.35 Hz)")):
        p = np.zeros((n, 6))
        p[:, 1] = slow + 0.5 * np.sin(2 * np.pi * f_resp * t)
        p[:, 5] = 0.3 * slow
        out = qa.firmm_filter(p, tr, kind="notch", band_bpm=band)
        amp = amplitude_at(out[mid, 1], t[mid], f_resp)
        err = np.max(np.abs(out[mid, 1] - slow[mid]))
        check(amp < 0.01 * 0.5, f"notch ({label}) removes {f_resp} Hz: amplitude {amp:.2e} of 0.5")
        check(err < 0.01, f"notch ({label}) keeps the 0.01 Hz signal: max error {err:.2e}")
        check(np.max(np.abs(out[:, 5] - 0.3 * slow)) < 0.01, "other columns filtered independently")
    # aliased: TR 2 s (Nyquist 0.25 Hz) -> 0.37 Hz appears at |0.37 - 0.5| = 0.13 Hz
    check(close(qa.aliased_frequency(0.37, 2.0), 0.13), "aliased frequency |0.37 - 0.5| = 0.13 Hz")
    tr2, n2 = 2.0, 400
    t2 = np.arange(n2) * tr2
    slow2 = np.sin(2 * np.pi * 0.004 * t2)
    p = np.zeros((n2, 6))
    p[:, 0] = slow2 + 0.5 * np.sin(2 * np.pi * 0.37 * t2)
    out = qa.firmm_filter(p, tr2, kind="notch")
    mid2 = slice(60, 340)
    amp = amplitude_at(out[mid2, 0], t2[mid2], 0.13)
    check(amp < 0.02 * 0.5, f"notch at TR 2 s removes the aliased respiration: amplitude {amp:.2e} of 0.5")
    check(np.max(np.abs(out[mid2, 0] - slow2[mid2])) < 0.05, "and keeps the slow signal")
    # low-pass 6 bpm = 0.1 Hz
    p = np.zeros((n, 6))
    p[:, 2] = slow + 0.5 * np.sin(2 * np.pi * 0.3 * t)
    out = qa.firmm_filter(p, tr, kind="lowpass")
    amp = amplitude_at(out[mid, 2], t[mid], 0.3)
    check(amp < 0.02 * 0.5, f"low-pass 0.1 Hz removes 0.3 Hz: amplitude {amp:.2e}")
    check(np.max(np.abs(out[mid, 2] - slow[mid])) < 0.01, "low-pass keeps the 0.01 Hz signal")
    check(np.array_equal(qa.firmm_filter(p, tr, kind="none"), p), "kind='none' is the identity")
    # FD of filtered parameters is much smaller than of the raw ones
    pr = np.zeros((n, 6))
    pr[:, 1] = 0.2 * np.sin(2 * np.pi * 0.37 * t)
    fd_raw = qa.framewise_displacement(pr)
    fd_f = qa.framewise_displacement(qa.firmm_filter(pr, tr, kind="notch"))
    check(fd_f[mid].mean() < 0.05 * fd_raw[mid].mean(), "respiratory FD removed by the notch")
    # the notch coefficients are MATLAB iirnotch(W0, BW): b = g [1, -2 cos w, 1], g = 1/(1+tan(bw/2))
    import scipy.signal
    w0, bw = 0.4, 0.1
    b, a = scipy.signal.iirnotch(w0, w0 / bw)
    g = 1 / (1 + math.tan(bw * math.pi / 2))
    check(close(b, g * np.array([1, -2 * math.cos(w0 * math.pi), 1]))
          and close(a, [1, -2 * g * math.cos(w0 * math.pi), 2 * g - 1]), "iirnotch = MATLAB's design")


def write_nifti(path, arr, tr=None):
    import nibabel as nib
    img = nib.Nifti1Image(arr, np.eye(4))
    if tr is not None:
        img.header.set_zooms((2.0, 2.0, 2.0, tr))
        img.header.set_xyzt_units("mm", "sec")
    nib.save(img, path)


def test_cli():
    print("command line")
    rng = np.random.default_rng(5)
    d = (500 + 5 * rng.standard_normal((6, 5, 4, 30))).astype(np.float32)
    d[:, :, 2, 12] *= 0.5
    mask = np.ones((6, 5, 4), np.uint8)
    mask[0] = 0
    params = np.zeros((30, 6))
    params[10:, 0] = 0.4  # step at 10 -> FD 0.4
    with tempfile.TemporaryDirectory() as tmp:
        bold = os.path.join(tmp, "bold.nii.gz")
        mpath = os.path.join(tmp, "mask.nii.gz")
        write_nifti(bold, d, tr=1.5)
        write_nifti(mpath, mask)
        motion = os.path.join(tmp, "motion.tsv")
        with open(motion, "w") as f:
            f.write("trans_x\ttrans_y\ttrans_z\trot_x\trot_y\trot_z\n")
            for row in params:
                f.write("\t".join(str(v) for v in row) + "\n")
        out = os.path.join(tmp, "qa.tsv")
        cmd = [sys.executable, os.path.join(HERE, "qa_reference.py"), bold, "--mask", mpath,
               "--out", out, "--motion", motion, "--maps", os.path.join(tmp, "run")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, f"CLI runs (rc {r.returncode}) {r.stderr.strip()[-200:]}")
        if r.returncode != 0:
            return
        with open(out) as f:
            lines = [ln.rstrip("\n").split("\t") for ln in f]
        head = lines[0]
        check(head == ["volume", "global_signal", "outlier_fraction", "quality_index", "slice_z_min",
                       "slice_z_max", "fd", "usable_0.2", "usable_0.3", "usable_0.5"], "TSV columns")
        check(len(lines) == 31, "one row per volume")
        col = {h: [r[i] for r in lines[1:]] for i, h in enumerate(head)}
        gs = qa.global_signal(d, mask)
        check(close([float(v) for v in col["global_signal"]], gs, 1e-15), "TSV global signal = function")
        check(float(col["fd"][10]) == 0.4 and col["usable_0.2"][10] == "0" and col["usable_0.5"][10] == "1",
              "FD step 0.4 at volume 10: unusable at 0.2, usable at 0.5")
        check(float(col["slice_z_min"][12]) < -20, "halved slice shows in slice_z_min at volume 12")
        tsnr = np.load(os.path.join(tmp, "run_tsnr.npy"))
        check(tsnr.shape == (6, 5, 4) and np.all(tsnr[0] == 0) and np.all(tsnr[1:] > 0), "maps written")
        bad = os.path.join(tmp, "badmask.nii.gz")
        write_nifti(bad, np.ones((6, 5, 3), np.uint8))
        r = subprocess.run([sys.executable, os.path.join(HERE, "qa_reference.py"), bold, "--mask", bad,
                            "--out", os.path.join(tmp, "x.tsv")], capture_output=True, text=True)
        check(r.returncode != 0 and not os.path.exists(os.path.join(tmp, "x.tsv")),
              "mask on another grid: error, nothing written")


def real_bold_files():
    cands = ["/usr/lib/python3/dist-packages/nitime/data/fmri1.nii.gz",
             "/usr/lib/python3/dist-packages/nitime/data/fmri2.nii.gz"]
    # The build's data (scripts/fetch-data.sh) and the optional extra data (docs/data.md), as ctest passes them.
    installed = os.environ.get("RTF_INSTALLED_DATA_DIR", os.path.join(REPO, "build", "data"))
    cands += sorted(glob.glob(os.path.join(installed, "nitime", "fmri[12].nii.gz")))
    extra = os.environ.get("RTF_EXTRA_DATA_DIR")
    if extra:
        cands.append(os.path.join(extra, "scanner", "pyneal_testSeries.nii.gz"))
    seen, out = set(), []
    for c in cands:
        if os.path.exists(c) and os.path.basename(c) not in seen:
            seen.add(os.path.basename(c))
            out.append(os.path.abspath(c))
    return out


def test_real():
    print("real BOLD")
    files = real_bold_files()
    if not files:
        print("  skip  no real BOLD found (nitime data, $RTF_INSTALLED_DATA_DIR, $RTF_EXTRA_DATA_DIR)")
        return
    import nibabel as nib
    for path in files:
        img = nib.load(path)
        d = np.asanyarray(img.dataobj).astype(np.float64)
        name = os.path.basename(path)
        mean = d.mean(axis=3)
        mask = mean > 0.5 * np.mean(mean[mean > 0])
        t_n = d.shape[3]
        _, sd, tsnr = qa.tsnr_maps(d, mask)
        frac = qa.outlier_fraction(d, mask)
        qi = qa.quality_index(d, mask)
        gs = qa.global_signal(d, mask)
        sz = qa.slice_zscores(qa.slice_means(d, mask), min_history=min(5, max(1, t_n - 1)))
        ok = (np.all(np.isfinite(tsnr)) and np.all(tsnr >= 0) and np.all(np.isfinite(frac))
              and np.all((frac >= 0) & (frac <= 1)) and np.all(np.isfinite(qi))
              and np.all((qi >= 0) & (qi <= 2)) and np.all(np.isfinite(gs)) and not np.isnan(sz[-1]).all())
        check(ok, f"{name} {d.shape}: {mask.sum()} voxels, median tSNR {np.median(tsnr[mask]):.1f}, "
                  f"mean outlier fraction {frac.mean():.4f}, mean QI {qi.mean():.4f}, "
                  f"max |slice z| {np.nanmax(np.abs(sz)) if np.isfinite(sz).any() else float('nan'):.2f}")


def main():
    for test in (test_tsnr, test_outliers, test_quality_index, test_slices, test_fd, test_usable,
                 test_filter, test_cli, test_real):
        test()
    if FAILURES:
        print(f"\n{len(FAILURES)} check(s) FAILED")
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
