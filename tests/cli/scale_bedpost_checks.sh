#!/usr/bin/env bash
# Command-line checks of `rtfmri bedpost` spread over devices and ranks (docs/scale.md) on real diffusion data (dipy's
# small_64D as a bedpostx folder, its ~200 brightest voxels, 2 fibres, short chains): the outputs of `--devices cpu`,
# `--devices cpu/2` (2 PoCL sub-devices), `mpirun -np 2` and `mpirun -np 3` in blocks of 48 voxels, and of one block
# of the whole mask, are equal bit for bit (cmp; bedpost.json equal but for timings and where it ran); a run stopped by
# RTFMRI_CHUNK_LIMIT (one process, and under mpirun) fails with no output folder and leaves its blocks in
# OUT.partial/chunks, and the same command again restores them and writes outputs equal to the uninterrupted run's,
# removing OUT.partial; blocks of another seed are not reused.
#   usage: scale_bedpost_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3
SRC=$DATA/dipy/small_64D
MASK_FRACTION=0.3  # nodif_brain_mask: b0 > this fraction of its max (~200 voxels)
ARGS=(-n 2 -b 100 -j 100 -s 10 --seed 11)
BLOCKS=(--chunk-voxels 48)
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: $PY has no numpy (scripts/setup.sh installs python3-scipy)"
  exit 77
fi
for f in "$SRC.nii" "$SRC.bval" "$SRC.bvec"; do
  [[ -f $f ]] || { echo "SKIP: $f is missing (scripts/fetch-data.sh)"; exit 77; }
done
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
require_mpi "$RTFMRI"
rm -rf "$WORK" && mkdir -p "$WORK"
W=$WORK

if "$PY" "$(dirname "${BASH_SOURCE[0]}")/bedpost_check.py" prepare "$SRC" "$W/dwi" "$MASK_FRACTION"; then
  pass "bedpostx folder from small_64D"
else
  fail "preparing $W/dwi"
fi

# same_outputs NAME A B: every file of A equal to B's (cmp), the same names, bedpost.json equal without the keys that
# name timings or devices.
same_outputs() {
  local name=$1 a=$2 b=$3 bad=""
  if [[ ! -d $a || ! -d $b ]]; then
    fail "$name: $a or $b missing"
    return
  fi
  if [[ $(ls "$a") != "$(ls "$b")" ]]; then bad="different files: $(ls "$a" | tr '\n' ' ') vs $(ls "$b" | tr '\n' ' ')"; fi
  for f in "$a"/*; do
    local g=$b/${f##*/}
    [[ ${f##*/} == bedpost.json ]] && continue
    cmp -s "$f" "$g" || bad="$bad ${f##*/}"
  done
  if ! "$PY" "$(dirname "${BASH_SOURCE[0]}")/same_json.py" "$a/bedpost.json" "$b/bedpost.json"; then bad="$bad bedpost.json"; fi
  if [[ -z $bad ]]; then pass "$name: $(ls "$a" | wc -l) files equal"; else fail "$name: $bad"; fi
}

expect_ok "--devices cpu, blocks of 48" '5 block\(s\) on 1 device' \
  "$RTFMRI" --devices cpu bedpost "$W/dwi" "${ARGS[@]}" "${BLOCKS[@]}" --out "$W/one"
expect_ok "--devices cpu/2, blocks of 48" '5 block\(s\) on 2 device' \
  "$RTFMRI" --devices cpu/2 bedpost "$W/dwi" "${ARGS[@]}" "${BLOCKS[@]}" --out "$W/two"
expect_ok "mpirun -np 2, blocks of 48" '5 block\(s\) on 2 device' \
  "${MPI[@]}" -np 2 "$RTFMRI" --devices cpu bedpost "$W/dwi" "${ARGS[@]}" "${BLOCKS[@]}" --out "$W/np2"
expect_ok "mpirun -np 3, blocks of 48" '5 block\(s\) on 3 device' \
  "${MPI[@]}" -np 3 "$RTFMRI" --devices cpu bedpost "$W/dwi" "${ARGS[@]}" "${BLOCKS[@]}" --out "$W/np3"
expect_ok "--devices cpu, the whole mask as one block" '1 block\(s\)' \
  "$RTFMRI" --devices cpu bedpost "$W/dwi" "${ARGS[@]}" --out "$W/whole"
same_outputs "--devices cpu/2 = --devices cpu" "$W/one" "$W/two"
same_outputs "mpirun -np 2 = --devices cpu" "$W/one" "$W/np2"
same_outputs "mpirun -np 3 = --devices cpu" "$W/one" "$W/np3"
same_outputs "one block = blocks of 48" "$W/one" "$W/whole"
if grep -q '"ranks": 3' "$W/np3/bedpost.json" && grep -q '"total": 3' "$W/np3/bedpost.json"; then
  pass "bedpost.json of -np 3 names 3 ranks and 3 devices"
else
  fail "bedpost.json of -np 3: $(grep -A3 '"devices"' "$W/np3/bedpost.json")"
fi

# restart NAME OUT CMD...: CMD with RTFMRI_CHUNK_LIMIT=2 fails, leaving OUT.partial/chunks and no OUT; CMD again
# restores the 2 blocks, writes OUT equal to the uninterrupted run's and removes OUT.partial.
restart() {
  local name=$1 out=$2
  shift 2
  expect_error "$name stopped after 2 blocks" 'RTFMRI_CHUNK_LIMIT' env RTFMRI_CHUNK_LIMIT=2 "$@" --out "$out"
  local kept
  kept=$(find "$out.partial/chunks" -name 'chunk-*.bin' 2>/dev/null | wc -l)
  if [[ ! -e $out && $kept -eq 2 ]]; then pass "$name: no $out, 2 block files kept"
  else fail "$name: $out exists or $kept block files kept"; fi
  expect_ok "$name started again" 'restored 2 chunk\(s\) of 5' "$@" --out "$out"
  if [[ ! -e $out.partial ]]; then pass "$name: no .partial left"; else fail "$name left $out.partial"; fi
  same_outputs "$name: restarted = uninterrupted" "$W/one" "$out"
}
restart "--devices cpu/2" "$W/restart" "$RTFMRI" --devices cpu/2 bedpost "$W/dwi" "${ARGS[@]}" "${BLOCKS[@]}"
restart "mpirun -np 2" "$W/restart-mpi" "${MPI[@]}" -np 2 "$RTFMRI" bedpost "$W/dwi" "${ARGS[@]}" "${BLOCKS[@]}"

# Blocks of another seed in OUT.partial/chunks are not reused (their key differs).
expect_error "seed 12 stopped after 2 blocks" 'RTFMRI_CHUNK_LIMIT' env RTFMRI_CHUNK_LIMIT=2 "$RTFMRI" bedpost \
  "$W/dwi" -n 2 -b 100 -j 100 -s 10 --seed 12 "${BLOCKS[@]}" --out "$W/reseed"
out=$("$RTFMRI" bedpost "$W/dwi" "${ARGS[@]}" "${BLOCKS[@]}" --out "$W/reseed" 2>&1)
if [[ $? -eq 0 && ! $out =~ restored\ [0-9]+\ chunk ]]; then pass "seed 11 over seed 12's blocks: none restored"
else fail "seed 11 over seed 12's blocks: $out"; fi
same_outputs "seed 11 over seed 12's blocks = seed 11" "$W/one" "$W/reseed"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
