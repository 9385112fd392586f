#!/usr/bin/env python3
"""Test data and independent checks for tests/cli/randomise_checks.sh (numpy and scipy from Debian).

  randomise_data.py make DIR            writes DIR/data.nii (4D, 10 subjects), DIR/mask.nii, design files, a NaN copy
  randomise_data.py onesample DIR PREFIX     checks PREFIX_* of `-1 -x` against scipy and a brute-force enumeration
  randomise_data.py twosample DIR PREFIX     checks PREFIX_* of the two-group design the same way
  randomise_data.py anova DIR PREFIX         checks PREFIX_fstat1 of three groups (F test) against scipy's f_oneway
Exit 0 when every check holds; prints what it compared."""
import itertools
import sys

import numpy as np
from scipy import ndimage, stats

from nifti_min import read_nifti, write_nifti

DIMS = (17, 19, 13)
N = 10


def smooth(rng, shape):
    x = rng.standard_normal(shape)
    for axis in range(3):
        x = (np.roll(x, 1, axis) + 2 * x + np.roll(x, -1, axis)) / 4
    return x / x.std()


def make(d):
    rng = np.random.default_rng(20261125)
    zz, yy, xx = np.meshgrid(np.arange(DIMS[2]), np.arange(DIMS[1]), np.arange(DIMS[0]), indexing="ij")
    blob = np.exp(-((xx - 5) ** 2 + (yy - 6) ** 2 + (zz - 6) ** 2) / 8.0).transpose(2, 1, 0)
    mask = np.zeros(DIMS, dtype=np.float32)
    mask[1:-1, 1:-1, 1:-1] = 1
    group = np.array([1] * 5 + [0] * 5, dtype=float)
    subjects = np.stack([smooth(rng, DIMS) + 3.0 * blob * (1 + 2 * group[s]) for s in range(N)], axis=3) * mask[..., None]
    write_nifti(f"{d}/data.nii", subjects)
    write_nifti(f"{d}/mask.nii", mask)
    bad = subjects.copy()
    bad[8, 9, 6, 3] = np.nan
    write_nifti(f"{d}/nan.nii", bad)
    write_nifti(f"{d}/empty_mask.nii", np.zeros(DIMS))
    with open(f"{d}/design.mat", "w") as f:
        f.write(f"/NumWaves\t2\n/NumPoints\t{N}\n/PPheights\t1\t1\n\n/Matrix\n")
        for g in group:
            f.write(f"{g:g}\t{1 - g:g}\n")
    with open(f"{d}/design.con", "w") as f:
        f.write("/ContrastName1\tA>B\n/ContrastName2\tB>A\n/NumWaves\t2\n/NumContrasts\t2\n/PPheights\t1\t1\n\n")
        f.write("/Matrix\n1 -1\n-1 1\n")
    groups3 = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    with open(f"{d}/design3.mat", "w") as f:
        f.write(f"/NumWaves 3\n/NumPoints {N}\n/Matrix\n")
        for g in groups3:
            f.write(" ".join("1" if g == k else "0" for k in range(3)) + "\n")
    with open(f"{d}/design3.con", "w") as f:
        f.write("/NumWaves 3\n/NumContrasts 2\n/Matrix\n1 -1 0\n0 1 -1\n")
    with open(f"{d}/design3.fts", "w") as f:
        f.write("/NumWaves 2\n/NumContrasts 1\n/Matrix\n1 1\n")
    with open(f"{d}/short.mat", "w") as f:
        f.write("/NumWaves 2\n/NumPoints 9\n/Matrix\n" + "1 0\n" * 5 + "0 1\n" * 4)
    with open(f"{d}/collinear.mat", "w") as f:
        f.write("/NumWaves 3\n/NumPoints 10\n/Matrix\n" + "1 0 1\n" * 5 + "0 1 0\n" * 5)
    with open(f"{d}/wide.con", "w") as f:
        f.write("/NumWaves 3\n/NumContrasts 1\n/Matrix\n1 -1 0\n")
    with open(f"{d}/broken.con", "w") as f:
        f.write("/NumWaves 2\n/NumContrasts 1\n/Matrix\n1 x\n")


def masked(d):
    data = read_nifti(f"{d}/data.nii")
    mask = read_nifti(f"{d}/mask.nii") != 0
    return data[mask].T.astype(np.float64), mask  # subjects x voxels, in double (x fastest order is irrelevant: same for all)


def check_maps(prefix, suffix, mask, t_expected, t_null, effect=True):
    """t against scipy (1e-4), and 1 - p maps against the enumeration (p as counts over it, identity included)."""
    t = read_nifti(f"{prefix}_{suffix}.nii.gz")[mask]
    err = np.max(np.abs(t - t_expected) / np.maximum(1, np.abs(t_expected)))
    print(f"{suffix}: largest t difference from scipy {err:.2e} over {t.size} voxels")
    assert err < 1e-4, err
    slack = 1e-5 * np.abs(t_expected)
    p_unc = (t_null >= (t_expected - slack)[None, :]).mean(axis=0)
    p_fwe = (t_null.max(axis=1)[:, None] >= (t_expected - slack)[None, :]).mean(axis=0)
    vox_p = 1 - read_nifti(f"{prefix}_vox_p_{suffix}.nii.gz")[mask]
    corrp = 1 - read_nifti(f"{prefix}_vox_corrp_{suffix}.nii.gz")[mask]
    e1, e2 = np.max(np.abs(vox_p - p_unc)), np.max(np.abs(corrp - p_fwe))
    print(f"{suffix}: {len(t_null)} rearrangements; largest p difference from the enumeration: uncorrected {e1:.2e}, "
          f"corrected {e2:.2e}; {np.sum(p_fwe <= 0.05)} voxels at FWE p <= 0.05")
    assert e1 < 1e-6 and e2 < 1e-6, (e1, e2)  # the maps are float32 (1 - p)
    null = np.loadtxt(f"{prefix}_vox_null_{suffix}.txt")
    assert np.allclose(np.sort(null), np.sort(t_null.max(axis=1)), rtol=1e-4), "null distribution"
    # The data are fixed (seeded): the blob is found in the direction of its effect, nothing in the other.
    assert (np.sum(p_fwe <= 0.05) > 0) == effect, "the blob should be found" if effect else "nothing should be found"


def check_clusters(prefix, suffix, mask, t_expected, t_null, threshold):
    """Cluster extent and mass (sum of t - threshold) FWE p maps against scipy.ndimage.label (26-connectivity) of every
    rearrangement's map: the same 1 - p at every voxel (0 outside clusters)."""
    structure = np.ones((3, 3, 3))

    def clusters(values):
        grid = np.zeros(mask.shape)
        grid[mask] = values
        labels, count = ndimage.label(grid > threshold, structure=structure)
        sizes = np.bincount(labels.ravel(), minlength=count + 1)
        masses = np.bincount(labels.ravel(), weights=(grid - threshold).ravel(), minlength=count + 1)
        sizes[0] = 0
        masses[0] = 0
        return labels[mask], sizes, masses

    null_extent = np.array([clusters(t)[1].max() for t in t_null])
    null_mass = np.array([clusters(t)[2].max() for t in t_null])
    labels, sizes, masses = clusters(t_expected)
    voxel_extent, voxel_mass = sizes[labels], masses[labels]
    p_e = np.where(voxel_extent > 0, (null_extent[None, :] >= voxel_extent[:, None]).mean(axis=1), 1.0)
    p_m = np.where(voxel_mass > 0, (null_mass[None, :] >= voxel_mass[:, None] * (1 - 1e-6)).mean(axis=1), 1.0)
    got_e = 1 - read_nifti(f"{prefix}_clustere_corrp_{suffix}.nii.gz")[mask]
    got_m = 1 - read_nifti(f"{prefix}_clusterm_corrp_{suffix}.nii.gz")[mask]
    e1, e2 = np.max(np.abs(got_e - p_e)), np.max(np.abs(got_m - p_m))
    print(f"{suffix}: clusters at t > {threshold}: {labels.max()} observed, largest {sizes.max()} voxels; largest p "
          f"difference from scipy.ndimage: extent {e1:.2e}, mass {e2:.2e}; {np.sum(p_e <= 0.05)} voxels at FWE p <= "
          f"0.05 by extent")
    assert e1 < 1e-6 and e2 < 1e-6, (e1, e2)
    assert np.array_equal(np.sort(np.loadtxt(f"{prefix}_clustere_null_{suffix}.txt")), np.sort(null_extent))


def tfce_map(grid_values, mask, dh, E=0.5, H=2.0, connectivity=26):
    """TFCE (Smith & Nichols 2009) of one map, 26- (or 18-, 6-) connected, thresholds h_k = float32(k) * float32(dh), voxels with
    t >= h_k counting at h_k: sum of extent^E h^H dh."""
    grid = np.zeros(mask.shape, dtype=np.float32)
    grid[mask] = grid_values
    out = np.zeros(mask.shape)
    top = grid[mask].max()
    k = 1
    structure = ndimage.generate_binary_structure(3, {6: 1, 18: 2, 26: 3}[connectivity])
    while True:
        h = np.float32(k) * np.float32(dh)
        if h > top:
            break
        labels, count = ndimage.label((grid >= h) & mask, structure=structure)
        sizes = np.bincount(labels.ravel(), minlength=count + 1).astype(float)
        sizes[0] = 0
        out += sizes[labels] ** E * float(h) ** H * dh
        k += 1
    return out[mask]


def check_tfce(prefix, suffix, mask, t_null):
    import json

    report = json.load(open(f"{prefix}_randomise.json"))
    dh = [c for c in report["contrasts"] if c["file"] == suffix][0]["tfce"]["dh"]
    observed = read_nifti(f"{prefix}_{suffix}.nii.gz")[mask]  # the device's t, so thresholds cross alike
    expected = tfce_map(observed, mask, dh)
    got = read_nifti(f"{prefix}_tfce_{suffix}.nii.gz")[mask]
    err = np.max(np.abs(got - expected)) / expected.max()
    null = np.array([tfce_map(t.astype(np.float32), mask, dh).max() for t in t_null])
    slack = 1e-4 * expected
    p = np.where(expected > 0, (null[None, :] >= (expected - slack)[:, None]).mean(axis=1), 1.0)
    corrp = 1 - read_nifti(f"{prefix}_tfce_corrp_{suffix}.nii.gz")[mask]
    e2 = np.max(np.abs(corrp - p))
    print(f"{suffix}: TFCE (dh {dh:.4f}) largest difference from scipy.ndimage {err:.2e} of the maximum; corrected p "
          f"largest difference {e2:.2e} ({np.sum(p <= 0.05)} voxels at FWE p <= 0.05)")
    # Tolerance: float sums on the device; a null map's t within float rounding of a threshold may cross it on one
    # side only (the null maps here are recomputed in double), moving its maximum slightly: p within 2 / N.
    assert err < 1e-4, err
    assert e2 <= 2.0 / len(t_null) + 1e-6, e2


def tfce_params(d, prefix):
    """--tfce_H 1.5 --tfce_E 1 --tfce_C 6: the TFCE map equals scipy.ndimage's with those parameters."""
    import json

    _, mask = masked(d)
    report = json.load(open(f"{prefix}_randomise.json"))
    entry = report["contrasts"][0]["tfce"]
    assert (entry["E"], entry["H"], entry["connectivity"]) == (1.0, 1.5, 6), entry
    observed = read_nifti(f"{prefix}_tstat1.nii.gz")[mask]
    expected = tfce_map(observed, mask, entry["dh"], E=1.0, H=1.5, connectivity=6)
    got = read_nifti(f"{prefix}_tfce_tstat1.nii.gz")[mask]
    default = tfce_map(observed, mask, entry["dh"])
    err = np.max(np.abs(got - expected)) / expected.max()
    apart = np.max(np.abs(default - expected)) / expected.max()
    print(f"TFCE E 1, H 1.5, 6-connected: largest difference from scipy.ndimage {err:.2e} of the maximum "
          f"(the defaults' map differs by {apart:.2f})")
    assert err < 1e-4, err
    assert apart > 0.05, apart


def onesample(d, prefix):
    y, mask = masked(d)
    t_expected = stats.ttest_1samp(y, 0.0, axis=0).statistic
    flips = np.array(list(itertools.product([1.0, -1.0], repeat=N)))  # all 1024, identity first
    means = flips @ y / N
    sq = (y**2).sum(axis=0)
    var = (sq[None, :] - N * means**2) / (N - 1)
    t_null = means / np.sqrt(var / N)
    check_maps(prefix, "tstat1", mask, t_expected, t_null)
    check_clusters(prefix, "tstat1", mask, t_expected, t_null, 2.3)
    check_tfce(prefix, "tstat1", mask, t_null)


def twosample(d, prefix):
    y, mask = masked(d)
    a = stats.ttest_ind(y[:5], y[5:], axis=0).statistic
    null = []
    for first in itertools.combinations(range(N), 5):  # every split into two groups of five (252)
        rest = [i for i in range(N) if i not in first]
        null.append(stats.ttest_ind(y[list(first)], y[rest], axis=0).statistic)
    null = np.array(null)
    check_maps(prefix, "tstat1", mask, a, null)
    check_maps(prefix, "tstat2", mask, -a, -null, effect=False)


def anova(d, prefix):
    y, mask = masked(d)
    sizes = (4, 3, 3)  # design3.mat: subjects 0-3, 4-6, 7-9
    f_expected = stats.f_oneway(y[:4], y[4:7], y[7:], axis=0).statistic
    null = []
    everyone = set(range(N))
    for a in itertools.combinations(range(N), sizes[0]):  # every distinct relabelling: 10! / (4! 3! 3!) = 4200
        rest = sorted(everyone - set(a))
        for b in itertools.combinations(rest, sizes[1]):
            c = sorted(set(rest) - set(b))
            null.append(stats.f_oneway(y[list(a)], y[list(b)], y[c], axis=0).statistic)
    null = np.array(null)
    assert len(null) == 4200
    check_maps(prefix, "fstat1", mask, f_expected, null)


if __name__ == "__main__":
    {"make": lambda: make(sys.argv[2]), "onesample": lambda: onesample(sys.argv[2], sys.argv[3]),
     "twosample": lambda: twosample(sys.argv[2], sys.argv[3]),
     "anova": lambda: anova(sys.argv[2], sys.argv[3]),
     "tfceparams": lambda: tfce_params(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
