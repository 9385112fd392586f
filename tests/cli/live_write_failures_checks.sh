#!/usr/bin/env bash
# The live server, `rtfmri replay` and `rtfmri recover` when their outputs meet a full disk (tests/cli/small_disk.sh):
#   1. `rtfmri run` on a roomy disk, `rtfmri sim replay --lockstep` of real BOLD (nitime's fmri1, 40 volumes): exit 0,
#      "outputs: all written", latency_summary.json says 40 rows written, none lost (the control).
#   2. The same with the session directory on a tmpfs with two pages free (its runs/ folder, the recording, on the roomy
#      disk through a link, so every volume is still recorded and ACKed): every volume is analysed and gets its
#      feedback line, latency.jsonl holds only whole rows, the rows it lacks are counted in the summary
#      ("N rows not written" + the rows written = 40), no latency_summary.json is left (no 0-byte file, no temporary)
#      and the exit status is 3 (docs/live.md, "When a write fails").
#   3. `rtfmri recover` of the control's run with the session on a tmpfs that holds it but not its bold.nii.gz: exit 1,
#      the error names bold.nii.gz and the system's reason, no bold.nii.gz or temporary left.
#   4. `rtfmri replay` of the control's session into a full tmpfs: exit 1, each file not written named.
# Nothing here depends on the machine's speed: the sender waits for each feedback line (--lockstep), the server stops
# after the run closes (--exit-after-runs 1); waits are bounded only to turn a hang into a failure.
#   usage: live_write_failures_checks.sh RTFMRI DATA_DIR WORK_DIR   (exit 77: skipped)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/check_lib.sh"
source "$HERE/small_disk.sh"

# One server run and its lockstep sender: live_session RTFMRI BOLD SESSION_DIR OUT_DIR. Leaves in OUT_DIR the logs,
# server.rc, sender.rc and files.txt (what SESSION_DIR holds: "name size" per file).
live_session() {
  local rtfmri=$1 bold=$2 session=$3 out=$4
  local ingest feedback
  read -r ingest feedback < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
  "$rtfmri" run --session-dir "$session" --session writes --listen "tcp://127.0.0.1:$ingest" \
    --feedback-tcp "127.0.0.1:$feedback" --results-pub '' --fwhm 0 --atlas '' --ring 8 --fsync none \
    --warm "$bold" --exit-after-runs 1 >"$out/server.log" 2>&1 &
  local server=$!
  for _ in $(seq 1 6000); do  # the warm-up builds the kernels first (minutes on a cold PoCL cache)
    grep -q "feedback: TCP lines on" "$out/server.log" && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  timeout 600 "$rtfmri" sim replay "$bold" --to "tcp://127.0.0.1:$ingest" --speed 0 --session writes --run run-01 \
    --lockstep "127.0.0.1:$feedback" >"$out/sender.log" 2>&1
  echo $? >"$out/sender.rc"
  local waited=0
  while kill -0 "$server" 2>/dev/null && ((waited < 6000)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  kill "$server" 2>/dev/null
  wait "$server"
  echo $? >"$out/server.rc"
  (cd "$session" && find . -type f -printf '%P %s\n' | sort) >"$out/files.txt"
  [[ -f "$session/latency.jsonl" ]] && cp "$session/latency.jsonl" "$out/latency.jsonl"
  return 0
}

# Inside a private tmpfs (small_disk.sh's on_small_disk runs this script again with --inside MODE ...).
if [[ "${1:-}" == --inside ]]; then
  mode=$2
  shift 2
  case "$mode" in
    live)  # TMPFS RTFMRI BOLD OUT: the session on the tmpfs, its runs/ on OUT's disk
      tmpfs=$1 rtfmri=$2 bold=$3 out=$4
      mkdir -p "$tmpfs/session" "$out/runs"
      ln -s "$out/runs" "$tmpfs/session/runs"
      live_session "$rtfmri" "$bold" "$tmpfs/session" "$out"
      (cd "$tmpfs" && find . -name '.filler' -prune -o -type f -printf '%P %s\n' | sort) >"$out/tmpfs.txt"
      ;;
    recover)  # TMPFS RTFMRI SESSION OUT: recover a copy of SESSION made on the tmpfs
      tmpfs=$1 rtfmri=$2 session=$3 out=$4
      mkdir -p "$tmpfs/s/runs/run-01"
      cp "$session/session.json" "$tmpfs/s/" &&
        cp "$session/runs/run-01/volumes.bin" "$session/runs/run-01/journal.jsonl" "$tmpfs/s/runs/run-01/" ||
        { echo "the copy did not fit" >"$out/recover.log"; exit 0; }
      "$rtfmri" recover "$tmpfs/s" >"$out/recover.log" 2>&1
      echo $? >"$out/recover.rc"
      (cd "$tmpfs/s" && find . -printf '%P %s\n' | sort) >"$out/tmpfs.txt"
      ;;
    replay)  # TMPFS RTFMRI SESSION OUT
      tmpfs=$1 rtfmri=$2 session=$3 out=$4
      "$rtfmri" replay "$session" --out "$tmpfs/replay" --fwhm 0 --atlas '' --ring 8 >"$out/replay.log" 2>&1
      echo $? >"$out/replay.rc"
      (cd "$tmpfs" && find . -name '.filler' -prune -o -type f -printf '%P %s\n' | sort) >"$out/tmpfs.txt"
      ;;
  esac
  exit 0
fi

RTFMRI=$1
DATA=$2
WORK=$3
BOLD="$DATA/nitime/fmri1.nii.gz"
if [[ ! -f "$BOLD" ]]; then
  echo "SKIP: $BOLD missing (run scripts/fetch-data.sh)"
  exit 77
fi
require_small_disk
rm -rf "$WORK" && mkdir -p "$WORK/ok" "$WORK/full" "$WORK/recover" "$WORK/replay"
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
show() { for f in "$@"; do echo "--- $f"; tail -40 "$f"; done; }
# Whole JSON lines only, and how many.
json_rows() { python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    json.loads(line); n += 1
print(n)' "$1"; }

# 1. The control: a roomy disk.
live_session "$RTFMRI" "$BOLD" "$WORK/ok/session" "$WORK/ok"
if [[ $(cat "$WORK/ok/server.rc") == 0 && $(cat "$WORK/ok/sender.rc") == 0 ]] &&
  grep -q "outputs: all written" "$WORK/ok/server.log" && grep -q "40 analysed" "$WORK/ok/server.log" &&
  python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["volumes"] == 40 and s["latency_jsonl"]["rows_written"] == 40 and s["latency_jsonl"]["rows_lost"] == 0, s
assert s["stages"], s' "$WORK/ok/session/latency_summary.json" && [[ $(json_rows "$WORK/ok/session/latency.jsonl") == 40 ]]; then
  pass "control: exit 0, every output written, the summary counts 40 rows"
else
  fail "control run"
  show "$WORK/ok/server.log" "$WORK/ok/sender.log"
fi

# 2. The session directory on a tmpfs with two pages free: session.json takes one, latency.jsonl the other.
on_small_disk "$WORK/tmpfs" 8192 "$SELF" --inside live "$WORK/tmpfs" "$RTFMRI" "$BOLD" "$WORK/full"
rc=$(cat "$WORK/full/server.rc" 2>/dev/null)
written=$(json_rows "$WORK/full/latency.jsonl" 2>/dev/null || echo bad)
lost=$(sed -n 's/.*latency.jsonl: \([0-9]*\) rows not written.*/\1/p' "$WORK/full/server.log" | head -1)
if [[ "$rc" == 3 ]]; then pass "full disk: exit status 3"; else fail "full disk: exit status '$rc', want 3"; fi
if [[ $(cat "$WORK/full/sender.rc") == 0 ]] && grep -q "40 analysed, 0 skipped" "$WORK/full/server.log"; then
  pass "full disk: every volume recorded, ACKed, analysed and given its feedback line"
else
  fail "full disk: the live path did not go on"
fi
if [[ "$written" =~ ^[0-9]+$ && "$lost" =~ ^[0-9]+$ && $((written + lost)) == 40 && "$lost" -gt 0 && "$written" -gt 0 ]]; then
  pass "full disk: latency.jsonl has $written whole rows, the summary counts the $lost lost"
else
  fail "full disk: latency.jsonl rows written '$written', lost '$lost' (want whole rows adding up to 40)"
fi
if grep -q "latency.jsonl lacks $lost of its 40 rows" "$WORK/full/server.log" &&
  grep -q "latency_summary.json: not written (.*No space left on device)" "$WORK/full/server.log" &&
  grep -q "error.*cannot write .*latency.jsonl: No space left on device" "$WORK/full/server.log"; then
  pass "full disk: the log and the summary say what was lost, with the system's reason"
else
  fail "full disk: the messages"
fi
if ! grep -q "latency_summary" "$WORK/full/tmpfs.txt" && ! grep -q "partial" "$WORK/full/tmpfs.txt"; then
  pass "full disk: no latency_summary.json and no temporary left"
else
  fail "full disk: files left: $(cat "$WORK/full/tmpfs.txt")"
fi
[[ $failures -eq 0 ]] || show "$WORK/full/server.log" "$WORK/full/sender.log"

# 3. recover: room for the recording, none for bold.nii.gz.
pages=0
for f in session.json runs/run-01/volumes.bin runs/run-01/journal.jsonl; do
  pages=$((pages + ($(stat -c %s "$WORK/ok/session/$f") + 4095) / 4096))
done
on_small_disk "$WORK/tmpfs" $((pages * 4096)) "$SELF" --inside recover "$WORK/tmpfs" "$RTFMRI" "$WORK/ok/session" \
  "$WORK/recover"
if [[ $(cat "$WORK/recover/recover.rc" 2>/dev/null) == 1 ]] &&
  grep -q "error: writing .*bold.nii.gz: .*No space left on device" "$WORK/recover/recover.log" &&
  grep -q "rtfmri: error: 1 of 1 runs not fully recovered" "$WORK/recover/recover.log" &&
  ! grep -q "bold\|partial" "$WORK/recover/tmpfs.txt"; then
  pass "recover on a full disk: exit 1, bold.nii.gz named with the reason, nothing left"
else
  fail "recover on a full disk"
  show "$WORK/recover/recover.log" "$WORK/recover/tmpfs.txt"
fi

# 4. replay into a full disk.
on_small_disk "$WORK/tmpfs" 0 "$SELF" --inside replay "$WORK/tmpfs" "$RTFMRI" "$WORK/ok/session" "$WORK/replay"
if [[ $(cat "$WORK/replay/replay.rc" 2>/dev/null) == 1 ]] &&
  grep -q "replay: not written: .*replay/latency.jsonl: 40 rows not written" "$WORK/replay/replay.log" &&
  grep -q "replay: not written: .*replay/runs/run-01/motion.tsv: 40 rows not written" "$WORK/replay/replay.log" &&
  grep -q "rtfmri: error: replay: .* of the outputs in .* not written whole" "$WORK/replay/replay.log" &&
  ! grep -q "partial" "$WORK/replay/tmpfs.txt"; then
  pass "replay into a full disk: exit 1, each file not written named"
else
  fail "replay into a full disk"
  show "$WORK/replay/replay.log" "$WORK/replay/tmpfs.txt"
fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
