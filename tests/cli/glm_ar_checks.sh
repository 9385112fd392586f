#!/usr/bin/env bash
# Command-line checks of `rtfmri glm --noise arP` and its first-level permutation test on real BOLD (nitime's fmri1,
# 10x10x18x40, TR 1.35 s, with a block design of our own): with the AR maps unsmoothed, t, F and the AR coefficients
# of every voxel equal statsmodels' GLSAR.iterative_fit (an independent implementation) for AR(4) and AR(2); the
# permutation test writes its files, its nulls start with the observed maxima, its FWE maps equal 1 - p recomputed in
# numpy (clusters labelled by scipy.ndimage), a seed reproduces the run; bad input gives a clear error.
#   usage: glm_ar_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3  # Debian's, with python3-scipy and python3-statsmodels (scripts/setup.sh)
BOLD=$DATA/nitime/fmri1.nii.gz
if ! "$PY" -c 'import numpy, scipy, statsmodels' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy/statsmodels (scripts/setup.sh installs python3-statsmodels)"
  exit 77
fi
if [[ ! -f $BOLD ]]; then
  echo "SKIP: $BOLD is missing (scripts/fetch_data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
CHECK="$(dirname "${BASH_SOURCE[0]}")/glm_ar_check.py"
W=$WORK
printf 'onset\tduration\ttrial_type\n5.4\t8.1\ttask\n21.6\t8.1\ttask\n37.8\t8.1\ttask\n10.8\t0\tcue\n27\t0\tcue\n43.2\t0\tcue\n' \
  >"$W/events.tsv"
GLM=("$RTFMRI" glm "$BOLD" --events "$W/events.tsv" --contrast task=task --contrast "taskcue=task; cue" --highpass 40)

expect_ok "AR(4), 3 fits, unsmoothed AR maps" 'AR\(4\) noise, 3 Cochrane-Orcutt' \
  "${GLM[@]}" --out "$W/ar4" --noise ar4 --ar-fwhm 0 --no-mask
if "$PY" "$CHECK" "$BOLD" "$W/ar4" 4 3 task task,cue; then pass "AR(4) = statsmodels GLSAR"; else fail "AR(4) vs GLSAR"; fi
expect_ok "AR(2), 5 fits" 'AR\(2\) noise, 5 Cochrane-Orcutt' \
  "${GLM[@]}" --out "$W/ar2" --noise ar2 --ar-iterations 5 --ar-fwhm 0 --no-mask
if "$PY" "$CHECK" "$BOLD" "$W/ar2" 2 5 task task,cue; then pass "AR(2) = statsmodels GLSAR"; else fail "AR(2) vs GLSAR"; fi
expect_ok "AR(4) with smoothed AR maps and data" 'AR maps smoothed 6 mm, data smoothed 4 mm' \
  "${GLM[@]}" --out "$W/smooth" --noise ar4 --fwhm 4
for f in smooth_ar.nii.gz smooth_beta.nii.gz smooth_sigma2.nii.gz smooth_mask.nii.gz smooth_glm.json \
  smooth_contrast-task_stat-t.nii.gz smooth_contrast-task_stat-effect.nii.gz smooth_contrast-taskcue_stat-F.nii.gz; do
  if [[ -s "$W/$f" ]]; then pass "wrote $f"; else fail "did not write $f"; fi
done

PERM=(--noise ar4 --fwhm 4 --permutations 60 --inference voxel --inference cluster-extent --inference cluster-mass
  --inference tfce --cluster-threshold 2.5 --batch 7)
expect_ok "permutation test, 60 permutations, every inference" 'task: [0-9]+ voxel\(s\) at FWE' \
  "${GLM[@]}" --out "$W/perm" "${PERM[@]}" --seed 11
if "$PY" "$CHECK" --permutation "$W/perm" task 60 2.5; then pass "nulls and FWE maps = numpy/scipy.ndimage recomputation"
else fail "permutation outputs"; fi
for f in perm_contrast-task_clusterm_corrp.nii.gz perm_contrast-task_tfce.nii.gz perm_contrast-task_tfce_corrp.nii.gz \
  perm_contrast-task_null_tfce.txt perm_contrast-task_null_clusterm.txt perm_contrast-taskcue_vox_corrp.nii.gz \
  perm_contrast-taskcue_null_vox.txt; do
  if [[ -s "$W/$f" ]]; then pass "wrote $f"; else fail "did not write $f"; fi
done
expect_ok "the same seed again" 'FWE' "${GLM[@]}" --out "$W/again" "${PERM[@]}" --seed 11
expect_ok "another seed" 'FWE' "${GLM[@]}" --out "$W/other" "${PERM[@]}" --seed 12
for n in vox clustere clusterm tfce; do
  if cmp -s "$W/perm_contrast-task_null_$n.txt" "$W/again_contrast-task_null_$n.txt"; then pass "seed 11 twice: same $n null"
  else fail "seed 11 twice: the $n nulls differ"; fi
done
if ! cmp -s "$W/perm_contrast-task_null_vox.txt" "$W/other_contrast-task_null_vox.txt"; then pass "another seed, another null"
else fail "seeds 11 and 12 gave the same null"; fi
expect_ok "sign flipping" 'FWE' "${GLM[@]}" --out "$W/flip" --noise ar1 --permutations 20 --permute-mode signflip

expect_error "permutations without AR noise" 'need --noise' "${GLM[@]}" --out "$W/bad" --permutations 10
expect_error "an unknown inference" 'voxel, cluster-extent' "${GLM[@]}" --out "$W/bad" --noise ar4 --permutations 10 \
  --inference clusters
expect_error "--ar1 with --noise" 'not with --noise' "${GLM[@]}" --out "$W/bad" --noise ar4 --ar1 0.2
expect_error "one permutation" 'at least 2 permutations' "${GLM[@]}" --out "$W/bad" --noise ar4 --permutations 1
"$PY" -c "import sys; sys.path.insert(0, '$(dirname "${BASH_SOURCE[0]}")'); import numpy as np; from nifti_min import write_nifti; \
write_nifti('$W/six.nii', np.random.default_rng(1).normal(100, 1, (4, 4, 3, 6)))"
printf 'onset\tduration\ttrial_type\n1\t2\ttask\n' >"$W/six.tsv"
expect_error "too few volumes for AR(4)" 'leave no degrees of freedom' "$RTFMRI" glm "$W/six.nii" --events "$W/six.tsv" \
  --contrast task=task --out "$W/bad" --noise ar4 --poly 2 --no-mask
if compgen -G "$W/bad*" >/dev/null; then fail "an error left files: $(ls "$W"/bad*)"; else pass "errors wrote nothing"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
