#!/usr/bin/env bash
# End-to-end checks of the scanner path with the real binaries, as processes (`rtfmri run --no-device` recording,
# `rtfmri scanner watch`, `rtfmri sim dicom`, an AFNI real-time client):
#  1. a random integer series written as each vendor's DICOM (siemens-mosaic, ge, enhanced) by `sim dicom`, watched
#     and sent by `scanner watch`, is recorded as runs/series-NNN/bold.nii.gz equal to it voxel for voxel, with its TR
#     and its affine within 1e-4 mm;
#  2. Ctrl-C to `scanner watch` while `sim dicom` writes: it exits 0, prints its report, every volume it sent is in the
#     server's journal; Ctrl-C to `sim dicom` (at real-time pace, and as fast as possible, mid-file) leaves only
#     complete files (whole GE volumes), as many as it says; a second watch completes the run, each volume once;
#  3. bad input: a text file, an 8 GiB file that is not DICOM (sparse; the watch under `ulimit -v` 2 GiB, which reading
#     it whole cannot fit) and a truncated DICOM in the watched folder are each named in a log line while the watch
#     goes on and records a good series written after them; a missing folder and a non-integer NIfTI are clear errors
#     (the latter writes nothing, even when only its last volume is bad);
#  4. `rtfmri run --afni-rt --no-listen` fed by afni_rt_client.py (AFNI's protocol as Dimon/rtfeedme speak it): two
#     runs on one data connection (3D+timing short ended by the end marker, 2D+zt big-endian float oblique ended by
#     the disconnect) recorded with the voxels sent and the affine the headers imply (docs/afni_rt.md).
# Pacing follows the processes' progress (log lines, journal entries, files); the waits' bounds only turn a hang into a
# failure. Python: standard library only (nifti_stdlib.py, dicom_complete.py, afni_rt_client.py).
#   usage: scanner_checks.sh RTFMRI WORK_DIR
set -uo pipefail
RTFMRI=$1
WORK=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 missing"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$HERE/check_lib.sh"
nifti() { python3 "$HERE/nifti_stdlib.py" "$@"; }
PATIENCE=60  # seconds: the bound of every wait

STARTED=()
cleanup() {
  for pid in "${STARTED[@]}"; do kill -9 "$pid" 2>/dev/null; done
}
trap cleanup EXIT
running() { kill -0 "$1" 2>/dev/null; }
stopped() { ! kill -0 "$1" 2>/dev/null; }
in_log() { grep -Eq "$2" "$1" 2>/dev/null; }
journal_entries() {
  local n
  n=$(grep -c '"index"' "$1" 2>/dev/null)
  echo "${n:-0}"
}
at_least_entries() { [[ $(journal_entries "$1") -ge $2 ]]; }
lines_at_least() {
  local n
  n=$(grep -Ec "$2" "$1" 2>/dev/null)
  [[ ${n:-0} -ge $3 ]]
}
# finish PID NAME: wait (bounded) for a process to end; sets RC (124 when it did not end)
finish() {
  if wait_for "$PATIENCE" stopped "$1"; then
    wait "$1"
    RC=$?
  else
    RC=124
    echo "$2 did not end within $PATIENCE s"
  fi
}
show() { for f in "$@"; do echo "--- $f"; tail -15 "$f"; done; }
# start_server NAME ARGS...: `rtfmri run --no-device` recording into $WORK/NAME, on a free port; sets SERVER, ENDPOINT
start_server() {
  local name=$1
  shift
  "$RTFMRI" run --no-device --no-outputs --listen 'tcp://127.0.0.1:*' --session-dir "$WORK/$name" "$@" \
    >"$WORK/$name.log" 2>&1 &
  SERVER=$!
  STARTED+=("$SERVER")
  if ! wait_for "$PATIENCE" in_log "$WORK/$name.log" "listening on"; then
    fail "$name did not start"
    show "$WORK/$name.log"
    return 1
  fi
  ENDPOINT=$(sed -n 's/.*listening on \(tcp:[^ ]*\).*/\1/p' "$WORK/$name.log" | head -1)
}

# ---- 1. each vendor's layout, recorded equal to the NIfTI written ----------------------------------------------------
nifti write "$WORK/series.nii" --dims 23 19 7 5 --tr 1.5 --oblique --seed 11
start_server server1 --exit-after-runs 3 || exit 1
series=0
for vendor in siemens-mosaic ge enhanced; do
  series=$((series + 1))
  run=$(printf 'series-%03d' "$series")
  mkdir -p "$WORK/export-$vendor"
  "$RTFMRI" scanner watch "$WORK/export-$vendor" --to "$ENDPOINT" --volumes 5 --stop-after 5 \
    >"$WORK/watch-$vendor.log" 2>&1 &
  watch=$!
  STARTED+=("$watch")
  "$RTFMRI" sim dicom "$WORK/series.nii" --out "$WORK/export-$vendor" --vendor "$vendor" --speed 0 --series "$series" \
    >"$WORK/sim-$vendor.log" 2>&1 || fail "$vendor: sim dicom failed: $(cat "$WORK/sim-$vendor.log")"
  finish "$watch" "scanner watch ($vendor)"
  if [[ $RC -eq 0 ]] && in_log "$WORK/watch-$vendor.log" "5 volumes sent, 5 acknowledged; 0 files skipped" &&
    in_log "$WORK/watch-$vendor.log" "run $run closed"; then
    pass "$vendor: scanner watch sent, had acknowledged and closed 5 volumes"
  else
    fail "$vendor: scanner watch (rc=$RC)"
    show "$WORK/watch-$vendor.log"
  fi
done
finish "$SERVER" "server1"
if [[ $RC -eq 0 ]]; then pass "server stopped after its 3 runs"; else fail "server1 exit status $RC"; fi
series=0
for vendor in siemens-mosaic ge enhanced; do
  series=$((series + 1))
  run=$(printf 'series-%03d' "$series")
  if out=$(nifti compare "$WORK/server1/runs/$run/bold.nii.gz" "$WORK/series.nii" 2>&1); then
    pass "$vendor: $out"
  else
    fail "$vendor: recorded run differs from the NIfTI written: $out"
  fi
done

# ---- 3 (started now, finished last: a truncated file is named once the watch gives up on it, --give-up 2 s on) -------
mkdir -p "$WORK/bad"
echo "not an image" >"$WORK/bad/notes.txt"
truncate -s 8G "$WORK/bad/console_dump.raw"  # sparse: costs no disk
head -c 3000 "$WORK/export-siemens-mosaic/001_000001_000003.dcm" >"$WORK/bad/001_000009_000001.dcm"
start_server server3 --exit-after-runs 1 || exit 1
(ulimit -v $((2 << 20)) && exec "$RTFMRI" scanner watch "$WORK/bad" --to "$ENDPOINT" --volumes 5 --give-up 2) \
  >"$WORK/watch-bad.log" 2>&1 &
BAD_WATCH=$!
BAD_SERVER=$SERVER
STARTED+=("$BAD_WATCH")
if wait_for "$PATIENCE" in_log "$WORK/watch-bad.log" "skipped: .*/bad/notes\.txt: not a DICOM file"; then
  pass "bad input: the text file is named in a log line"
else
  fail "bad input: no log line names notes.txt"
  show "$WORK/watch-bad.log"
fi
if wait_for "$PATIENCE" in_log "$WORK/watch-bad.log" "skipped: .*/bad/console_dump\.raw: not a DICOM file"; then
  pass "bad input: the 8 GiB file is skipped as not DICOM, named in a log line (under ulimit -v 2 GiB)"
else
  fail "bad input: no log line names console_dump.raw as not DICOM"
  show "$WORK/watch-bad.log"
fi
"$RTFMRI" sim dicom "$WORK/series.nii" --out "$WORK/bad" --speed 0 --series 2 >"$WORK/sim-bad.log" 2>&1 ||
  fail "bad input: sim dicom failed: $(cat "$WORK/sim-bad.log")"

# ---- 2. Ctrl-C to scanner watch and to sim dicom -----------------------------------------------------------------
# 400 volumes at TR 0.25 s: the simulator would write for 100 s; it is stopped by the check long before.
nifti write "$WORK/long.nii" --dims 23 19 7 400 --tr 0.25 --oblique --seed 12
start_server server2 --exit-after-runs 1 || exit 1
JOURNAL="$WORK/server2/runs/series-001/journal.jsonl"
mkdir -p "$WORK/export-live"
"$RTFMRI" sim dicom "$WORK/long.nii" --out "$WORK/export-live" --vendor ge --speed 1 >"$WORK/sim-live.log" 2>&1 &
SIM=$!
STARTED+=("$SIM")
"$RTFMRI" scanner watch "$WORK/export-live" --to "$ENDPOINT" >"$WORK/watch-live1.log" 2>&1 &
watch=$!
STARTED+=("$watch")
wait_for "$PATIENCE" at_least_entries "$JOURNAL" 3 || fail "Ctrl-C watch: fewer than 3 volumes recorded"
running "$SIM" || fail "Ctrl-C watch: the simulator ended before the Ctrl-C; nothing was tested"
kill -INT "$watch"
finish "$watch" "scanner watch (Ctrl-C)"
sent=$(grep -Eo 'series-001 volume [0-9]+ \(' "$WORK/watch-live1.log" | grep -Eo '[0-9]+ \(' | tr -d ' (' | sort -n)
acked=$(sed -n 's/.* \([0-9]*\) acknowledged;.*/\1/p' "$WORK/watch-live1.log")
if [[ $RC -eq 0 ]] && in_log "$WORK/watch-live1.log" "^scanner watch: .* volumes sent, [0-9]+ acknowledged" &&
  in_log "$WORK/watch-live1.log" "run left open: series-001"; then
  pass "Ctrl-C: scanner watch exits 0 with its report ($acked acknowledged, run left open)"
else
  fail "Ctrl-C: scanner watch (rc=$RC)"
  show "$WORK/watch-live1.log"
fi
missing=0
for index in $sent; do grep -q "\"index\":$index," "$JOURNAL" || missing=$((missing + 1)); done
n_sent=$(echo "$sent" | grep -c .)
if [[ $n_sent -ge 3 && "$acked" == "$n_sent" && $missing -eq 0 ]]; then
  pass "Ctrl-C: the $n_sent volumes the watch sent and had acknowledged are recorded"
else
  fail "Ctrl-C: $n_sent sent, '$acked' acknowledged, $missing of them not in the journal"
fi
# Let the simulator write more after the first watch stopped, then Ctrl-C it (GE: the volume being written is finished).
written=$(grep -c '^volume ' "$WORK/sim-live.log")
wait_for "$PATIENCE" lines_at_least "$WORK/sim-live.log" '^volume ' $((written + 3)) ||
  fail "Ctrl-C sim: the simulator did not go on"
kill -INT "$SIM"
finish "$SIM" "sim dicom (Ctrl-C)"
volumes=$(sed -n 's/^stopped after \([0-9]*\) volumes (\([0-9]*\) files).*/\1/p' "$WORK/sim-live.log")
files=$(sed -n 's/^stopped after \([0-9]*\) volumes (\([0-9]*\) files).*/\2/p' "$WORK/sim-live.log")
mapfile -t on_disk < <(find "$WORK/export-live" -type f | sort)
out=""
if [[ $RC -eq 0 && -n "$volumes" && "$files" == "$((volumes * 7))" && ${#on_disk[@]} -eq "$files" ]] &&
  out=$(python3 "$HERE/dicom_complete.py" "${on_disk[@]}"); then
  pass "Ctrl-C sim dicom (real time, ge): exit 0, $volumes whole volumes, $out"
else
  fail "Ctrl-C sim dicom (real time, ge): rc=$RC, says '$volumes' volumes '$files' files, ${#on_disk[@]} on disk: ${out:-}"
  tail -3 "$WORK/sim-live.log"
fi
"$RTFMRI" scanner watch "$WORK/export-live" --to "$ENDPOINT" --volumes "${volumes:-1}" --stop-after "${volumes:-1}" \
  >"$WORK/watch-live2.log" 2>&1 &
watch=$!
STARTED+=("$watch")
finish "$watch" "second scanner watch"
if [[ $RC -eq 0 ]] && in_log "$WORK/watch-live2.log" "run series-001 closed"; then
  pass "a second scanner watch completes the run"
else
  fail "second scanner watch (rc=$RC)"
  show "$WORK/watch-live2.log"
fi
finish "$SERVER" "server2"
entries=$(journal_entries "$JOURNAL")
out=""
unique=$(grep -o '"index":[0-9]*' "$JOURNAL" | sort -u | wc -l)
if [[ $RC -eq 0 && "$entries" == "${volumes:-x}" && "$unique" == "$volumes" ]] && grep -q '"end_of_run":true' "$JOURNAL" &&
  out=$(nifti compare "$WORK/server2/runs/series-001/bold.nii.gz" "$WORK/long.nii" --volumes "$volumes" 2>&1); then
  pass "after the Ctrl-C, every volume recorded once: $out"
else
  fail "after the Ctrl-C: server rc=$RC, journal $entries entries ($unique distinct) for $volumes volumes: ${out:-}"
fi

# Ctrl-C as soon as the first file appears, as fast as possible, with 2 MB mosaics / 64 GE slices per volume: the signal
# lands while a file is being written; it must be finished, and nothing left half-written.
nifti write "$WORK/large.nii" --dims 128 128 64 12 --tr 1
for vendor in siemens-mosaic ge; do
  out_dir="$WORK/export-stop-$vendor"
  "$RTFMRI" sim dicom "$WORK/large.nii" --out "$out_dir" --vendor "$vendor" --speed 0 >"$WORK/sim-stop-$vendor.log" 2>&1 &
  sim=$!
  STARTED+=("$sim")
  first_file=$([[ $vendor == ge ]] && echo "$out_dir/s1/i*" || echo "$out_dir/*.dcm")
  until compgen -G "$first_file" >/dev/null; do  # a builtin: no process started per round
    running "$sim" || break
  done
  kill -INT "$sim"
  finish "$sim" "sim dicom ($vendor, Ctrl-C)"
  volumes=$(sed -n 's/^stopped after \([0-9]*\) volumes (\([0-9]*\) files).*/\1/p' "$WORK/sim-stop-$vendor.log")
  files=$(sed -n 's/^stopped after \([0-9]*\) volumes (\([0-9]*\) files).*/\2/p' "$WORK/sim-stop-$vendor.log")
  per_volume=$([[ $vendor == ge ]] && echo 64 || echo 1)
  mapfile -t on_disk < <(find "$out_dir" -type f | sort)
  out=""
  if [[ $RC -eq 0 && -n "$volumes" && "$volumes" -lt 12 && "$files" == "$((volumes * per_volume))" &&
    ${#on_disk[@]} -eq "$files" ]] && out=$(python3 "$HERE/dicom_complete.py" "${on_disk[@]}"); then
    pass "Ctrl-C sim dicom mid-write ($vendor): exit 0, stopped after $volumes whole volumes, $out"
  else
    fail "Ctrl-C sim dicom mid-write ($vendor): rc=$RC, says '$volumes' volumes '$files' files, ${#on_disk[@]} on disk: ${out:-}"
    tail -3 "$WORK/sim-stop-$vendor.log"
  fi
  rm -rf "$out_dir"
done
rm -f "$WORK/large.nii"

# ---- 4. AFNI real-time protocol --------------------------------------------------------------------------------------
"$RTFMRI" run --no-device --no-outputs --no-listen --afni-rt 127.0.0.1:0 --session-dir "$WORK/server4" \
  --exit-after-runs 2 >"$WORK/server4.log" 2>&1 &
SERVER=$!
STARTED+=("$SERVER")
if wait_for "$PATIENCE" in_log "$WORK/server4.log" "listening for control connections"; then
  control=$(sed -n 's/.*listening for control connections on [^ ]*:\([0-9]*\) .*/\1/p' "$WORK/server4.log")
  data=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$WORK/afni-sent"
  expect_ok "AFNI client sends two runs" "sent 2 runs" timeout "$PATIENCE" python3 "$HERE/afni_rt_client.py" \
    "$control" "$data" "$WORK/afni-sent"
  finish "$SERVER" "server4"
  if [[ $RC -eq 0 ]] && in_log "$WORK/server4.log" "run run-01 closed with 4 volume\(s\) \(the end marker\)" &&
    in_log "$WORK/server4.log" "run run-02 closed with 3 volume\(s\) \(the source disconnected\)"; then
    pass "AFNI: both runs closed (end marker, disconnect), server stopped"
  else
    fail "AFNI: server (rc=$RC)"
    show "$WORK/server4.log"
  fi
  expect_ok "AFNI run 1 (3D+timing, short, sagittal XYZFIRST) recorded as sent" "equal voxel for voxel" \
    nifti expect "$WORK/server4/runs/run-01/bold.nii.gz" "$WORK/afni-sent/run-01" --datum short --tr 1.25
  expect_ok "AFNI run 2 (2D+zt, big-endian float, OBLIQUE_XFORM) recorded as sent" "equal voxel for voxel" \
    nifti expect "$WORK/server4/runs/run-02/bold.nii.gz" "$WORK/afni-sent/run-02" --datum float --tr 2
else
  fail "AFNI server did not start"
  show "$WORK/server4.log"
fi

# ---- 3. bad input, continued -----------------------------------------------------------------------------------------
finish "$BAD_SERVER" "server3"
out=""
if [[ $RC -eq 0 ]] && out=$(nifti compare "$WORK/server3/runs/series-002/bold.nii.gz" "$WORK/series.nii" 2>&1); then
  pass "bad input: the good series written after the bad files is recorded: $out"
else
  fail "bad input: server3 rc=$RC: ${out:-}"
  show "$WORK/server3.log" "$WORK/watch-bad.log"
fi
if wait_for 90 in_log "$WORK/watch-bad.log" "giving up on .*001_000009_000001\.dcm"; then
  pass "bad input: the truncated DICOM is named in a log line"
else
  fail "bad input: no log line names the truncated DICOM"
fi
if running "$BAD_WATCH"; then
  pass "bad input: the watch keeps running"
  kill -INT "$BAD_WATCH"
  finish "$BAD_WATCH" "scanner watch (bad input)"
  if [[ $RC -eq 0 ]]; then pass "bad input: the watch exits 0 on Ctrl-C"; else fail "bad input: watch rc $RC"; fi
else
  fail "bad input: the watch has stopped"
  show "$WORK/watch-bad.log"
fi
expect_error "scanner watch on a missing folder" "Directory does not exist: .*/no-such-folder" \
  "$RTFMRI" scanner watch "$WORK/no-such-folder" --to "tcp://127.0.0.1:1"
# The last voxel of the last volume is not an integer: refused before anything is written.
nifti write "$WORK/fraction.nii" --dims 5 4 3 3 --float --seed 13
python3 - "$WORK/fraction.nii" <<'EOF'
import struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
for offset in range(352, len(raw), 4):  # every voxel (x.5) made an integer, the last one 12.25
    struct.pack_into("<f", raw, offset, float(int(struct.unpack_from("<f", raw, offset)[0])))
struct.pack_into("<f", raw, len(raw) - 4, 12.25)
open(sys.argv[1], "wb").write(raw)
EOF
expect_error "sim dicom on a non-integer NIfTI" "fraction\.nii: volume 2, voxel \(4, 3, 2\) = 12\.25 is not an integer" \
  "$RTFMRI" sim dicom "$WORK/fraction.nii" --out "$WORK/export-fraction" --speed 0
if [[ -e "$WORK/export-fraction" ]]; then
  fail "sim dicom on a non-integer NIfTI left $WORK/export-fraction: $(ls "$WORK/export-fraction")"
else
  pass "sim dicom on a non-integer NIfTI writes nothing"
fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
