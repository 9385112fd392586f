#!/usr/bin/env bash
# Command-line checks of `rtfmri glm --bayes` (docs/algorithms/bayes_glm.md) on real BOLD (nitime's fmri1): each t
# contrast's posterior mean against the AR(1) GLS estimate of `rtfmri glm --noise ar1` (Cochrane-Orcutt, itself equal to
# statsmodels' GLSAR: cli.glm_ar) — the median difference within 0.1 posterior SD, the 95th percentile within 0.35, all
# within 0.75, correlation above 0.99 — the PPM a probability that is near 1 where GLS t > 4, split-R-hat's median near
# 1 in the JSON. With --noise ar4, the same against `rtfmri glm --noise ar4` (bounds measured and stated in
# glm_bayes_check.py: 40 volumes leave AR(4) far less determined), the AR posterior means a 4D image, the JSON the
# order and each coefficient's R-hat / ESS. Bad input (--bayes with --ar1 or --noise ols, an F contrast) gives a clear
# error and no file.
#   usage: glm_bayes_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3  # Debian's, with python3-scipy (scripts/setup.sh)
BOLD=$DATA/nitime/fmri1.nii.gz
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: $PY has no numpy (scripts/setup.sh installs python3-scipy)"
  exit 77
fi
[[ -f $BOLD ]] || { echo "SKIP: $BOLD is missing (scripts/fetch_data.sh)"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
W=$WORK
printf 'onset\tduration\ttrial_type\n5.4\t8.1\ttask\n21.6\t8.1\ttask\n37.8\t8.1\ttask\n10.8\t0\tcue\n27\t0\tcue\n43.2\t0\tcue\n' \
  >"$W/events.tsv"
GLM=("$RTFMRI" glm "$BOLD" --events "$W/events.tsv" --contrast task=task --contrast cue=cue --highpass 40 --no-mask)

expect_ok "Bayesian GLM, 2 chains of 2,000 draws" 'split-R-hat median' \
  "${GLM[@]}" --bayes --draws 2000 --burn-in 500 --chains 2 --seed 3 --out "$W/b"
expect_ok "AR(1) GLS (Cochrane-Orcutt, 5 fits)" 'AR\(1\) noise' \
  "${GLM[@]}" --noise ar1 --ar-fwhm 0 --ar-iterations 5 --out "$W/g"
if "$PY" "$(dirname "${BASH_SOURCE[0]}")/glm_bayes_check.py" "$W"; then pass "posterior means = GLS within the posterior SD"
else fail "posterior vs GLS"; fi

expect_ok "Bayesian GLM, AR(4) noise, 2 chains of 2,000 draws" 'AR\(4\) noise' \
  "${GLM[@]}" --bayes --noise ar4 --draws 2000 --burn-in 500 --chains 2 --seed 3 --out "$W/b4"
expect_ok "AR(4) GLS (Cochrane-Orcutt, 5 fits)" 'AR\(4\) noise' \
  "${GLM[@]}" --noise ar4 --ar-fwhm 0 --ar-iterations 5 --out "$W/g4"
if "$PY" "$(dirname "${BASH_SOURCE[0]}")/glm_bayes_check.py" "$W" b4 g4 4; then pass "AR(4): posterior means vs GLS as stated"
else fail "AR(4) posterior vs GLS"; fi

expect_error "--bayes with --ar1" 'not with --ar1' "${GLM[@]}" --bayes --ar1 0.2 --out "$W/bad"
expect_error "--bayes with --noise ols" 'samples AR\(1\) .. AR\(4\)' "${GLM[@]}" --bayes --noise ols --out "$W/bad"
expect_error "--bayes with an F contrast" 'F contrast' "$RTFMRI" glm "$BOLD" --events "$W/events.tsv" \
  --contrast "both=task; cue" --bayes --no-mask --out "$W/bad"
if compgen -G "$W/bad*" >/dev/null; then fail "an error left files: $(ls "$W"/bad*)"; else pass "errors wrote nothing"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
