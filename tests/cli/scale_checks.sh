#!/usr/bin/env bash
# Command-line checks of the scale-out itself (docs/scale.md), with randomise as the command: `rtfmri devices` reports
# MPI and what --devices opens (two PoCL sub-devices); bad --devices specs are refused; under mpirun, ranks that do not
# see the inputs (each rank in its own working folder, relative paths: as hosts without a shared file system) get rank
# 0's files and the outputs, written by rank 0 alone, equal one process's; a rank that fails (a device it does not have)
# ends the whole job with an error naming that rank and host, never a hang, and nothing is written; a command that
# does not spread (smooth) runs on rank 0 alone and writes its file once.
#   usage: scale_checks.sh RTFMRI WORK_DIR
set -uo pipefail
RTFMRI=$1
WORK=$2
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy, scipy' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy (scripts/setup.sh installs python3-scipy)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
mkdir -p "$WORK/data"
"$PY" "$(dirname "${BASH_SOURCE[0]}")/randomise_data.py" make "$WORK/data" || { echo "FAIL: making the data"; exit 1; }
W=$WORK

expect_ok "--devices cpu/2 opens two sub-devices" 'part 2 of 2' "$RTFMRI" --devices cpu/2 devices
expect_error "--devices with a bad count" "after '/' is not a number of sub-devices" "$RTFMRI" --devices cpu/x devices
expect_error "--devices naming no device" "no OpenCL device matches '7:7'" "$RTFMRI" --devices 7:7 devices
RAND=(randomise -i data/data.nii -m data/mask.nii -1 -x -c 2.3 -n 1100 --seed 4)
(cd "$W" && "$RTFMRI" --devices cpu "${RAND[@]}" -o one >/dev/null 2>&1) || fail "randomise in one process"

if ! command -v mpirun >/dev/null || ! "$RTFMRI" devices 2>/dev/null | grep -q "MPI: built in"; then
  echo "note: no mpirun or no MPI in this build: the MPI checks are skipped"
  echo "$failures failure(s)"
  [[ $failures -eq 0 ]]
  exit $?
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no cross-memory attach in containers
expect_ok "rtfmri devices under mpirun" 'MPI: built in' mpirun --oversubscribe -np 2 "$RTFMRI" devices

# Ranks 1 and 2 in a folder without the inputs: rank 0 (in $W) sends them.
mkdir -p "$W/elsewhere"
expect_ok "ranks that do not see the inputs (MPMD, own working folders)" 'randomise: 1 contrast' \
  mpirun --oversubscribe -np 1 --wdir "$W" "$RTFMRI" --devices cpu "${RAND[@]}" -o multi : \
  -np 2 --wdir "$W/elsewhere" "$RTFMRI" --devices cpu "${RAND[@]}" -o multi
ok=1
for f in "$W"/one_*; do
  g=$W/multi_${f##*/one_}
  case $f in
    *.json) "$PY" "$(dirname "${BASH_SOURCE[0]}")/same_json.py" "$f" "$g" || ok=0 ;;
    *) cmp -s "$f" "$g" || ok=0 ;;
  esac
done
if [[ $ok -eq 1 ]]; then pass "their outputs equal one process's"; else fail "MPMD outputs differ"; fi
if [[ -z $(ls "$W/elsewhere") ]]; then pass "nothing written by the other ranks"; else fail "other ranks wrote: $(ls "$W/elsewhere")"; fi

# A rank whose device is missing ends the job, naming itself; nothing written.
expect_error "a failing rank ends the job" 'rank 1 of 2 on .*no OpenCL device matches' \
  timeout 300 mpirun --oversubscribe -np 1 --wdir "$W" "$RTFMRI" --devices cpu "${RAND[@]}" -o failed : \
  -np 1 --wdir "$W" "$RTFMRI" --devices 7:7 "${RAND[@]}" -o failed
if ! ls "$W"/failed_* >/dev/null 2>&1; then pass "no output from the failed job"; else fail "the failed job wrote files"; fi

# A command that does not spread: rank 0 alone.
expect_ok "smooth under mpirun: rank 0 alone" 'rank 0 runs it alone' \
  mpirun --oversubscribe -np 2 "$RTFMRI" --device cpu smooth "$W/data/data.nii" "$W/smoothed.nii.gz" --fwhm 4
"$RTFMRI" --device cpu smooth "$W/data/data.nii" "$W/smoothed1.nii.gz" --fwhm 4 >/dev/null 2>&1
if cmp -s "$W/smoothed.nii.gz" "$W/smoothed1.nii.gz"; then pass "its file = one process's"; else fail "smooth under mpirun"; fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
