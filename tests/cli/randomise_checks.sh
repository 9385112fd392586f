#!/usr/bin/env bash
# Command-line checks of `rtfmri randomise` against independent results: data made by randomise_data.py (numpy; 10
# subjects on a 17x19x13 grid with a smooth-noise background and an effect blob). A one-sample test (-1: all 1024 sign
# flips) and a two-group design with two contrasts (design.mat/.con in FSL's VEST format: all 252 relabellings): the t
# maps equal scipy.stats' ttest_1samp / ttest_ind, and every uncorrected and FWE-corrected p value (files written as
# 1 - p, as randomise writes them) equals a brute-force enumeration in numpy; the cluster-extent and cluster-mass
# p maps (-c/-C 2.3) equal the same enumeration labelled by scipy.ndimage (26-connectivity); an F test over three
# groups (design.fts) equals scipy's f_oneway, its p values the enumeration of all 4200 relabellings; TFCE (-T) equals
# a numpy/scipy.ndimage TFCE of the same map and its FWE p maps the enumeration's. Seeds reproduce random permutations. Bad
# input gives a clear error, a non-zero exit and no output file.
#   usage: randomise_checks.sh RTFMRI WORK_DIR
set -uo pipefail
RTFMRI=$1
WORK=$2
PY=/usr/bin/python3  # Debian's, with python3-scipy (scripts/setup.sh)
if ! "$PY" -c 'import numpy, scipy' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy (scripts/setup.sh installs python3-scipy)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
DATA_PY="$(dirname "${BASH_SOURCE[0]}")/randomise_data.py"
"$PY" "$DATA_PY" make "$WORK" || { echo "FAIL: making the data"; exit 1; }
printf '/NumWaves 2\n/NumContrasts 1\n/Matrix\n0 0\n' >"$WORK/empty.fts"
D=$WORK

expect_ok "one-sample: all 1024 sign flips, exhaustively" 'exhaustive: all 1024' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/one" -1 -x -c 2.3 -C 2.3 -T -m "$D/mask.nii"
if "$PY" "$DATA_PY" onesample "$D" "$D/one"; then pass "one-sample t = scipy, p and cluster p = enumeration"; else fail "one-sample maps"; fi
expect_ok "TFCE with randomise's --tfce_H/E/C" 'randomise: 1 contrast' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/tp" -1 -T --tfce_H 1.5 --tfce_E 1 --tfce_C 6 -m "$D/mask.nii" -n 64
if "$PY" "$DATA_PY" tfceparams "$D" "$D/tp"; then pass "TFCE E 1, H 1.5, 6-connected = scipy.ndimage"
else fail "TFCE parameters"; fi
expect_ok "two groups: all 252 relabellings, exhaustively" 'exhaustive: all 252' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/two" -d "$D/design.mat" -t "$D/design.con" -x -m "$D/mask.nii"
if "$PY" "$DATA_PY" twosample "$D" "$D/two"; then pass "two-group t = scipy, p = enumeration"; else fail "two-group maps"; fi
expect_ok "three groups, F test: all 4200 relabellings" 'exhaustive: all 4200' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/three" -d "$D/design3.mat" -t "$D/design3.con" -f "$D/design3.fts" -x \
  -m "$D/mask.nii"
if "$PY" "$DATA_PY" anova "$D" "$D/three"; then pass "F = scipy's f_oneway, p = enumeration"; else fail "F maps"; fi
for f in two_tstat1.nii.gz two_vox_p_tstat1.nii.gz two_vox_corrp_tstat1.nii.gz two_tstat2.nii.gz \
  two_vox_corrp_tstat2.nii.gz two_vox_null_tstat1.txt two_randomise.json; do
  if [[ -s "$D/$f" ]]; then pass "wrote $f"; else fail "did not write $f"; fi
done

# Random permutations: the same seed gives the same files, another seed other ones.
expect_ok "random permutations with a seed" 'random, seed 5' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/s5a" -d "$D/design.mat" -t "$D/design.con" -x -n 100 --seed 5
"$RTFMRI" randomise -i "$D/data.nii" -o "$D/s5b" -d "$D/design.mat" -t "$D/design.con" -x -n 100 --seed 5 >/dev/null 2>&1
"$RTFMRI" randomise -i "$D/data.nii" -o "$D/s6" -d "$D/design.mat" -t "$D/design.con" -x -n 100 --seed 6 >/dev/null 2>&1
if cmp -s "$D/s5a_vox_null_tstat1.txt" "$D/s5b_vox_null_tstat1.txt"; then pass "same seed, same null"; else fail "same seed gave another null"; fi
if ! cmp -s "$D/s5a_vox_null_tstat1.txt" "$D/s6_vox_null_tstat1.txt"; then pass "another seed, another null"; else fail "seeds 5 and 6 gave the same null"; fi
# No inference option: the t maps only.
expect_ok "without -x only the t maps" 'randomise: 2 contrast' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/tonly" -d "$D/design.mat" -t "$D/design.con"
if [[ -s "$D/tonly_tstat1.nii.gz" && ! -e "$D/tonly_vox_p_tstat1.nii.gz" ]]; then pass "t maps only"; else fail "t-only outputs"; fi

# Bad input.
expect_error "design rows != subjects" 'short.mat: 9 rows, but the input has 10' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -d "$D/short.mat" -t "$D/design.con" -x
expect_error "rank-deficient design" 'rank-deficient' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -d "$D/collinear.mat" -t "$D/wide.con" -x
expect_error "contrast of the wrong length" 'contrasts have 3 weights but .*design.mat has 2 columns' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -d "$D/design.mat" -t "$D/wide.con" -x
expect_error "malformed VEST names file and line" 'broken.con: line 4' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -d "$D/design.mat" -t "$D/broken.con" -x
expect_error "empty mask" 'mask is empty' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -x -m "$D/empty_mask.nii"
expect_error "a NaN subject is named" 'subject 4 .*not finite at voxel \(8, 9, 6\)' \
  "$RTFMRI" randomise -i "$D/nan.nii" -o "$D/bad" -1 -x -m "$D/mask.nii"
expect_error "-1 with a design" 'either -1 or -d' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -d "$D/design.mat" -t "$D/design.con"
expect_error "a cluster threshold must be positive" 'cluster-forming threshold \(t\) must be > 0 \(got 0\)' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -c 0
# Thresholds that are no number, and a count below 1, said plainly (no 309-digit DBL_MAX).
expect_error "-c nan is refused" '--cluster-extent: must be a finite number \(got nan\)' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -c nan
expect_error "-C inf is refused" '--cluster-mass: must be a finite number \(got inf\)' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -C inf
expect_error "a negative -C is refused" 'cluster-forming threshold \(t\) must be > 0 \(got -2.3\)' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -C -2.3
expect_error "-n 0 says what it needs" '--permutations: the number of permutations must be at least 1 \(got 0\)' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -x -n 0
expect_error "--tfce_H nan is refused" '--tfce_H: must be a finite number \(got nan\)' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -T --tfce_H nan
out=$("$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -1 -x -n 0 2>&1)
if [[ "$out" =~ [0-9]{20} ]]; then fail "a 20-digit number in: $out"; else pass "no DBL_MAX in the message"; fi
expect_error "an F test selecting nothing" 'selects no contrast' \
  "$RTFMRI" randomise -i "$D/data.nii" -o "$D/bad" -d "$D/design3.mat" -t "$D/design3.con" -f "$D/empty.fts" -x
if ls "$D"/bad* >/dev/null 2>&1; then fail "a refused command left an output file"; else pass "refused commands wrote nothing"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
