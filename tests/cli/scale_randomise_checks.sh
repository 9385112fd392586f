#!/usr/bin/env bash
# `rtfmri randomise` spread over devices and MPI ranks gives the files of one device bit for bit: data made by
# randomise_data.py (10 subjects on a 17x19x13 grid), a one-sample test (-1 -x -c -T, 1000 of the 1024 sign flips drawn
# with a seed: a chunk of 512, then four of 128, the last short) and three groups with two t contrasts and an F test
# (-x -C, 1100 of the 4200 relabellings: six chunks), run with --devices cpu, --devices cpu/2 (two PoCL sub-devices),
# and under `mpirun --oversubscribe -np 2` and `-np 3`; every output compared with cmp, the JSON report without its
# timings and device/rank counts. Restart: RTFMRI_CHUNK_LIMIT=1 stops the run after one chunk file with an
# error and no output; chunk files of another seed are not reused; the run started again says it restored the chunk,
# its outputs equal the uninterrupted run's, and PREFIX_chunks/ is gone; a bad RTFMRI_CHUNK_LIMIT is refused.
#   usage: scale_randomise_checks.sh RTFMRI WORK_DIR
set -uo pipefail
RTFMRI=$1
WORK=$2
PY=/usr/bin/python3  # Debian's, with python3-numpy (scripts/setup.sh)
if ! "$PY" -c 'import numpy, scipy' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy (scripts/setup.sh installs python3-scipy)"
  exit 77
fi
if ! command -v mpirun >/dev/null; then
  echo "SKIP: no mpirun (scripts/setup.sh installs openmpi-bin)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA in containers
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
"$PY" "$(dirname "${BASH_SOURCE[0]}")/randomise_data.py" make "$WORK" || { echo "FAIL: making the data"; exit 1; }
D=$WORK
ONE=(randomise -i "$D/data.nii" -m "$D/mask.nii" -1 -x -c 2.3 -T -n 1000 --seed 7)
THREE=(randomise -i "$D/data.nii" -m "$D/mask.nii" -d "$D/design3.mat" -t "$D/design3.con" -f "$D/design3.fts" -x
  -C 2.0 -n 1100 --seed 3)

# The JSON reports without the keys that may differ: timings, device and rank counts.
same_json() {
  "$PY" "$(dirname "${BASH_SOURCE[0]}")/same_json.py" "$1" "$2"
}

# Every file of prefix $1 equals the one of prefix $2 (the reference).
same_outputs() {
  local got=$1 ref=$2 name=$3 f other n=0 bad=""
  for f in "$ref"_*; do
    [[ -f "$f" ]] || continue
    other="$got${f#"$ref"}"
    n=$((n + 1))
    if [[ "$f" == *.json ]]; then
      same_json "$other" "$f" || bad+=" $(basename "$other")"
    else
      cmp -s "$other" "$f" || bad+=" $(basename "$other")"
    fi
  done
  if [[ $n -ge 8 && -z "$bad" ]]; then pass "$name: $n files identical"; else fail "$name: $n files, differing:$bad"; fi
}

for test in ONE THREE; do
  declare -n cmd=$test
  ref="$D/${test,,}_cpu"
  expect_ok "$test on --devices cpu" 'randomise: [0-9]+ contrast' "$RTFMRI" --devices cpu "${cmd[@]}" -o "$ref"
  expect_ok "$test on --devices cpu/2" 'randomise: [0-9]+ contrast' \
    "$RTFMRI" --devices cpu/2 "${cmd[@]}" -o "$D/${test,,}_cpu2"
  same_outputs "$D/${test,,}_cpu2" "$ref" "$test: 2 sub-devices = 1 device"
  for np in 2 3; do
    expect_ok "$test under mpirun -np $np" 'randomise: [0-9]+ contrast' \
      mpirun --oversubscribe -np "$np" "$RTFMRI" --devices cpu "${cmd[@]}" -o "$D/${test,,}_np$np"
    same_outputs "$D/${test,,}_np$np" "$ref" "$test: $np ranks = 1 rank"
  done
  if [[ -e "${ref}_chunks" ]]; then fail "$test: ${ref}_chunks/ left behind"; else pass "$test: chunk folder removed"; fi
  unset -n cmd
done
if "$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['ranks']==3 and r['devices']==3 else 1)" \
  "$D/one_np3_randomise.json"; then
  pass "the report counts 3 ranks and 3 devices"
else
  fail "the report's rank/device counts"
fi

# Restart from the finished chunks.
R="$D/restart"
RTFMRI_CHUNK_LIMIT=1 "$RTFMRI" --devices cpu "${ONE[@]}" --seed 8 -o "$R" >/dev/null 2>&1
out=$(RTFMRI_CHUNK_LIMIT=1 "$RTFMRI" --devices cpu "${ONE[@]}" -o "$R" 2>&1)
rc=$?
if [[ $rc -ge 1 && $rc -lt 126 && "$out" =~ RTFMRI_CHUNK_LIMIT ]]; then pass "RTFMRI_CHUNK_LIMIT=1 stops after one chunk"
else fail "the limited run (rc=$rc): $out"; fi
if [[ "$out" =~ restored ]]; then fail "another seed's chunk was reused: $out"; else pass "another seed's chunk not reused"; fi
if ls "$R"_*.nii.gz "$R"_*.txt "$R"_*.json >/dev/null 2>&1; then fail "a stopped run wrote outputs"
else pass "a stopped run wrote no output"; fi
if [[ -d "${R}_chunks" ]]; then pass "a stopped run kept ${R}_chunks/"; else fail "no ${R}_chunks/ after the stop"; fi
out=$("$RTFMRI" --devices cpu/2 "${ONE[@]}" -o "$R" 2>&1)
rc=$?
if [[ $rc -eq 0 && "$out" =~ restored\ 1\ chunk ]]; then pass "the rerun restored the seed's one chunk"
else fail "rerun (rc=$rc): $out"; fi
same_outputs "$R" "$D/one_cpu" "restarted = uninterrupted"
if [[ -e "${R}_chunks" ]]; then fail "${R}_chunks/ left behind"; else pass "chunk folder removed after the restart"; fi
# A test hook's bad value is refused by name, before any chunk, and writes nothing.
out=$(RTFMRI_CHUNK_LIMIT=two "$RTFMRI" --devices cpu "${ONE[@]}" -o "$D/badlimit" 2>&1)
rc=$?
if [[ $rc -ge 1 && $rc -lt 126 && "$out" =~ RTFMRI_CHUNK_LIMIT=two ]] && ! compgen -G "$D/badlimit*" >/dev/null; then
  pass "RTFMRI_CHUNK_LIMIT=two refused"
else fail "RTFMRI_CHUNK_LIMIT=two (rc=$rc): $out"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
