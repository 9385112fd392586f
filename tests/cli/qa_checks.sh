#!/usr/bin/env bash
# Command-line checks of `rtfmri qa` (docs/algorithms/qa.md): on real BOLD (nitime's fmri1 and fmri2, nipy's
# functional) every per-volume value and the mean/SD/tSNR maps agree with the independent numpy/scipy reference
# tests/qa/qa_reference.py (qa_check.py: global signal 1e-5, quality index, slice z and maps 1e-4 relative, outlier
# counts equal), and MRIQC's image-quality metrics in the JSON (efc, fber, snr, gsr_x/_y, fwhm_*, gcor, dvars_std/_vstd)
# and the per-volume dvars_std/_vstd columns agree with tests/qa/iqm_reference.py within 1e-4 relative; on a phantom
# without motion no slice is flagged, and a slice drop-out and a spike injected into it are flagged at exactly their
# volume and slice; on a moving phantom FD after the causal notch filter and FIRMM's
# usable frames equal the reference's; bad input (a 3D file, a mask on another grid, a threshold of 0, motion of
# another length) gives a clear error and writes nothing; a session folder gets each run's files in runs/<run>/.
#   usage: qa_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3  # Debian's, with python3-scipy and python3-nibabel (scripts/setup.sh)
HERE="$(dirname "${BASH_SOURCE[0]}")"
if ! "$PY" -c 'import numpy, scipy, nibabel' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy/nibabel (scripts/setup.sh installs them)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$HERE/check_lib.sh"
W=$WORK
show() { [[ -f $1 ]] && sed "s/^/    /" "$1"; }
# rtfmri qa's slice defaults (qa_reference.py's are others), and the data held as float32, as rtfmri and AFNI hold them
REF_OPTIONS=(--history 60 --min-history 10 --z-floor 0.5 --float32)

for bold in nitime/fmri1.nii.gz nitime/fmri2.nii.gz nipy/functional.nii.gz; do
  name=$(basename "$bold" .nii.gz)
  if [[ ! -f $DATA/$bold ]]; then
    echo "note: $DATA/$bold is missing (scripts/fetch-data.sh); not checked"
    continue
  fi
  expect_ok "$name: qa" 'qa: tSNR' "$RTFMRI" qa "$DATA/$bold" --out "$W/$name"
  if "$PY" "$HERE/../qa/qa_reference.py" "$DATA/$bold" --mask "$W/${name}_qa_mask.nii.gz" --out "$W/${name}_ref.tsv" \
    "${REF_OPTIONS[@]}" --maps "$W/${name}_ref" >"$W/${name}_ref.log" 2>&1 &&
    "$PY" "$HERE/../qa/iqm_reference.py" "$DATA/$bold" "$W/${name}_qa_mask.nii.gz" >"$W/${name}_iqm_ref.json" \
      2>>"$W/${name}_ref.log" &&
    "$PY" "$HERE/qa_check.py" "$W/$name" "$W/${name}_ref.tsv" "$W/${name}_ref" "$W/${name}_iqm_ref.json" \
      >"$W/${name}_check.log" 2>&1; then
    pass "$name: every value and MRIQC's IQMs = the numpy/scipy references ($(grep -c '' "$W/${name}_qa.tsv") rows)"
  else
    fail "$name: against the reference"
    show "$W/${name}_ref.log"
    show "$W/${name}_check.log"
  fi
done

# The phantom: clean, then with a slice drop-out (volume 30, slice 14 halved) and a spike (volume 45, slice 5 x 1.5).
TEMPLATE=$DATA/mricron/ch2bet.nii.gz
if [[ -f $TEMPLATE ]]; then
  expect_ok "phantom" 'phantom:' "$RTFMRI" sim phantom --out "$W/ph" --template "$TEMPLATE" --grid 32x38x28 --voxel 5 \
    --volumes 60 --tr 1 --motion none --seed 3
  expect_ok "qa of the clean phantom" '0 slice\(s\) flagged' "$RTFMRI" qa "$W/ph/bold.nii.gz" --out "$W/clean"
  "$PY" "$HERE/qa_artefacts.py" "$W/ph/bold.nii.gz" "$W/artefacts.nii" 30:14:0.5 45:5:1.5 ||
    fail "injecting the artefacts"
  expect_ok "qa with a drop-out and a spike" '2 slice\(s\) flagged' "$RTFMRI" qa "$W/artefacts.nii" --out "$W/art"
  if "$PY" - "$W/art_qa.json" <<'PYEOF'; then
import json, sys
flagged = json.load(open(sys.argv[1]))["flagged_slices"]
where = [(f["volume"], f["slice"], f["z"]) for f in flagged]
assert [(v, s) for v, s, _ in where] == [(30, 14), (45, 5)], where
assert where[0][2] < -8 and where[1][2] > 8, where
PYEOF
    pass "the drop-out flagged at volume 30 slice 14 (z < 0), the spike at volume 45 slice 5 (z > 0), nothing else"
  else
    fail "flagged slices: $(cat "$W/art_qa.json")"
  fi
  # A moving phantom at TR 0.8 s: FD after the causal notch and FIRMM's tally against the reference too.
  expect_ok "moving phantom" 'phantom:' "$RTFMRI" sim phantom --out "$W/moving" --template "$TEMPLATE" --grid 32x38x28 \
    --voxel 5 --volumes 60 --tr 0.8 --seed 5
  expect_ok "qa with motion, notch filter" 'qa: tSNR' "$RTFMRI" qa "$W/moving/bold.nii.gz" --out "$W/mv" \
    --motion "$W/moving/motion.tsv" --fd-filter notch --tr 0.8
  "$PY" - "$W/moving/motion.tsv" "$W/moving/six.txt" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
names = ("trans_x_mm", "trans_y_mm", "trans_z_mm", "rot_x_deg", "rot_y_deg", "rot_z_deg")
open(sys.argv[2], "w").write("".join(" ".join(r[k] for k in names) + "\n" for r in rows))
PYEOF
  if "$PY" "$HERE/../qa/qa_reference.py" "$W/moving/bold.nii.gz" --mask "$W/mv_qa_mask.nii.gz" \
    --out "$W/moving_ref.tsv" "${REF_OPTIONS[@]}" --maps "$W/moving_ref" --motion "$W/moving/six.txt" --tr 0.8 \
    --fd-filter notch --causal >"$W/moving_ref.log" 2>&1 &&
    "$PY" "$HERE/qa_check.py" "$W/mv" "$W/moving_ref.tsv" "$W/moving_ref" >"$W/moving_check.log" 2>&1; then
    pass "moving phantom: FD after the notch and the usable frames = the reference, and every other value"
  else
    fail "moving phantom against the reference"
    show "$W/moving_ref.log"
    show "$W/moving_check.log"
  fi
  head -n 30 "$W/moving/motion.tsv" >"$W/short_motion.tsv"  # the header and 29 volumes
  expect_error "motion of another length" '29 rows of motion for 60 volumes' \
    "$RTFMRI" qa "$W/moving/bold.nii.gz" --out "$W/badmotion" --motion "$W/short_motion.tsv"
else
  echo "note: $TEMPLATE is missing; the phantom checks are skipped"
fi

# A recorded session's folder: each runs/<run>/bold.nii.gz, its files beside it, its motion.tsv used.
if [[ -f $TEMPLATE && -f $DATA/nitime/fmri1.nii.gz ]]; then
  mkdir -p "$W/session/runs/r1" "$W/session/runs/r2" "$W/empty_session"
  cp "$W/moving/bold.nii.gz" "$W/moving/motion.tsv" "$W/session/runs/r1/"
  cp "$DATA/nitime/fmri1.nii.gz" "$W/session/runs/r2/bold.nii.gz"
  expect_ok "qa SESSION_DIR" 'qa: run r2' "$RTFMRI" qa "$W/session"
  if "$PY" - "$W/session/runs" <<'PYEOF'; then
import json, os, sys
runs = sys.argv[1]
for run in ("r1", "r2"):
    for name in ("qa.tsv", "qa.json", "qa_mean.nii.gz", "qa_sd.nii.gz", "qa_tsnr.nii.gz", "qa_mask.nii.gz"):
        assert os.path.isfile(os.path.join(runs, run, name)), (run, name)
assert "usable" in json.load(open(os.path.join(runs, "r1", "qa.json"))), "r1's motion.tsv was used"
assert "usable" not in json.load(open(os.path.join(runs, "r2", "qa.json"))), "r2 has no motion"
assert open(os.path.join(runs, "r1", "qa.tsv")).readline().rstrip("\n").endswith("\tfd")
PYEOF
    pass "session: every run's files in runs/<run>/, r1's motion.tsv used for FD"
  else
    fail "session outputs"
  fi
  expect_error "a folder without runs" 'no runs/<run>/bold.nii.gz' "$RTFMRI" qa "$W/empty_session"
  expect_error "--out with a session" "a session's files go into" "$RTFMRI" qa "$W/session" --out "$W/bad_session"
  expect_error "a NIfTI without --out" '--out PREFIX is required' "$RTFMRI" qa "$DATA/nitime/fmri1.nii.gz"
fi

# Bad input: a clear error, nothing written.
BOLD=$DATA/nitime/fmri1.nii.gz
if [[ -f $BOLD ]]; then
  expect_error "a 3D input" 'qa needs a 4D series of at least 2 volumes' \
    "$RTFMRI" qa "$W/fmri1_qa_mean.nii.gz" --out "$W/bad3d"
  if [[ -f $TEMPLATE ]]; then
    expect_error "a mask on another grid" 'grid' "$RTFMRI" qa "$BOLD" --mask "$W/ph/brain_mask.nii.gz" --out "$W/badmask"
  fi
  expect_error "a slice threshold of 0" 'slice-threshold' "$RTFMRI" qa "$BOLD" --out "$W/badz" --slice-threshold 0
  leftovers=$(find "$W" -maxdepth 1 -name 'bad*' | wc -l)
  if [[ $leftovers -eq 0 ]]; then pass "nothing written by a refused run"; else fail "$leftovers file(s) left"; fi
fi
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
