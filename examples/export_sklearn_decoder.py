#!/usr/bin/env python3
"""Writes a fitted scikit-learn decoder as an rtfmri model file (format "rtfmri-decoder", version 1; the format is
documented in docs/algorithms/decoding.md), for the live decoder to apply.

    from export_sklearn_decoder import export_decoder
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=0.1)).fit(X, y)   # X: samples x mask voxels
    export_decoder(pipe, "mask.nii.gz", "decoder_model.json", lag_s=4.0)

X's columns must be the mask's non-zero voxels in NIfTI order (x fastest: np.flatnonzero(mask.reshape(-1, order="F")),
as nilearn's NiftiMasker orders them). The estimator may be LogisticRegression, LinearSVC or RidgeClassifier, alone or
after a StandardScaler (whose mean_ and scale_ become the file's feature_mean and feature_scale: the live decoder then
scales each volume's features with them instead of z-scoring per run).

    python3 export_sklearn_decoder.py --demo OUT_DIR   fits a small demo on random data and writes OUT_DIR/*.
Needs numpy, nibabel and scikit-learn."""
import json
import sys

import nibabel as nib
import numpy as np

MODEL_NAMES = {"LogisticRegression": "logistic", "RidgeClassifier": "ridge"}


def model_name(est):
    kind = type(est).__name__
    if kind == "LinearSVC":
        return "svm-hinge" if est.loss == "hinge" else "svm-squared-hinge"
    if kind not in MODEL_NAMES:
        raise ValueError(f"{kind}: export LogisticRegression, LinearSVC or RidgeClassifier")
    return MODEL_NAMES[kind]


def export_decoder(fitted, mask_path, out_path, lag_s=4.0):
    steps = fitted.steps if hasattr(fitted, "steps") else [("model", fitted)]
    scaler = next((s for _, s in steps if type(s).__name__ == "StandardScaler"), None)
    est = steps[-1][1]
    mask_img = nib.load(mask_path)
    mask = np.asarray(mask_img.dataobj) != 0
    voxels = np.flatnonzero(mask.reshape(-1, order="F"))
    coef = np.atleast_2d(est.coef_)
    if coef.shape[1] != voxels.size:
        raise ValueError(f"the model has {coef.shape[1]} features, the mask {voxels.size} voxels")
    model = {
        "format": "rtfmri-decoder",
        "version": 1,
        "model": model_name(est),
        "classes": [str(c) for c in est.classes_],
        "decision_functions": coef.shape[0],
        "grid": {"dims": list(mask.shape[:3]), "affine": mask_img.affine.tolist()},
        "mask_voxels": voxels.tolist(),
        "coef": coef.tolist(),
        "intercept": np.atleast_1d(est.intercept_).tolist(),
        "preprocessing": {"detrend_poly_order": 1, "highpass_cutoff_s": None,
                          "zscore": "feature_scale" if scaler is not None else "per run", "lag_s": lag_s, "rest": ""},
    }
    if coef.shape[0] == 1:
        model["positive_class"] = str(est.classes_[1])
    if scaler is not None:
        model["feature_mean"] = scaler.mean_.tolist()
        model["feature_scale"] = scaler.scale_.tolist()
    with open(out_path, "w") as f:
        json.dump(model, f)


def demo(out_dir):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    rng = np.random.default_rng(0)
    mask = np.zeros((8, 7, 5), np.uint8)
    mask[2:6, 2:5, 1:4] = 1
    nib.save(nib.Nifti1Image(mask, np.diag([3.0, 3.0, 3.0, 1.0])), f"{out_dir}/mask.nii.gz")
    x = rng.standard_normal((60, int(mask.sum())))
    y = np.array(["face", "house"] * 30)
    x[y == "face", :5] += 1.0
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=0.1)).fit(x, y)
    export_decoder(pipe, f"{out_dir}/mask.nii.gz", f"{out_dir}/decoder_model.json")
    print(f"wrote {out_dir}/decoder_model.json and {out_dir}/mask.nii.gz")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--demo":
        demo(sys.argv[2])
    else:
        print(__doc__)
        sys.exit(2)
