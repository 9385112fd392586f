#!/usr/bin/env bash
# Command-line checks of `rtfmri batch` (docs/scale.md): a BIDS folder of three subjects' BOLD runs (nitime's fmri1 with
# noise of a different seed each, events.tsv beside) through glm. Each subject's files equal those of `rtfmri glm` run
# by hand on that subject, and are the same with --devices cpu/2 and under mpirun -np 2; a batch stopped after one
# subject (RTFMRI_CHUNK_LIMIT) leaves no batch.json and, started again, restores that subject and ends with the same
# files; a subject whose command fails is named, the others are written, batch.json records the failure, and the batch
# run again after the input is fixed runs that subject alone. Bad lists are refused naming the line.
#   usage: scale_batch_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3
BOLD=$(realpath -m "$DATA/nitime/fmri1.nii.gz")
if ! "$PY" -c 'import numpy, nibabel' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/nibabel (scripts/setup.sh installs them)"
  exit 77
fi
[[ -f $BOLD ]] || { echo "SKIP: $BOLD is missing (scripts/fetch_data.sh)"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
W=$WORK
"$PY" - "$BOLD" "$W/bids" <<'PYEOF' || { echo "FAIL: making the BIDS folder"; exit 1; }
import sys, os, numpy as np, nibabel as nib
src, root = sys.argv[1], sys.argv[2]
img = nib.load(src)
data = np.asarray(img.dataobj, dtype=np.float32)
events = "onset\tduration\ttrial_type\n5.4\t8.1\ttask\n21.6\t8.1\ttask\n37.8\t8.1\ttask\n"
for k, sub in enumerate(["01", "02", "03"]):
    d = os.path.join(root, f"sub-{sub}", "func")
    os.makedirs(d)
    rng = np.random.default_rng(k + 1)
    noisy = data + rng.normal(0, 0.02 * float(data.std()), data.shape).astype(np.float32)
    nib.save(nib.Nifti1Image(noisy, img.affine, img.header), os.path.join(d, f"sub-{sub}_task-x_bold.nii.gz"))
    open(os.path.join(d, f"sub-{sub}_task-x_events.tsv"), "w").write(events)
PYEOF
OPTS=(--contrast task=task --highpass 40 --no-mask)
# The same JSON apart from timings, devices and input paths (the hand runs read the first BIDS copy).
same_json() {
  "$PY" "$(dirname "${BASH_SOURCE[0]}")/same_json.py" "$1" "$2" bold events
}
# Every file of subject S in batch output A equals the hand-run's (prefix P).
same_subject() {
  local a=$1 s=$2 p=$3 ok=1 f
  for f in "$p"_*; do
    local name=${f##*/}
    local g="$a/sub-$s/func/$name"
    if [[ $name == *.json ]]; then same_json "$f" "$g" || ok=0; else cmp -s "$f" "$g" || ok=0; fi
  done
  [[ $ok -eq 1 ]]
}

mkdir -p "$W/hand"
for s in 01 02 03; do
  "$RTFMRI" glm "$W/bids/sub-$s/func/sub-${s}_task-x_bold.nii.gz" --events "$W/bids/sub-$s/func/sub-${s}_task-x_events.tsv" \
    "${OPTS[@]}" --out "$W/hand/sub-${s}_task-x" >/dev/null 2>&1 || fail "glm by hand on sub-$s"
done
expect_ok "batch glm over a BIDS folder (3 subjects)" 'batch glm: 3 subject' \
  "$RTFMRI" --devices cpu batch glm --bids "$W/bids" --out "$W/one" -- "${OPTS[@]}"
for s in 01 02 03; do
  if same_subject "$W/one" "$s" "$W/hand/sub-${s}_task-x"; then pass "sub-$s: files = rtfmri glm by hand"
  else fail "sub-$s: batch files differ from glm by hand"; fi
done
if [[ -s $W/one/batch.json && ! -e $W/one/.chunks ]]; then pass "batch.json written, chunk folder removed"
else fail "batch.json / .chunks"; fi
if "$PY" -c "import json,sys; r=json.load(open('$W/one/batch.json')); sys.exit(0 if r['failed']==0 and len(r['subjects'])==3 and all(s['status']==0 for s in r['subjects']) else 1)"; then
  pass "batch.json: 3 subjects, status 0"
else fail "batch.json contents"; fi

expect_ok "batch on two PoCL sub-devices" 'batch glm: 3 subject' \
  "$RTFMRI" --devices cpu/2 batch glm --bids "$W/bids" --out "$W/two" -- "${OPTS[@]}"
for s in 01 02 03; do
  if same_subject "$W/two" "$s" "$W/hand/sub-${s}_task-x"; then pass "cpu/2 sub-$s = by hand"; else fail "cpu/2 sub-$s"; fi
done
if command -v mpirun >/dev/null && "$RTFMRI" devices 2>/dev/null | grep -q "MPI: built in"; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  expect_ok "batch under mpirun -np 2" 'batch glm: 3 subject' \
    mpirun --oversubscribe -np 2 "$RTFMRI" --devices cpu batch glm --bids "$W/bids" --out "$W/mpi" -- "${OPTS[@]}"
  for s in 01 02 03; do
    if same_subject "$W/mpi" "$s" "$W/hand/sub-${s}_task-x"; then pass "mpirun sub-$s = by hand"; else fail "mpirun sub-$s"; fi
  done
else
  echo "note: no mpirun or no MPI in this build: the MPI batch is not checked"
fi

# Stopped after one subject, then started again.
expect_error "a batch stopped after one subject" 'stopped after 1 chunk' \
  env RTFMRI_CHUNK_LIMIT=1 "$RTFMRI" --devices cpu batch glm --bids "$W/bids" --out "$W/re" -- "${OPTS[@]}"
if [[ ! -e $W/re/batch.json && -d $W/re/.chunks ]]; then pass "stopped: no batch.json, chunk files kept"
else fail "stopped batch left batch.json or no chunks"; fi
expect_ok "the batch started again restores the finished subject" 'restored 1 chunk' \
  "$RTFMRI" --devices cpu batch glm --bids "$W/bids" --out "$W/re" -- "${OPTS[@]}"
for s in 01 02 03; do
  if same_subject "$W/re" "$s" "$W/hand/sub-${s}_task-x"; then pass "restarted sub-$s = by hand"; else fail "restarted sub-$s"; fi
done

# A subject that fails: named; the others written; retried alone once fixed.
cp -r "$W/bids" "$W/bad"
good=$W/bad/sub-02/func/sub-02_task-x_bold.nii.gz
mv "$good" "$W/good02.nii.gz"
echo "not a nifti" | gzip >"$good"
expect_error "a failing subject is named" '1 of 3 subject\(s\) failed: sub-02_task-x' \
  "$RTFMRI" --devices cpu batch glm --bids "$W/bad" --out "$W/badout" -- "${OPTS[@]}"
if [[ -s $W/badout/sub-01/func/sub-01_task-x_glm.json && -s $W/badout/sub-03/func/sub-03_task-x_glm.json &&
  ! -e $W/badout/sub-02/func/sub-02_task-x_glm.json && -s $W/badout/sub-02/func/sub-02_task-x_batch.log ]]; then
  pass "the other subjects written, the failed one's log kept"
else fail "outputs around the failed subject"; fi
if "$PY" -c "import json,sys; r=json.load(open('$W/badout/batch.json')); sys.exit(0 if r['failed']==1 else 1)"; then
  pass "batch.json records the failure"; else fail "batch.json failure count"; fi
mv "$W/good02.nii.gz" "$good"
touch -d '2001-01-01' "$good"  # the key sees the fixed input: a new one
out=$("$RTFMRI" --devices cpu batch glm --bids "$W/bad" --out "$W/badout" -- "${OPTS[@]}" 2>&1)
rc=$?
if [[ $rc -eq 0 && "$out" =~ "restored 2 chunk" ]] && same_subject "$W/badout" 02 "$W/hand/sub-02_task-x"; then
  pass "the fixed subject run again alone"
else fail "rerun after the fix (rc=$rc): $out"; fi

# Bad input.
printf 'sub-01 %s\nsub-01 %s\n' "$BOLD" "$BOLD" >"$W/dup.txt"
expect_error "a duplicate ID in the list" 'dup.txt:2: subject ID sub-01 appears twice' \
  "$RTFMRI" batch glm --list "$W/dup.txt" --out "$W/x1"
printf 'sub-01 %s/missing.nii.gz\n' "$W" >"$W/missing.txt"
expect_error "a missing image in the list" 'missing.txt:1: .*missing.nii.gz does not exist' \
  "$RTFMRI" batch glm --list "$W/missing.txt" --out "$W/x2"
expect_error "--out among the command's options" '--out after' \
  "$RTFMRI" batch glm --bids "$W/bids" --out "$W/x3" -- --out elsewhere
mkdir -p "$W/empty"
expect_error "a folder that is not BIDS" 'no sub-\*' "$RTFMRI" batch normalize --bids "$W/empty" --out "$W/x4"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
