#!/usr/bin/env python3
"""`rtfmri connectome` against numpy / scipy on real BOLD (tests/cli/connectome_checks.sh).

  connectome_check.py BOLD PREFIX METHOD THRESHOLD ABSOLUTE
(THRESHOLD "dD": a density D: the edges must be the round(D x pairs) largest, the JSON's cut within 1e-6 of numpy's
k-th largest) loads PREFIX_edges.npz with scipy.sparse.load_npz and PREFIX_nodes.npz, recomputes every pair's correlation of the
nodes' series (numpy.corrcoef for pearson, scipy.stats.spearmanr for spearman), and checks: the matrix is N x N and
symmetric, its edges are exactly the pairs passing the threshold except pairs within 1e-5 of it, every r within 1e-5,
constant series have no edges, the degree and strength maps equal the matrix's row counts and sums, and the JSON's
edge count. Exit 0 when all hold."""
import json
import sys

import numpy as np
import scipy.sparse
from scipy import stats

from nifti_min import read_nifti

TOL = 1e-5


def verdict(summary, problems):
    """Prints the summary and the first problems; the exit status."""
    print(summary)
    for p in problems[:5]:
        print("FAILED:", p)
    return 0 if not problems else 1


def main():
    bold_path, prefix, method, threshold, absolute = sys.argv[1:6]
    density = float(threshold[1:]) if threshold.startswith("d") else None
    threshold, absolute = (0.0 if density else float(threshold)), absolute == "1"
    bold = read_nifti(bold_path).astype(np.float64)
    g = scipy.sparse.load_npz(prefix + "_edges.npz")
    nodes = np.load(prefix + "_nodes.npz")
    voxels = nodes["voxels"]
    n = len(voxels)
    flat = bold.reshape(-1, bold.shape[3], order="F")
    x = flat[voxels]
    constant = np.ptp(x, axis=1) == 0
    if method == "kendall":
        if density:
            return check_kendall_density(g, x, constant, density, absolute, json.load(open(prefix + "_connectome.json")))
        return check_kendall(g, x, constant, threshold, absolute)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.corrcoef(x) if method == "pearson" else stats.spearmanr(x, axis=1)[0]
    problems = []
    if g.shape != (n, n) or g.format != "csr":
        problems.append(f"shape {g.shape} / format {g.format} for {n} nodes")
    if abs(g - g.T).max() != 0:
        problems.append("not symmetric")
    metric = np.abs(r) if absolute else r
    upper = np.triu(np.ones((n, n), dtype=bool), 1) & ~constant[:, None] & ~constant[None, :]
    report = json.load(open(prefix + "_connectome.json"))
    if density:
        k = int(round(density * upper.sum()))
        threshold = np.sort(metric[upper])[::-1][k - 1]
        if abs(report["threshold"] - threshold) > 1e-6:
            problems_density = f"cut {report['threshold']} vs numpy's k-th largest {threshold} (k {k})"
        else:
            problems_density = None
        TOL_CUT = 1e-6
    else:
        problems_density, TOL_CUT = None, TOL
    keep = upper & (metric >= threshold)
    dense = g.toarray()
    present = np.triu(dense != 0, 1)
    decided = upper & (np.abs(metric - threshold) > TOL_CUT)
    if problems_density:
        problems.append(problems_density)
    wrong = (present != keep) & decided
    if wrong.any():
        problems.append(f"{wrong.sum()} pairs decided differently, e.g. {np.argwhere(wrong)[:3].tolist()}")
    err = np.max(np.abs(dense[present] - r[present])) if present.any() else 0.0
    if err > TOL:
        problems.append(f"largest |r - numpy/scipy| {err:.2e}")
    if (dense[constant] != 0).any():
        problems.append("a constant series has edges")
    degree = read_nifti(prefix + "_degree.nii.gz").reshape(-1, order="F")[voxels]
    strength = read_nifti(prefix + "_strength.nii.gz").reshape(-1, order="F")[voxels]
    if not np.array_equal(degree, np.diff(g.indptr)):
        problems.append("degree map differs from the rows' counts")
    if np.max(np.abs(strength - np.asarray(g.sum(axis=1)).ravel())) > 1e-3:
        problems.append("strength map differs from the rows' sums")
    if report["edges"] != g.nnz // 2 or report["nodes"] != n:
        problems.append(f"JSON edges {report['edges']} nodes {report['nodes']}, matrix {g.nnz // 2} and {n}")
    print(f"{method} {'|r|' if absolute else 'r'} >= {threshold:.7f}{f' (density {density})' if density else ''}: {n} nodes ({constant.sum()} constant), "
          f"{g.nnz // 2} edges (numpy/scipy {keep.sum()}, {(upper & ~decided).sum()} within {TOL_CUT} of the threshold), "
          f"largest |r - numpy/scipy| {err:.2e}")
    for p in problems:
        print("FAILED:", p)
    return 0 if not problems else 1


def check_kendall(g, x, constant, threshold, absolute):
    """scipy.stats.kendalltau (tau-b) on 3,000 random pairs plus every stored edge's pair: the stored values within 1e-6,
    the sampled pairs present exactly when they pass the threshold (except within 1e-6)."""
    rng = np.random.default_rng(3)
    n = x.shape[0]
    dense = g.tocsr()
    coo = g.tocoo()
    upper = coo.row < coo.col
    edges = list(zip(coo.row[upper], coo.col[upper], coo.data[upper]))
    picked = [edges[k] for k in rng.choice(len(edges), size=min(1000, len(edges)), replace=False)] if edges else []
    problems, worst = [], 0.0
    for i, j, value in picked:
        tau = stats.kendalltau(x[i], x[j]).correlation
        worst = max(worst, abs(value - tau))
    if worst > 1e-6:
        problems.append(f"stored tau differs from scipy by {worst:.2e}")
    decided = 0
    for _ in range(3000):
        i, j = sorted(rng.choice(n, size=2, replace=False))
        if constant[i] or constant[j]:
            if dense[i, j] != 0:
                problems.append(f"constant series {i} or {j} has an edge")
            continue
        tau = stats.kendalltau(x[i], x[j]).correlation
        m = abs(tau) if absolute else tau
        if abs(m - threshold) <= 1e-6:
            continue
        decided += 1
        if (dense[i, j] != 0) != (m >= threshold):
            problems.append(f"pair {i},{j}: tau {tau}, stored {dense[i, j]}")
    return verdict(f"kendall {'|tau|' if absolute else 'tau'} >= {threshold}: {n} nodes, {g.nnz // 2} edges; 1,000 stored "
                  f"edges within {worst:.2e} of scipy.stats.kendalltau; {decided} random pairs decided alike", problems)


def tau_b_matrix(x):
    """Every pair's tau-b from the signs of all time pairs (numpy: a product of sign matrices), checked against
    scipy.stats.kendalltau on random pairs before use."""
    s, t = np.triu_indices(x.shape[1], 1)
    signs = np.sign(x[:, t] - x[:, s])
    numerator = signs @ signs.T
    untied = np.sqrt((signs != 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return numerator / np.outer(untied, untied)


def check_kendall_density(g, x, constant, density, absolute, report):
    """--density with tau-b: the edges are the round(D x pairs) largest |tau| (tau), the JSON's cut within 1e-6 of the
    k-th largest, every stored value within 1e-6."""
    n = x.shape[0]
    tau = tau_b_matrix(x)
    rng = np.random.default_rng(5)
    problems = []
    for _ in range(300):
        i, j = sorted(rng.choice(np.flatnonzero(~constant), size=2, replace=False))
        if abs(tau[i, j] - stats.kendalltau(x[i], x[j]).correlation) > 1e-12:
            problems.append(f"numpy tau-b of {i},{j} differs from scipy.stats.kendalltau")
            break
    metric = np.abs(tau) if absolute else tau
    upper = np.triu(np.ones((n, n), dtype=bool), 1) & ~constant[:, None] & ~constant[None, :]
    k = int(round(density * upper.sum()))
    cut = np.sort(metric[upper])[::-1][k - 1]
    if abs(report["threshold"] - cut) > 1e-6:
        problems.append(f"cut {report['threshold']} vs the k-th largest {cut} (k {k})")
    dense = g.toarray()
    present = np.triu(dense != 0, 1)
    decided = upper & (np.abs(metric - cut) > 1e-6)
    wrong = (present != (upper & (metric >= cut))) & decided
    if wrong.any():
        problems.append(f"{wrong.sum()} pairs decided differently, e.g. {np.argwhere(wrong)[:3].tolist()}")
    err = np.max(np.abs(dense[present] - tau[present])) if present.any() else 0.0
    if err > 1e-6:
        problems.append(f"largest |tau - numpy| {err:.2e}")
    return verdict(f"kendall density {density}: {n} nodes, {g.nnz // 2} edges (k {k}, {(upper & ~decided).sum()} pairs "
                  f"within 1e-6 of the cut {cut:.7f}), largest |tau - numpy| {err:.2e}", problems)


if __name__ == "__main__":
    sys.exit(main())
