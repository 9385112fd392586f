#!/usr/bin/env bash
# `rtfmri connectome` spread over devices and MPI ranks gives the files of one device bit for bit, on real BOLD
# (nitime's fmri1: 1,489 brain-mask nodes, 12 chunks of 128-node tile rows): Pearson r >= 0.5, Kendall |tau| >= 0.35,
# Pearson |r| at density 0.02 and Kendall at density 0.01 (the node sample on every rank, the passes over the ranks),
# run with --devices cpu, --devices cpu/2 (two PoCL sub-devices), and under `mpirun --oversubscribe -np 2`
# (--devices cpu/2) and `-np 3` (each rank prepares the node series itself: equal to rank 0's, so not sent);
# PREFIX_edges.npz, _nodes.npz, _degree, _strength compared with cmp, the JSON without its timings and device/rank
# counts; PREFIX_chunks/ removed once written. Restart: RTFMRI_CHUNK_LIMIT=3 stops the run after three chunk files
# with an error and no output (a single process, then under mpirun); the run started again (on another split) says it
# restored them and its outputs equal the uninterrupted run's; the same through --chunk-dir (a named folder keeps its
# other files) and with `--chunk-dir none`. A bad input under mpirun ends every rank with the error, never a hang.
# `--help` names --devices and mpirun.
#   usage: scale_connectome_checks.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
PY=/usr/bin/python3
if ! command -v mpirun >/dev/null; then
  echo "SKIP: no mpirun (scripts/setup.sh installs openmpi-bin)"
  exit 77
fi
B=$DATA/nitime/fmri1.nii.gz
[[ -f $B ]] || { echo "SKIP: $B is missing (scripts/fetch_data.sh)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA in containers
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
W=$WORK
MPI=(timeout 300 mpirun --oversubscribe)  # a hang fails (status 124) instead of blocking the suite
FILES=(edges.npz nodes.npz degree.nii.gz strength.nii.gz)

# The JSON reports without the keys that may differ: timings, devices and ranks.
same_json() {
  "$PY" "$(dirname "${BASH_SOURCE[0]}")/same_json.py" "$1" "$2"
}

# Every output of prefix $1 equals the reference prefix $2's; no chunk folder is left.
same_outputs() {
  local got=$1 ref=$2 name=$3 f bad=""
  for f in "${FILES[@]}"; do
    [[ -f "${got}_$f" ]] || { bad+=" ${f} (missing)"; continue; }
    cmp -s "${got}_$f" "${ref}_$f" || bad+=" $f"
  done
  same_json "${got}_connectome.json" "${ref}_connectome.json" || bad+=" connectome.json"
  [[ -e "${got}_chunks" ]] && bad+=" (${got}_chunks left)"
  if [[ -z $bad ]]; then pass "$name: the files equal one device's"; else fail "$name: differ:$bad"; fi
}

CASES=(pearson kendall density kendall_density)
args_of() {
  case $1 in
    pearson) echo "--threshold 0.5" ;;
    kendall) echo "--method kendall --threshold 0.35 --absolute" ;;
    density) echo "--density 0.02 --absolute" ;;
    kendall_density) echo "--method kendall --density 0.01" ;;
  esac
}
for c in "${CASES[@]}"; do
  read -ra A <<<"$(args_of "$c")"
  expect_ok "$c, one device" 'edges' "$RTFMRI" --devices cpu connectome "$B" "${A[@]}" --out "$W/${c}_one"
  expect_ok "$c, two sub-devices" 'edges' "$RTFMRI" --devices cpu/2 connectome "$B" "${A[@]}" --out "$W/${c}_sub"
  same_outputs "$W/${c}_sub" "$W/${c}_one" "$c, --devices cpu/2"
  expect_ok "$c, 2 ranks" 'edges' "${MPI[@]}" -np 2 "$RTFMRI" --devices cpu/2 connectome "$B" "${A[@]}" \
    --out "$W/${c}_np2"
  same_outputs "$W/${c}_np2" "$W/${c}_one" "$c, mpirun -np 2 (--devices cpu/2)"
  expect_ok "$c, 3 ranks" 'edges' "${MPI[@]}" -np 3 "$RTFMRI" --devices cpu connectome "$B" "${A[@]}" \
    --out "$W/${c}_np3"
  same_outputs "$W/${c}_np3" "$W/${c}_one" "$c, mpirun -np 3"
done
if grep -q '"ranks": 3' "$W/pearson_np3_connectome.json"; then pass "the JSON names the ranks"
else fail "the JSON has no rank count: $(cat "$W/pearson_np3_connectome.json")"; fi
# Every rank prepared the series on the same kind of device: rank 0's did not have to be sent.
if grep -q '"series_sent": false' "$W/pearson_np3_connectome.json"; then pass "each rank's own series was rank 0's"
else fail "the series was sent (or not reported): $(cat "$W/pearson_np3_connectome.json")"; fi

# Restart: stopped after 3 chunk files, no outputs; restored by a run on another split.
chunk_files() { compgen -G "$1_chunks/chunk-*.bin" | wc -l; }
no_outputs() {
  if compgen -G "$1_*.npz" >/dev/null || compgen -G "$1_*.json" >/dev/null; then fail "$2: outputs written: $(ls "$1"_*)"
  else pass "$2: no outputs"; fi
}
expect_error "pearson stopped by RTFMRI_CHUNK_LIMIT" 'RTFMRI_CHUNK_LIMIT' env RTFMRI_CHUNK_LIMIT=3 "$RTFMRI" \
  --devices cpu connectome "$B" --threshold 0.5 --out "$W/cut"
no_outputs "$W/cut" "stopped pearson run"
[[ $(chunk_files "$W/cut") -eq 3 ]] && pass "three chunk files kept" || fail "chunk files: $(ls "$W/cut_chunks" 2>&1)"
expect_ok "pearson restarted on 2 ranks" 'restored 3 chunk' "${MPI[@]}" -np 2 "$RTFMRI" --devices cpu connectome "$B" \
  --threshold 0.5 --out "$W/cut"
same_outputs "$W/cut" "$W/pearson_one" "pearson restarted"

expect_error "kendall density stopped under mpirun" 'RTFMRI_CHUNK_LIMIT' "${MPI[@]}" -np 2 -x RTFMRI_CHUNK_LIMIT=3 \
  "$RTFMRI" --devices cpu connectome "$B" --method kendall --density 0.01 --out "$W/kcut"
no_outputs "$W/kcut" "stopped kendall density run"
expect_ok "kendall density restarted on one device" 'restored 3 chunk' "$RTFMRI" --devices cpu/2 connectome "$B" \
  --method kendall --density 0.01 --out "$W/kcut"
same_outputs "$W/kcut" "$W/kendall_density_one" "kendall density restarted"
expect_ok "chunk files of another threshold are not reused" 'edges' "$RTFMRI" --devices cpu connectome "$B" \
  --threshold 0.5 --out "$W/other"
env RTFMRI_CHUNK_LIMIT=3 "$RTFMRI" --devices cpu connectome "$B" --threshold 0.6 --out "$W/other2" >/dev/null 2>&1
out=$("$RTFMRI" --devices cpu connectome "$B" --threshold 0.5 --out "$W/other2" 2>&1)
if [[ $out == *restored* ]]; then fail "chunks of r >= 0.6 restored for r >= 0.5: $out"; else pass "no restore across thresholds"; fi
same_outputs "$W/other2" "$W/pearson_one" "pearson after another threshold's chunks"

# --chunk-dir: the chunks in a named folder (restored from there); once written, only the chunk files go and the
# folder's other files stay. `none`: no chunk files, the same outputs.
mkdir -p "$W/scratch" && echo keep >"$W/scratch/notes.txt"
env RTFMRI_CHUNK_LIMIT=3 "$RTFMRI" --devices cpu connectome "$B" --threshold 0.5 --out "$W/named" \
  --chunk-dir "$W/scratch" >/dev/null 2>&1
[[ $(compgen -G "$W/scratch/chunk-*.bin" | wc -l) -eq 3 ]] && pass "--chunk-dir holds the stopped run's chunks" \
  || fail "--chunk-dir: $(ls "$W/scratch" 2>&1)"
expect_ok "restarted from --chunk-dir" 'restored 3 chunk' "$RTFMRI" --devices cpu connectome "$B" --threshold 0.5 \
  --out "$W/named" --chunk-dir "$W/scratch"
same_outputs "$W/named" "$W/pearson_one" "pearson restarted from --chunk-dir"
if [[ -f $W/scratch/notes.txt ]] && ! compgen -G "$W/scratch/chunk-*" >/dev/null; then
  pass "--chunk-dir: chunk files removed, the folder's other file kept"
else fail "--chunk-dir after the run: $(ls "$W/scratch" 2>&1)"; fi
expect_ok "--chunk-dir none" 'edges' "$RTFMRI" --devices cpu/2 connectome "$B" --density 0.02 --absolute \
  --out "$W/nochunks" --chunk-dir none
same_outputs "$W/nochunks" "$W/density_one" "--chunk-dir none"
[[ -e none ]] && fail "--chunk-dir none made a folder named none" || pass "--chunk-dir none writes no chunk folder"

# Bad input under mpirun: the error on every rank's terminal, a non-zero exit, no hang.
expect_error "a 3D image under mpirun" 'needs a 4D series' "${MPI[@]}" -np 2 "$RTFMRI" --devices cpu connectome \
  "$W/pearson_one_degree.nii.gz" --threshold 0.5 --out "$W/bad"
no_outputs "$W/bad" "the failed mpirun run"

expect_ok "--help names --devices and mpirun" 'mpirun -np K' "$RTFMRI" connectome --help
expect_ok "--help names --devices" '--devices' "$RTFMRI" connectome --help

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
