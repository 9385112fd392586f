#!/usr/bin/env python3
"""`rtfmri decode` against scikit-learn (tests/cli/decode_checks.sh), on real BOLD (nitime's fmri1 and fmri2,
10x10x18x40, TR 1.35 s, as two runs) with and without a pattern of known weights added in labelled blocks.

  decode_check.py make DATA_DIR OUT_DIR CLASSES AMPLITUDE SEED
writes OUT_DIR/run{1,2}.nii.gz (the real runs, plus AMPLITUDE x the class's random spatial pattern in every volume
that the events label with that class after a 4 s lag: zero for no pattern), OUT_DIR/events.tsv (blocks of 4 s, the
CLASSES conditions in turn, 8.1 s apart), OUT_DIR/mask.nii.gz (voxels whose mean exceeds the mean of the means) and
OUT_DIR/roi.nii.gz (25 of them: fewer features than samples).

  decode_check.py check PREFIX MODEL [LOSS] --runs R1 R2 --events E --mask M --cv CV [--folds K] [--C C]
                        [--alpha A] [--lag L] [--min-accuracy X]
recomputes everything independently in numpy and scikit-learn: the labels (volume t at t TR takes the condition of
the events covering t TR - lag), the features (each run's voxel series linearly detrended, scipy.signal.detrend, and
z-scored with the 1/T SD), the folds (LeaveOneGroupOut over runs / blocks, KFold), and per fold the estimator with the
same C / alpha at a tight tolerance: LogisticRegression (newton-cg), LinearSVC, RidgeClassifier. Checked: the samples
and folds of PREFIX_predictions.tsv, every decision value (and probability), predictions and per-fold accuracies
(identical, except where sklearn's own decision is within 1e-6 of the boundary), the confusion matrix, and the final
model (fitted to every sample) in PREFIX_model.json and PREFIX_weights.nii.gz against sklearn's coef_ / intercept_.
Exit 0 when all agree; prints the largest differences."""
import argparse
import json
import sys
import warnings

import nibabel as nib
import numpy as np
from scipy import signal
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.metrics import balanced_accuracy_score, confusion_matrix
from sklearn.model_selection import KFold, LeaveOneGroupOut
from sklearn.svm import LinearSVC

TR = 1.35
LAG = 4.0


def events_rows(classes):
    names = ["face", "house", "chair", "shoe"][:classes]
    return [(round(8.1 * k, 2), 4.0, names[k % classes]) for k in range(7)]


def make(data_dir, out_dir, classes, amplitude, seed):
    rng = np.random.default_rng(seed)
    events = events_rows(classes)
    with open(f"{out_dir}/events.tsv", "w") as f:
        f.write("onset\tduration\ttrial_type\n")
        for onset, duration, name in events:
            f.write(f"{onset}\t{duration}\t{name}\n")
    first = nib.load(f"{data_dir}/nitime/fmri1.nii.gz")
    mean = np.asarray(first.dataobj, dtype=np.float64).mean(axis=3)
    mask = (mean > mean.mean()).astype(np.uint8)
    nib.save(nib.Nifti1Image(mask, first.affine), f"{out_dir}/mask.nii.gz")
    roi = np.zeros(mask.size, dtype=np.uint8)  # 25 voxels: fewer features than samples (the primal path)
    roi[np.flatnonzero(mask.reshape(-1, order="F"))[::40][:25]] = 1
    nib.save(nib.Nifti1Image(roi.reshape(mask.shape, order="F"), first.affine), f"{out_dir}/roi.nii.gz")
    patterns = {name: rng.standard_normal(mask.shape) * mask for _, _, name in events}
    for r, name in enumerate(["fmri1", "fmri2"]):
        img = nib.load(f"{data_dir}/nitime/{name}.nii.gz")
        data = np.asarray(img.dataobj, dtype=np.float64)
        sd = data[mask > 0].std()
        labels = volume_labels(data.shape[3], events, LAG)
        for t, label in enumerate(labels):
            if label is not None:
                data[..., t] += amplitude * sd * patterns[label]
        out = nib.Nifti1Image(data.astype(np.float32), img.affine, img.header)
        out.header.set_data_dtype(np.float32)
        out.header["pixdim"][4] = TR
        nib.save(out, f"{out_dir}/run{r + 1}.nii.gz")


def volume_labels(volumes, events, lag):
    """Each volume's condition, None when no event or two conditions cover it."""
    labels = []
    for t in range(volumes):
        time = t * TR
        covering = {name for onset, duration, name in events
                    if onset + lag <= time < onset + lag + (duration if duration > 0 else TR)}
        labels.append(covering.pop() if len(covering) == 1 else None)
    return labels


def read_events(path):
    rows = []
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            fields = dict(zip(header, line.rstrip("\n").split("\t")))
            rows.append((float(fields["onset"]), float(fields["duration"]), fields["trial_type"]))
    return rows


def read_tsv(path):
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def estimator(model, loss, c, alpha):
    if model == "logistic":
        return LogisticRegression(C=c, solver="newton-cg", tol=1e-8, max_iter=1000)
    if model == "svm":
        return LinearSVC(C=c, loss=loss, tol=1e-9, max_iter=1000000, dual=True)
    return RidgeClassifier(alpha=alpha, solver="cholesky")


def check(a):
    failures = []
    mask = np.asarray(nib.load(a.mask).dataobj) != 0
    mask_flat = mask.reshape(-1, order="F")
    voxels = np.flatnonzero(mask_flat)
    events = read_events(a.events)
    features, labels, runs, vols, blocks = [], [], [], [], []
    block_of = {}
    for r, path in enumerate(a.runs):
        data = np.asarray(nib.load(path).dataobj, dtype=np.float64)
        series = data.reshape(-1, data.shape[3], order="F")[voxels].T  # T x p
        constant = np.all(series == series[0], axis=0)
        z = signal.detrend(series, axis=0, type="linear")
        z = (z - z.mean(axis=0)) / np.where(constant, 1.0, z.std(axis=0))
        z[:, constant] = 0.0
        for t, label in enumerate(volume_labels(data.shape[3], events, a.lag)):
            if label is None:
                continue
            time = t * TR
            first = next(k for k, (o, d, n) in enumerate(events) if n == label and o + a.lag <= time < o + a.lag + d)
            block_of.setdefault((r, first), len(block_of))
            features.append(z[t]), labels.append(label), runs.append(r), vols.append(t)
            blocks.append(block_of[(r, first)])
    x, y = np.array(features), np.array(labels)
    runs, blocks = np.array(runs), np.array(blocks)
    classes = sorted(set(labels))

    rows = read_tsv(a.prefix + "_predictions.tsv")
    if [(int(w["run"]) - 1, int(w["volume"]), w["label"], int(w["block"]) - 1) for w in rows] != \
            list(zip(runs.tolist(), vols, labels, blocks.tolist())):
        failures.append("the samples (run, volume, label, block) differ from the events' labelling")
        print("\n".join(failures))
        return 1
    if a.cv == "leave-one-run-out":
        splits = list(LeaveOneGroupOut().split(x, y, runs))
    elif a.cv == "blocks":
        splits = list(LeaveOneGroupOut().split(x, y, blocks))
    else:
        splits = list(KFold(n_splits=a.folds).split(x, y))
    ours_fold = np.array([int(w["fold"]) - 1 for w in rows])
    decision_cols = ["decision"] if len(classes) == 2 else [f"decision_{c}" for c in classes]
    ours_dec = np.array([[float(w[c]) for c in decision_cols] for w in rows])
    ours_pred = np.array([w["predicted"] for w in rows])
    folds = read_tsv(a.prefix + "_folds.tsv")
    worst_dec, worst_prob, near = 0.0, 0.0, 0
    sk_pred_all = np.empty(len(y), dtype=object)
    accuracies = []
    for f, (train, test) in enumerate(splits):
        if not np.array_equal(np.flatnonzero(ours_fold == f), test):
            failures.append(f"fold {f + 1}: its test samples differ from sklearn's split")
            continue
        est = estimator(a.model, a.loss, a.C, a.alpha).fit(x[train], y[train])
        dec = est.decision_function(x[test]).reshape(len(test), -1)
        scale = max(np.abs(dec).max(), 1e-12)
        worst_dec = max(worst_dec, np.abs(dec - ours_dec[test]).max() / scale)
        if a.model == "logistic":
            prob = est.predict_proba(x[test])
            ours_prob = np.array([[float(rows[i][f"probability_{c}"]) for c in classes] for i in test])
            worst_prob = max(worst_prob, np.abs(prob - ours_prob).max())
        pred = est.predict(x[test])
        sk_pred_all[test] = pred
        margin = np.abs(dec).min(axis=1) if dec.shape[1] == 1 else np.sort(dec, axis=1)[:, -1] - np.sort(dec, axis=1)[:, -2]
        differ = pred != ours_pred[test]
        near += int(np.sum(differ & (margin <= 1e-6)))
        if np.any(differ & (margin > 1e-6)):
            failures.append(f"fold {f + 1}: {int(np.sum(differ))} prediction(s) differ from sklearn's")
        acc = float(np.mean(pred == y[test]))
        bal = balanced_accuracy_score(y[test], pred)
        accuracies.append(acc)
        if near == 0 and (abs(acc - float(folds[f]["accuracy"])) > 1e-12 or
                          abs(bal - float(folds[f]["balanced_accuracy"])) > 1e-12):
            failures.append(f"fold {f + 1}: accuracy {folds[f]['accuracy']} / {folds[f]['balanced_accuracy']}, "
                            f"sklearn {acc} / {bal}")
    # Tolerances: our features are float32 (the device's) where these are float64, ~1e-7 relative per feature; on
    # these data decision values then agree within 2.4e-7 of their scale, probabilities within 1e-7 and the final
    # weights within 5e-7 (measured over the four models, both feature paths, with and without a pattern): allow ~10x.
    if worst_dec > 2e-6:
        failures.append(f"decision values differ by {worst_dec:.3g} of their scale (> 2e-6)")
    if worst_prob > 1e-6:
        failures.append(f"probabilities differ by {worst_prob:.3g} (> 1e-6)")
    conf = confusion_matrix(y, sk_pred_all.astype(str), labels=classes)
    ours_conf = np.array([[int(v) for k, v in w.items() if k != "true\\predicted"]
                          for w in read_tsv(a.prefix + "_confusion.tsv")])
    if near == 0 and not np.array_equal(conf, ours_conf):
        failures.append(f"confusion matrix {ours_conf.tolist()}, sklearn {conf.tolist()}")

    final = estimator(a.model, a.loss, a.C, a.alpha).fit(x, y)
    model = json.load(open(a.prefix + "_model.json"))
    coef = np.array(model["coef"])
    intercept = np.array(model["intercept"])
    if model["format"] != "rtfmri-decoder" or model["classes"] != classes or model["mask_voxels"] != voxels.tolist():
        failures.append("the model file's format, classes or mask voxels are wrong")
    coef_err = np.abs(coef - final.coef_).max() / np.abs(final.coef_).max()
    icpt_err = np.abs(intercept - final.intercept_).max() / max(np.abs(final.coef_).max(), 1e-12)
    weights = np.asarray(nib.load(a.prefix + "_weights.nii.gz").dataobj, dtype=np.float64)
    weights = weights.reshape(-1, coef.shape[0], order="F")[voxels].T
    map_err = np.abs(weights - coef).max() / np.abs(coef).max()
    if coef_err > 5e-6 or icpt_err > 5e-6:
        failures.append(f"final model: coef differs by {coef_err:.3g}, intercept by {icpt_err:.3g} (> 5e-6)")
    if map_err > 1e-6:
        failures.append(f"the weight maps differ from the model file's coef by {map_err:.3g}")
    mean_acc = float(np.mean(accuracies))
    if a.min_accuracy is not None and mean_acc < a.min_accuracy:
        failures.append(f"accuracy {mean_acc:.3f} below {a.min_accuracy} with the pattern")
    if a.max_accuracy is not None and mean_acc > a.max_accuracy:
        failures.append(f"accuracy {mean_acc:.3f} above {a.max_accuracy} without a pattern")
    print(f"{a.model} {a.loss if a.model == 'svm' else ''} {a.cv}: {len(y)} samples, {x.shape[1]} features, "
          f"{len(splits)} folds, accuracy {mean_acc:.3f}; decision values within {worst_dec:.2g} of their scale, "
          f"probabilities within {worst_prob:.2g}, final coef within {coef_err:.2g}, intercept {icpt_err:.2g}; "
          f"{near} prediction(s) on the boundary")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


def main():
    warnings.simplefilter("ignore")  # sklearn's convergence notes at these tolerances; the checks measure agreement
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("mode")
    p.add_argument("prefix")
    p.add_argument("model")
    p.add_argument("loss", nargs="?", default="squared_hinge")
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--events", required=True)
    p.add_argument("--mask", required=True)
    p.add_argument("--cv", default="leave-one-run-out")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--C", type=float, default=1.0)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--lag", type=float, default=LAG)
    p.add_argument("--min-accuracy", type=float)
    p.add_argument("--max-accuracy", type=float)
    return check(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
