#!/usr/bin/env bash
# Command-line checks of `rtfmri glm --bayes` spread over devices and ranks (docs/scale.md) on real BOLD (nitime's
# fmri1, 1800 voxels, short chains): the outputs of `--devices cpu`, `--devices cpu/2` (2 PoCL sub-devices),
# `mpirun -np 2` and `mpirun -np 3` in blocks of 250 voxels, and of blocks sized from the devices, are equal bit for bit
# (cmp; PREFIX_glm.json equal but for where it ran), likewise for AR(3) noise; a run stopped by RTFMRI_CHUNK_LIMIT (one
# process, and under mpirun) fails with no outputs and leaves its blocks in PREFIX_chunks/, and the same command again
# restores them, writes outputs equal to the uninterrupted run's and removes PREFIX_chunks/; blocks of another seed
# are not reused.
#   usage: scale_glm_bayes_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3
BOLD=$DATA/nitime/fmri1.nii.gz
[[ -f $BOLD ]] || { echo "SKIP: $BOLD is missing (scripts/fetch_data.sh)"; exit 77; }
if ! "$PY" -c 'import json' 2>/dev/null; then
  echo "SKIP: no $PY"
  exit 77
fi
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
require_mpi "$RTFMRI"
rm -rf "$WORK" && mkdir -p "$WORK"
W=$WORK
printf 'onset\tduration\ttrial_type\n5.4\t8.1\ttask\n21.6\t8.1\ttask\n37.8\t8.1\ttask\n10.8\t0\tcue\n27\t0\tcue\n43.2\t0\tcue\n' \
  >"$W/events.tsv"
GLM=(glm "$BOLD" --events "$W/events.tsv" --contrast task=task --contrast cue=cue --highpass 40 --no-mask --bayes
  --draws 64 --burn-in 16 --chains 2)
BLOCKS=(--chunk-voxels 250)

# same_outputs NAME A B: every file A_* equal to B_* (cmp), the same names, A_glm.json equal without the keys that
# name timings or devices.
same_outputs() {
  local name=$1 a=$2 b=$3 bad="" count=0
  local files_a files_b
  files_a=$(cd "$W" && ls -d "${a##*/}"_* 2>/dev/null | sed "s/^${a##*/}_//")
  files_b=$(cd "$W" && ls -d "${b##*/}"_* 2>/dev/null | sed "s/^${b##*/}_//")
  if [[ -z $files_a || $files_a != "$files_b" ]]; then
    fail "$name: different files: $(echo "$files_a" | tr '\n' ' ') vs $(echo "$files_b" | tr '\n' ' ')"
    return
  fi
  for f in $files_a; do
    count=$((count + 1))
    [[ $f == glm.json ]] && continue
    cmp -s "${a}_$f" "${b}_$f" || bad="$bad $f"
  done
  if ! "$PY" "$(dirname "${BASH_SOURCE[0]}")/same_json.py" "${a}_glm.json" "${b}_glm.json"; then bad="$bad glm.json"; fi
  if [[ -z $bad ]]; then pass "$name: $count files equal"; else fail "$name: $bad"; fi
}

expect_ok "--devices cpu, blocks of 250" 'task: .*split-R-hat' \
  "$RTFMRI" --devices cpu "${GLM[@]}" --seed 3 "${BLOCKS[@]}" --out "$W/one"
expect_ok "--devices cpu/2, blocks of 250" 'task: .*split-R-hat' \
  "$RTFMRI" --devices cpu/2 "${GLM[@]}" --seed 3 "${BLOCKS[@]}" --out "$W/two"
expect_ok "mpirun -np 2, blocks of 250" 'task: .*split-R-hat' \
  "${MPI[@]}" -np 2 "$RTFMRI" --devices cpu "${GLM[@]}" --seed 3 "${BLOCKS[@]}" --out "$W/np2"
expect_ok "mpirun -np 3, blocks of 250" 'task: .*split-R-hat' \
  "${MPI[@]}" -np 3 "$RTFMRI" --devices cpu "${GLM[@]}" --seed 3 "${BLOCKS[@]}" --out "$W/np3"
expect_ok "--devices cpu/2, blocks from the devices" 'task: .*split-R-hat' \
  "$RTFMRI" --devices cpu/2 "${GLM[@]}" --seed 3 --out "$W/auto"
same_outputs "--devices cpu/2 = --devices cpu" "$W/one" "$W/two"
same_outputs "mpirun -np 2 = --devices cpu" "$W/one" "$W/np2"
same_outputs "mpirun -np 3 = --devices cpu" "$W/one" "$W/np3"
same_outputs "blocks from the devices = blocks of 250" "$W/one" "$W/auto"
if grep -q '"ranks": 3' "$W/np3_glm.json" && grep -q '"chunks": 8' "$W/np3_glm.json"; then
  pass "np3_glm.json names 3 ranks and 8 blocks"
else
  fail "np3_glm.json: $(grep -A4 '"devices"' "$W/np3_glm.json")"
fi
if compgen -G "$W/*_chunks" >/dev/null; then fail "chunk folders left: $(ls -d "$W"/*_chunks)"
else pass "no chunk folder left"; fi

expect_ok "AR(3), --devices cpu" 'AR\(3\) noise' \
  "$RTFMRI" --devices cpu "${GLM[@]}" --noise ar3 --seed 4 "${BLOCKS[@]}" --out "$W/ar3"
expect_ok "AR(3), mpirun -np 2 --devices cpu/2" 'AR\(3\) noise' \
  "${MPI[@]}" -np 2 "$RTFMRI" --devices cpu/2 "${GLM[@]}" --noise ar3 --seed 4 "${BLOCKS[@]}" --out "$W/ar3np2"
same_outputs "AR(3): 2 ranks x 2 sub-devices = one device" "$W/ar3" "$W/ar3np2"

# restart NAME PREFIX CMD...: CMD with RTFMRI_CHUNK_LIMIT=2 fails, leaving PREFIX_chunks/ and no outputs; CMD again
# restores the 2 blocks, writes outputs equal to the uninterrupted run's and removes PREFIX_chunks/.
restart() {
  local name=$1 out=$2
  shift 2
  expect_error "$name stopped after 2 blocks" 'RTFMRI_CHUNK_LIMIT' env RTFMRI_CHUNK_LIMIT=2 "$@" --out "$out"
  local kept
  kept=$(find "${out}_chunks" -name 'chunk-*.bin' 2>/dev/null | wc -l)
  if [[ $kept -eq 2 ]] && ! compgen -G "${out}_*.nii.gz" >/dev/null && [[ ! -e ${out}_glm.json ]]; then
    pass "$name: no outputs, 2 block files kept"
  else
    fail "$name: $kept block files kept; $(ls -d "${out}"_* 2>/dev/null | tr '\n' ' ')"
  fi
  expect_ok "$name started again" 'restored 2 chunk\(s\) of 8' "$@" --out "$out"
  if [[ ! -e ${out}_chunks ]]; then pass "$name: no ${out##*/}_chunks left"; else fail "$name left ${out}_chunks"; fi
  same_outputs "$name: restarted = uninterrupted" "$W/one" "$out"
}
restart "--devices cpu/2" "$W/restart" "$RTFMRI" --devices cpu/2 "${GLM[@]}" --seed 3 "${BLOCKS[@]}"
restart "mpirun -np 3" "$W/restartmpi" "${MPI[@]}" -np 3 "$RTFMRI" "${GLM[@]}" --seed 3 "${BLOCKS[@]}"

# Blocks of another seed in PREFIX_chunks/ are not reused (their key differs).
expect_error "seed 5 stopped after 2 blocks" 'RTFMRI_CHUNK_LIMIT' env RTFMRI_CHUNK_LIMIT=2 "$RTFMRI" "${GLM[@]}" \
  --seed 5 "${BLOCKS[@]}" --out "$W/reseed"
out=$("$RTFMRI" "${GLM[@]}" --seed 3 "${BLOCKS[@]}" --out "$W/reseed" 2>&1)
if [[ $? -eq 0 && ! $out =~ restored\ [0-9]+\ chunk ]]; then pass "seed 3 over seed 5's blocks: none restored"
else fail "seed 3 over seed 5's blocks: $out"; fi
same_outputs "seed 3 over seed 5's blocks = seed 3" "$W/one" "$W/reseed"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
