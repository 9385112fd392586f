#!/usr/bin/env bash
# Command-line checks of `rtfmri bedpost` (FSL bedpostx's ball-and-stick MCMC; docs/algorithms/bedpost.md) on real
# diffusion data, dipy's small_64D (10x10x10, one b = 0 and 64 directions at b ~ 1000; scripts/fetch-data.sh) laid out
# as bedpostx's input folder (bedpost_check.py prepare): every output under FSL's name with the right dims (merged_*:
# JUMPS / SAMPLE_EVERY volumes), the ranges (f in [0, 1], sum f <= 1, unit dyads, zeros outside the mask), means and
# dyads recomputed from the merged samples, and dyads1 against the principal eigenvector of dipy's tensor fit where
# FA > 0.5 (median angle below MAX_MEDIAN_DEG; FA > 0.3 reported too), with the device's start and --host-start;
# the same seed gives the same samples from
# data.nii and data.nii.gz, another seed other samples; dipy's "nan nan nan" b = 0 gradient gives the samples of 0 0 0
# (a log line says so); bad input fails naming the file and writes no output folder; an
# existing output folder is refused and left as it was; Ctrl-C during the chains leaves no output folder; a stale
# OUT.partial is replaced.
#   usage: bedpost_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3

# The main run: bedpostx's defaults (lower JUMPS/BURNIN here if a slow CI device needs it; the checks follow them).
FIBRES=3
BURNIN=1000
JUMPS=1250
SAMPLE_EVERY=25
SEED=8665904
MASK_FRACTION=0.05   # nodif_brain_mask: b0 > this fraction of its max
MAX_MEDIAN_DEG=3  # dyads1 vs DTI's principal eigenvector, median angle where FA > 0.5 (PoCL: 1.40; --host-start 1.34)
# The short runs (determinism, data.nii): one fibre.
SHORT=(-n 1 -b 200 -j 200 -s 10)

PY=/usr/bin/python3  # Debian's, with python3-scipy and python3-dipy (scripts/setup.sh)
SRC=$DATA/dipy/small_64D
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: $PY has no numpy (scripts/setup.sh installs python3-scipy)"
  exit 77
fi
if ! "$PY" -c 'from dipy.reconst.dti import TensorModel; from dipy.core.gradients import gradient_table' 2>/dev/null
then
  echo "SKIP: $PY cannot import dipy's TensorModel (scripts/setup.sh installs python3-dipy)"
  exit 77
fi
for f in "$SRC.nii" "$SRC.bval" "$SRC.bvec"; do
  [[ -f $f ]] || { echo "SKIP: $f is missing (scripts/fetch-data.sh)"; exit 77; }
done
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
CHECK=("$PY" "$(dirname "${BASH_SOURCE[0]}")/bedpost_check.py")
W=$WORK
SAMPLES=$((JUMPS / SAMPLE_EVERY))

# expect_error_file NAME DIR FILE_PATTERN ARGS...: exit 1..125, stderr naming the file, no DIR.bedpostX(.partial).
expect_error_file() {
  local name=$1 dir=$2 pattern=$3
  shift 3
  local err rc
  err=$("$RTFMRI" bedpost "$dir" "$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ge 1 && $rc -lt 126 && "$err" =~ $pattern ]]; then pass "$name: $err"; else fail "$name (rc=$rc): $err"; fi
  if compgen -G "$dir.bedpostX*" >/dev/null; then fail "$name left $(ls -d "$dir".bedpostX*)"; fi
}

if "${CHECK[@]}" prepare "$SRC" "$W/dwi" "$MASK_FRACTION"; then pass "FSL layout from small_64D"
else fail "preparing $W/dwi"; fi

# A .partial folder left by an interrupted run is replaced by the next run.
mkdir -p "$W/dwi.bedpostX.partial" && echo "stale" >"$W/dwi.bedpostX.partial/merged_th1samples.nii.gz"
start=$(date +%s)
expect_ok "bedpost -n $FIBRES -b $BURNIN -j $JUMPS -s $SAMPLE_EVERY (default output folder)" 'bedpost: .*voxels' \
  "$RTFMRI" bedpost "$W/dwi" -n "$FIBRES" -b "$BURNIN" -j "$JUMPS" -s "$SAMPLE_EVERY" --seed "$SEED"
echo "main run: $(($(date +%s) - start)) s"
if [[ -d $W/dwi.bedpostX && ! -e $W/dwi.bedpostX.partial ]]; then pass "dwi.bedpostX written, no .partial left"
else fail "dwi.bedpostX missing or dwi.bedpostX.partial left"; fi
if "${CHECK[@]}" check "$W/dwi" "$W/dwi.bedpostX" "$FIBRES" "$SAMPLES" "$MAX_MEDIAN_DEG"; then
  pass "outputs (names, dims, ranges, dyads) and dyads1 = DTI's principal direction where FA > 0.5"
else fail "outputs or dyads1 vs DTI"; fi

# Determinism: the same seed from data.nii.gz and from data.nii; another seed.
mkdir -p "$W/nii"
cp "$W/dwi/bvals" "$W/dwi/bvecs" "$W/dwi/nodif_brain_mask.nii.gz" "$W/nii/"
gzip -dc "$W/dwi/data.nii.gz" >"$W/nii/data.nii"
expect_ok "short run, seed 5, data.nii.gz" 'bedpost: ' "$RTFMRI" bedpost "$W/dwi" "${SHORT[@]}" --seed 5 --out "$W/s5"
expect_ok "short run, seed 5, data.nii" 'bedpost: ' "$RTFMRI" bedpost "$W/nii" "${SHORT[@]}" --seed 5 --out "$W/s5nii"
expect_ok "short run, seed 6" 'bedpost: ' "$RTFMRI" bedpost "$W/dwi" "${SHORT[@]}" --seed 6 --out "$W/s6"
if "${CHECK[@]}" same "$W/s5" "$W/s5nii"; then pass "same seed, same samples"; else fail "same seed, other samples"; fi
if "${CHECK[@]}" differ "$W/s5" "$W/s6"; then pass "another seed, other samples"; else fail "seeds 5 and 6 agree"; fi

# The host's start (--host-start) instead of the device's: outputs that pass the same checks, and bedpost.json says so.
expect_ok "--host-start" 'bedpost: .*voxels' "$RTFMRI" bedpost "$W/dwi" -n "$FIBRES" -b "$BURNIN" -j "$JUMPS" \
  -s "$SAMPLE_EVERY" --seed "$SEED" --host-start --out "$W/host"
if "${CHECK[@]}" check "$W/dwi" "$W/host" "$FIBRES" "$SAMPLES" "$MAX_MEDIAN_DEG"; then
  pass "--host-start: outputs and dyads1 = DTI's principal direction where FA > 0.5"
else fail "--host-start: outputs or dyads1 vs DTI"; fi
if grep -q '"start": "host"' "$W/host/bedpost.json" && grep -q '"start": "device' "$W/dwi.bedpostX/bedpost.json"; then
  pass "bedpost.json names the start"
else fail "bedpost.json: no or the wrong start"; fi

# Bad input: each a broken copy of dwi; the error names the file; no output folder.
for case in short-bvals:bvals nonunit-bvec:bvecs nan-bvec:bvecs no-b0:bvals empty-mask:nodif_brain_mask \
  no-bvecs:bvecs; do
  name=${case%%:*}
  file=${case##*:}
  d=$W/bad-$name
  mkdir -p "$d" && cp "$W/dwi/data.nii.gz" "$W/dwi/bvals" "$W/dwi/bvecs" "$W/dwi/nodif_brain_mask.nii.gz" "$d/"
  if "${CHECK[@]}" bad "$d" "$name"; then
    expect_error_file "$name" "$d" "bad-$name/$file" "${SHORT[@]}"
  else
    fail "could not make $d"
  fi
done

# dipy's "nan nan nan" for the b = 0 gradient (FSL writes 0 0 0): read as 0 0 0, said in the log, the same samples.
d=$W/nan-b0
mkdir -p "$d" && cp "$W/dwi/data.nii.gz" "$W/dwi/bvals" "$W/dwi/bvecs" "$W/dwi/nodif_brain_mask.nii.gz" "$d/"
if "${CHECK[@]}" bad "$d" nan-b0 && grep -q nan "$d/bvecs"; then
  expect_ok "NaN b = 0 gradients, as dipy writes them" 'nan-b0/bvecs: 1 gradient\(s\) of b = 0 volumes given as NaN' \
    "$RTFMRI" bedpost "$d" "${SHORT[@]}" --seed 5 --out "$W/s5nan"
  if "${CHECK[@]}" same "$W/s5" "$W/s5nan"; then pass "NaN b = 0 gradients: the same samples as 0 0 0"
  else fail "NaN b = 0 gradients gave other samples"; fi
else
  fail "could not make $d"
fi

# Ctrl-C during the chains: no output folder that looks complete (the outputs go to OUT.partial, renamed at the end).
# Paced by the run's own progress line, not by the clock (the bound on the wait only stops a hung run).
# (A background job of a non-interactive shell starts with SIGINT ignored: python restores the default first, as a
# terminal's foreground job has it.)
"$PY" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
  "$RTFMRI" bedpost "$W/dwi" -n 1 -b 100 -j 20000 -s 1000 --out "$W/interrupted" >"$W/interrupted.log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  grep -q 'voxels [0-9]' "$W/interrupted.log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.5
done
if grep -q 'voxels [0-9]' "$W/interrupted.log"; then
  kill -INT "$pid"
  wait "$pid"
  rc=$?
  if [[ $rc -ne 0 && ! -e $W/interrupted ]]; then pass "Ctrl-C during the chains (rc=$rc): no $W/interrupted"
  else fail "Ctrl-C (rc=$rc) left $(ls -d "$W"/interrupted* 2>/dev/null)"; fi
else
  kill "$pid" 2>/dev/null
  fail "the long run printed no progress: $(tail -3 "$W/interrupted.log")"
fi

# An existing output folder: refused, untouched.
mkdir -p "$W/dwi-x.bedpostX" && echo "keep me" >"$W/dwi-x.bedpostX/sentinel"
cp -r "$W/dwi" "$W/dwi-x"
before=$(ls -l --time-style=+%s.%N "$W/dwi-x.bedpostX")
err=$("$RTFMRI" bedpost "$W/dwi-x" "${SHORT[@]}" 2>&1 >/dev/null)
rc=$?
if [[ $rc -ge 1 && $rc -lt 126 && "$err" =~ dwi-x\.bedpostX ]]; then pass "existing output folder refused: $err"
else fail "existing output folder (rc=$rc): $err"; fi
after=$(ls -l --time-style=+%s.%N "$W/dwi-x.bedpostX")
if [[ $before == "$after" && $(cat "$W/dwi-x.bedpostX/sentinel") == "keep me" && ! -e $W/dwi-x.bedpostX.partial ]]; then
  pass "existing output folder left as it was"
else fail "existing output folder changed"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
