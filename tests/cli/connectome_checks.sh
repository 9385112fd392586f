#!/usr/bin/env bash
# Command-line checks of `rtfmri connectome` on real BOLD (nitime's fmri1 and fmri2): the edges (read by
# scipy.sparse.load_npz) equal numpy.corrcoef's / scipy.stats.spearmanr's thresholded pairs except within 1e-5 of the
# threshold (a density: the k largest, the cut within 1e-6 of numpy's), r within 1e-5, degree and strength maps, the JSON; bad input gives a clear error and no output file
# (an empty mask, NaN series: tests/connectome/test_thresholded_correlation.cpp).
#   usage: connectome_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3  # Debian's, with python3-scipy (scripts/setup.sh)
if ! "$PY" -c 'import numpy, scipy' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy (scripts/setup.sh installs python3-scipy)"
  exit 77
fi
for f in fmri1 fmri2; do
  [[ -f $DATA/nitime/$f.nii.gz ]] || { echo "SKIP: $DATA/nitime/$f.nii.gz is missing (scripts/fetch_data.sh)"; exit 77; }
done
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
CHECK="$(dirname "${BASH_SOURCE[0]}")/connectome_check.py"
W=$WORK
B1=$DATA/nitime/fmri1.nii.gz
B2=$DATA/nitime/fmri2.nii.gz

expect_ok "pearson r >= 0.5 on fmri1" 'edges' "$RTFMRI" connectome "$B1" --threshold 0.5 --out "$W/p"
if "$PY" "$CHECK" "$B1" "$W/p" pearson 0.5 0; then pass "pearson = numpy.corrcoef"; else fail "pearson edges"; fi
expect_ok "spearman |r| >= 0.4 on fmri2" 'edges' "$RTFMRI" connectome "$B2" --method spearman --threshold 0.4 \
  --absolute --out "$W/s"
if "$PY" "$CHECK" "$B2" "$W/s" spearman 0.4 1; then pass "spearman = scipy.stats.spearmanr"; else fail "spearman edges"; fi

expect_ok "pearson |r|, density 0.02 on fmri1" 'edges' "$RTFMRI" connectome "$B1" --density 0.02 --absolute --out "$W/d"
if "$PY" "$CHECK" "$B1" "$W/d" pearson d0.02 1; then pass "density: the k largest |r| of numpy.corrcoef"
else fail "density edges"; fi

expect_ok "kendall |tau| >= 0.35 on fmri1" 'edges' "$RTFMRI" connectome "$B1" --method kendall --threshold 0.35 \
  --absolute --out "$W/k"
if "$PY" "$CHECK" "$B1" "$W/k" kendall 0.35 1; then pass "kendall = scipy.stats.kendalltau"; else fail "kendall edges"; fi
expect_ok "kendall tau, density 0.01 on fmri2" 'edges' "$RTFMRI" connectome "$B2" --method kendall --density 0.01 \
  --out "$W/kd"
if "$PY" "$CHECK" "$B2" "$W/kd" kendall d0.01 0; then pass "kendall density: the k largest tau"
else fail "kendall density edges"; fi

expect_error "a 3D image" 'needs a 4D series' "$RTFMRI" connectome "$W/p_degree.nii.gz" --threshold 0.5 --out "$W/bad"
expect_error "a threshold outside [-1, 1]" 'lies in \[-1, 1\]' "$RTFMRI" connectome "$B1" --threshold 1.5 --out "$W/bad"
expect_error "a density outside (0, 1]" 'lies in \(0, 1\]' "$RTFMRI" connectome "$B1" --density 1.5 --out "$W/bad"
expect_error "both --threshold and --density" 'give --threshold R or --density D' "$RTFMRI" connectome "$B1" \
  --threshold 0.5 --density 0.1 --out "$W/bad"
if compgen -G "$W/bad*" >/dev/null; then fail "an error left files: $(ls "$W"/bad*)"; else pass "errors wrote nothing"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
