#!/usr/bin/env bash
# Command-line checks of `rtfmri decode` on real BOLD (nitime's fmri1 and fmri2 as two runs, TR 1.35 s) with a known
# pattern added in labelled blocks and with none: every model (logistic, both SVM losses, ridge), both feature paths
# (a mask of ~1000 voxels: the device's Gram matrix; an ROI of 25: the primal) and every --cv against scikit-learn
# refitted fold by fold (decode_check.py); the permutation test (the null's first entry the observed accuracy, p from
# the file, the pattern found at p = 1/N, a seed repeated); bad input refused with a clear error and no output files.
#   usage: decode_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3  # Debian's, with python3-sklearn, python3-nibabel and python3-scipy (scripts/setup.sh)
if ! "$PY" -c 'import numpy, scipy, sklearn, nibabel' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy/sklearn/nibabel (scripts/setup.sh installs python3-sklearn)"
  exit 77
fi
if [[ ! -f $DATA/nitime/fmri1.nii.gz || ! -f $DATA/nitime/fmri2.nii.gz ]]; then
  echo "SKIP: $DATA/nitime/fmri{1,2}.nii.gz are missing (scripts/fetch_data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
CHECK="$(dirname "${BASH_SOURCE[0]}")/decode_check.py"

# pattern2: 2 classes, a pattern of 0.05 SD; pattern3: 3 classes, 0.05 SD; null: no pattern.
for set in "pattern2 2 0.05 1" "pattern3 3 0.05 2" "null 2 0 3"; do
  read -r name classes amplitude seed <<<"$set"
  mkdir -p "$WORK/$name"
  if "$PY" "$CHECK" make "$DATA" "$WORK/$name" "$classes" "$amplitude" "$seed"; then pass "made $name"
  else fail "could not make $name"; fi
done

# decode_one SET MODEL LOSS MASK CV C [CHECK OPTIONS...]
decode_one() {
  local set=$1 model=$2 loss=$3 mask=$4 cv=$5 c=$6
  shift 6
  local d=$WORK/$set out=$WORK/$set/${model}_${loss}_${mask}_${cv}
  local args=("$d/run1.nii.gz" "$d/run2.nii.gz" --events "$d/events.tsv" "$d/events.tsv" --mask "$d/$mask.nii.gz"
    --model "$model" --loss "$loss" --cv "$cv" --folds 4 --C "$c" --alpha "$c")
  expect_ok "$set: decode $model $loss $mask $cv" 'accuracy [0-9.]+, balanced accuracy' "$RTFMRI" decode "${args[@]}" --out "$out"
  if "$PY" "$CHECK" check "$out" "$model" "$loss" --runs "$d/run1.nii.gz" "$d/run2.nii.gz" --events "$d/events.tsv" \
    --mask "$d/$mask.nii.gz" --cv "$cv" --folds 4 --C "$c" --alpha "$c" "$@"; then
    pass "$set: $model $loss $mask $cv = scikit-learn"
  else
    fail "$set: $model $loss $mask $cv against scikit-learn"
  fi
}

for model in "logistic squared_hinge" "svm squared_hinge" "svm hinge" "ridge squared_hinge"; do
  read -r m l <<<"$model"
  decode_one pattern2 "$m" "$l" mask leave-one-run-out 0.01 --min-accuracy 0.9
  decode_one pattern3 "$m" "$l" mask blocks 0.05 --min-accuracy 0.8
  decode_one pattern3 "$m" "$l" roi k-fold 1
  decode_one null "$m" "$l" mask leave-one-run-out 1 --max-accuracy 0.85
  decode_one null "$m" "$l" roi blocks 1
done

# The permutation test.
P=$WORK/pattern2
PERM=("$RTFMRI" decode "$P/run1.nii.gz" "$P/run2.nii.gz" --events "$P/events.tsv" "$P/events.tsv" --mask "$P/mask.nii.gz"
  --C 0.01)
expect_ok "pattern2: 200 permutations" 'permutation p = 0.005 \(200 permutations\)' "${PERM[@]}" --permutations 200 \
  --seed 5 --out "$WORK/perm"
expect_ok "pattern2: the same seed again" 'permutation p = 0.005' "${PERM[@]}" --permutations 200 --seed 5 --out "$WORK/again"
if cmp -s "$WORK/perm_null_accuracy.txt" "$WORK/again_null_accuracy.txt"; then pass "seed 5 twice: the same null"
else fail "seed 5 twice: the nulls differ"; fi
N=$WORK/null
expect_ok "null: 300 permutations" 'permutation p = ' "$RTFMRI" decode "$N/run1.nii.gz" "$N/run2.nii.gz" --events \
  "$N/events.tsv" "$N/events.tsv" --mask "$N/roi.nii.gz" --model ridge --permutations 300 --seed 1 --out "$WORK/nullperm"
if "$PY" - "$WORK/perm" "$WORK/nullperm" <<'PYEOF'; then pass "nulls: observed first, p recomputed"; else fail "nulls"; fi
import json, sys
import numpy as np
for prefix in sys.argv[1:]:
    null = np.loadtxt(prefix + "_null_accuracy.txt")
    summary = json.load(open(prefix + "_decode.json"))
    assert abs(null[0] - summary["accuracy"]) < 1e-15, (null[0], summary["accuracy"])
    p = np.mean(null >= null[0])
    assert abs(p - summary["permutation_test"]["p_value"]) < 1e-15, (p, summary["permutation_test"])
    assert len(null) == summary["permutation_test"]["permutations"]
    assert np.all((null >= 0) & (null <= 1))
print("ok")
PYEOF

# Bad input: a clear error, and no output file.
B=$WORK/bad
mkdir -p "$B"
printf 'onset\tduration\ttrial_type\n0\t20\tonly\n30\t10\tonly\n' >"$B/one.tsv"
printf 'onset\tduration\ttrial_type\n0\t10\ta\n20\t10\tb\n' >"$B/ab.tsv"
printf 'onset\tduration\ttrial_type\n0\t10\ta\n20\t10\ta\n' >"$B/aa.tsv"
RUNS=("$P/run1.nii.gz" "$P/run2.nii.gz")
expect_error "one class" "every labelled volume is 'only': a decoder needs two classes" \
  "$RTFMRI" decode "${RUNS[@]}" --events "$B/one.tsv" "$B/one.tsv" --out "$B/x"
expect_error "an events file short" '1 file\(s\) for 2 run\(s\)' "$RTFMRI" decode "${RUNS[@]}" --events "$B/ab.tsv" --out "$B/x"
expect_error "a fold without a class" "fold 1 \(run 1\) leaves no 'b' sample to train on" \
  "$RTFMRI" decode "${RUNS[@]}" --events "$B/ab.tsv" "$B/aa.tsv" --out "$B/x"
expect_error "one run, leave-one-run-out" 'the samples come from one run' \
  "$RTFMRI" decode "$P/run1.nii.gz" --events "$B/ab.tsv" --out "$B/x"
"$PY" - "$P/run2.nii.gz" "$B" "$P/mask.nii.gz" <<'PYEOF'
import sys
import nibabel as nib
import numpy as np
img = nib.load(sys.argv[1])
data = np.asarray(img.dataobj, dtype=np.float32)
x, y, z = np.argwhere(np.asarray(nib.load(sys.argv[3]).dataobj) != 0)[10]
data[x, y, z, 7] = np.nan
print(f"NaN at voxel ({x}, {y}, {z}) of volume 7")
nib.save(nib.Nifti1Image(data, img.affine, img.header), sys.argv[2] + "/nan.nii.gz")
nib.save(nib.Nifti1Image(np.ones((5, 5, 5), np.uint8), img.affine), sys.argv[2] + "/small_mask.nii.gz")
nib.save(nib.Nifti1Image(data[..., 0], img.affine), sys.argv[2] + "/three_d.nii.gz")
nib.save(nib.Nifti1Image(np.zeros(data.shape[:3], np.uint8), img.affine), sys.argv[2] + "/empty_mask.nii.gz")
PYEOF
expect_error "a NaN in the mask" 'run 2: volume 7 has nan at voxel \([0-9]+, [0-9]+, [0-9]+\) of the mask' \
  "$RTFMRI" decode "$P/run1.nii.gz" "$B/nan.nii.gz" --events "$P/events.tsv" "$P/events.tsv" --mask "$P/mask.nii.gz" \
  --out "$B/x"
expect_error "a mask on another grid" 'grid' "$RTFMRI" decode "${RUNS[@]}" --events "$P/events.tsv" "$P/events.tsv" \
  --mask "$B/small_mask.nii.gz" --out "$B/x"
expect_error "an empty mask" 'the mask is empty' "$RTFMRI" decode "${RUNS[@]}" --events "$P/events.tsv" "$P/events.tsv" \
  --mask "$B/empty_mask.nii.gz" --out "$B/x"
expect_error "a 3D run" 'a run needs 3 or more' "$RTFMRI" decode "$B/three_d.nii.gz" --events "$P/events.tsv" --out "$B/x"
expect_error "an unknown condition" "no event has the condition 'chair'" "$RTFMRI" decode "${RUNS[@]}" --events \
  "$P/events.tsv" "$P/events.tsv" --conditions face,chair --out "$B/x"
expect_error "--permutations 1" 'at least 2' "$RTFMRI" decode "${RUNS[@]}" --events "$P/events.tsv" "$P/events.tsv" \
  --permutations 1 --out "$B/x"
expect_error "--C 0" 'must be a number > 0' "$RTFMRI" decode "${RUNS[@]}" --events "$P/events.tsv" "$P/events.tsv" \
  --C 0 --out "$B/x"
if compgen -G "$B/x*" >/dev/null; then fail "a failed decode left files: $(ls "$B")"; else pass "no files from failures"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
