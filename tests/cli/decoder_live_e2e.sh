#!/usr/bin/env bash
# The live decoder end to end with the real binaries (docs/algorithms/decoding.md, "Live"): real BOLD (nitime's fmri1
# and fmri2, a random spatial pattern of 0.05 SD added in labelled blocks of two classes, decode_check.py make) as a
# localizer run and a feedback run. `rtfmri decode` trains on the localizer (leave-one-block-out), then `rtfmri run
# --decoder-model` applies the model to the feedback run streamed by `rtfmri sim replay --lockstep`. Checked:
#   - every feedback line carries `decoder`: "warming-up" for the first 2 volumes, then "ok" with a decision, the
#     predicted class and probabilities summing to 1;
#   - the decoded feedback follows the embedded pattern: the decision's sign gives the labelled class of >= 80% of the
#     feedback run's labelled volumes after the warm-up (chance: 50%);
#   - with --decoder-feedback probability --decoder-target face --decoder-average 3, every line's feedback value is
#     the mean of face's probability over the last 3 decoded volumes ("decoder-off" while it warms up);
#   - a model fitted by scikit-learn on the same localizer features and written by
#     examples/export_sklearn_decoder.py decodes the feedback run live as rtfmri decode's model does;
#   - a model trained on another grid: the run goes on (motion in every line) and every line says the decoder is off
#     and why; a NaN in a feature voxel at volume 10: decisions before it, "off" naming volume 10 from there on; a
#     malformed model file refuses the server's start, naming its key.
# Paced by the server's progress (--lockstep), never by the clock.
#   usage: decoder_live_e2e.sh RTFMRI DATA_DIR WORK_DIR
set -uo pipefail
RTFMRI=$1
DATA=$2
WORK=$3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy, scipy, nibabel' 2>/dev/null; then
  echo "SKIP: $PY has no numpy/scipy/nibabel (scripts/setup.sh)"
  exit 77
fi
if [[ ! -f $DATA/nitime/fmri1.nii.gz ]]; then
  echo "SKIP: $DATA/nitime/fmri1.nii.gz is missing (scripts/fetch_data.sh)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK/data"
# shellcheck source=check_lib.sh
source "$HERE/check_lib.sh"
D=$WORK/data
"$PY" "$HERE/decode_check.py" make "$DATA" "$D" 2 0.05 1 >"$WORK/make.log" 2>&1 || die "making the runs"
"$RTFMRI" decode "$D/run1.nii.gz" --events "$D/events.tsv" --mask "$D/mask.nii.gz" --cv blocks --C 0.01 \
  --out "$WORK/localizer" >"$WORK/decode.log" 2>&1 || die "rtfmri decode on the localizer: $(cat "$WORK/decode.log")"
pass "trained on the localizer: $(grep -o 'accuracy [0-9.]*' "$WORK/decode.log" | head -1)"
# A model on another grid (the localizer's, moved 5 mm) and a malformed model file.
"$PY" - "$D" "$WORK" <<'PYEOF' || die "making the bad models"
import json, sys
import nibabel as nib
import numpy as np
d, work = sys.argv[1], sys.argv[2]
model = json.load(open(f"{work}/localizer_model.json"))
model["grid"]["affine"][0][3] += 5.0  # the same dims, 5 mm to the side
json.dump(model, open(f"{work}/other_grid_model.json", "w"))
model = json.load(open(f"{work}/localizer_model.json"))
model["coef"][0] = model["coef"][0][:-1]
json.dump(model, open(f"{work}/short_model.json", "w"))
img = nib.load(f"{d}/run2.nii.gz")
data = np.asarray(img.dataobj, dtype=np.float32)
x, y, z = np.argwhere(np.asarray(nib.load(f"{d}/mask.nii.gz").dataobj) != 0)[3]
data[x, y, z, 10] = np.nan
nib.save(nib.Nifti1Image(data, img.affine, img.header), f"{d}/run2_nan.nii.gz")
PYEOF

# serve NAME MODEL [RUN [FLAGS...]]: one run of RUN (default run2) through `rtfmri run --decoder-model MODEL`, the feedback lines in NAME.jsonl.
serve() {
  local name=$1 model=$2 bold=${3:-$D/run2.nii.gz}
  shift 3 2>/dev/null || shift $#
  read -r INGEST FEEDBACK < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
  "$RTFMRI" run --session-dir "$WORK/session_$name" --listen "tcp://127.0.0.1:$INGEST" --results-pub '' \
    --feedback-tcp "127.0.0.1:$FEEDBACK" --fsync none --tr 1.35 --ring 64 --atlas '' --no-qa \
    --decoder-model "$model" --warm "$D/run2.nii.gz" --exit-after-runs 1 "$@" >"$WORK/server_$name.log" 2>&1 &
  local server=$!
  PIDS+=("$server")
  started() { grep -q "listening on" "$WORK/server_$name.log" || ! kill -0 "$server" 2>/dev/null; }
  wait_for 900 started && grep -q "listening on" "$WORK/server_$name.log" || die "the server did not start"
  "$PY" "$HERE/record_feedback_lines.py" "$FEEDBACK" "$WORK/$name.jsonl" "$WORK/$name.ready" 40 \
    >"$WORK/client_$name.log" 2>&1 &
  local client=$!
  PIDS+=("$client")
  client_ready() { [[ -f "$WORK/$name.ready" ]] || ! kill -0 "$client" 2>/dev/null; }
  wait_for 120 client_ready && [[ -f "$WORK/$name.ready" ]] || die "the recording client did not connect"
  "$RTFMRI" sim replay "$bold" --to "tcp://127.0.0.1:$INGEST" --speed 0 --session dec --run "$name" \
    --lockstep "127.0.0.1:$FEEDBACK" >"$WORK/sender_$name.log" 2>&1 || die "the sender failed"
  wait "$client" || die "the recording client failed"
  wait "$server" || die "the server exited with an error: $(tail -5 "$WORK/server_$name.log")"
}

serve feedback "$WORK/localizer_model.json"
if "$PY" - "$WORK/feedback.jsonl" "$D/events.tsv" <<'PYEOF'; then pass "decoded feedback follows the pattern"; else fail "decoded feedback"; fi
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 40, f"{len(lines)} lines"
events = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])][1:]
hits = total = 0
for line in lines:
    d, v = line["decoder"], line["volume"]
    want = "warming-up" if v < 2 else "ok"
    assert d["status"] == want, (v, d)
    assert isinstance(d["decision"], float), d
    p = d["probabilities"]
    assert set(p) == {"face", "house"} and abs(sum(p.values()) - 1) < 1e-12, p
    assert d["predicted"] == ("house" if d["decision"] > 0 else "face"), d
    if v < 2:
        continue
    time = v * 1.35
    covering = {e[2] for e in events if float(e[0]) + 4 <= time < float(e[0]) + 4 + float(e[1])}
    if len(covering) == 1:
        total += 1
        hits += d["predicted"] == covering.pop()
print(f"{hits}/{total} labelled volumes of the feedback run decoded right")
assert total >= 15 and hits >= 0.8 * total, (hits, total)
PYEOF

serve valued "$WORK/localizer_model.json" "$D/run2.nii.gz" --decoder-feedback probability --decoder-target face \
  --decoder-average 3
if "$PY" - "$WORK/valued.jsonl" <<'PYEOF'; then pass "feedback = the mean of face's last 3 probabilities"; else fail "decoded feedback value"; fi
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 40, len(lines)
p = {l["volume"]: l["decoder"]["probabilities"]["face"] for l in lines if l["decoder"]["status"] == "ok"}
for line in lines:
    v = line["volume"]
    if v < 2:
        assert line["feedback"] is None and line["status"] == "decoder-off", line
        continue
    window = [p[u] for u in range(v - 2, v + 1) if u in p]
    want = sum(window) / len(window)
    assert line["status"] == "ok" and abs(line["feedback"] - want) < 1e-12, (v, line["feedback"], want)
print("feedback at volume 10:", lines[10]["feedback"])
PYEOF

# A model fitted by scikit-learn and written by examples/export_sklearn_decoder.py: the same live decoding.
if "$PY" - "$D" "$WORK" "$HERE" <<'PYEOF'; then pass "exported a scikit-learn model"; else fail "the scikit-learn export"; fi
import sys
d, work, here = sys.argv[1:4]
sys.path.insert(0, here)
sys.path.insert(0, here + "/../../examples")
import nibabel as nib
import numpy as np
from scipy import signal
from sklearn.linear_model import LogisticRegression
from decode_check import read_events, volume_labels, LAG
from export_sklearn_decoder import export_decoder
mask = np.asarray(nib.load(f"{d}/mask.nii.gz").dataobj) != 0
voxels = np.flatnonzero(mask.reshape(-1, order="F"))
data = np.asarray(nib.load(f"{d}/run1.nii.gz").dataobj, dtype=np.float64)
z = signal.detrend(data.reshape(-1, data.shape[3], order="F")[voxels].T, axis=0, type="linear")
z = (z - z.mean(axis=0)) / z.std(axis=0)
labels = volume_labels(data.shape[3], read_events(f"{d}/events.tsv"), LAG)
rows = [t for t, label in enumerate(labels) if label is not None]
fitted = LogisticRegression(C=0.01).fit(z[rows], [labels[t] for t in rows])
export_decoder(fitted, f"{d}/mask.nii.gz", f"{work}/sklearn_model.json", lag_s=LAG)
PYEOF
serve sklearn "$WORK/sklearn_model.json"
if "$PY" - "$WORK/sklearn.jsonl" "$WORK/feedback.jsonl" <<'PYEOF'; then pass "the scikit-learn model decodes as ours"; else fail "the scikit-learn model live"; fi
import json, sys
ours = {l["volume"]: l["decoder"] for l in map(json.loads, open(sys.argv[2]))}
theirs = {l["volume"]: l["decoder"] for l in map(json.loads, open(sys.argv[1]))}
assert len(theirs) == 40, len(theirs)
same = sum(theirs[v]["predicted"] == ours[v]["predicted"] for v in theirs if theirs[v]["status"] == "ok")
worst = max(abs(theirs[v]["decision"] - ours[v]["decision"]) for v in theirs if theirs[v]["status"] == "ok")
print(f"the same class on {same} of 38 volumes; decisions within {worst:.2g}")
# Both fit the same objective on the same features (ours float32 at --tol 1e-10; sklearn's lbfgs at its default tol
# 1e-4): measured within 6.6e-5, allow 1e-3.
assert same == 38 and worst < 1e-3, (same, worst)
PYEOF

serve other "$WORK/other_grid_model.json"
if "$PY" - "$WORK/other.jsonl" <<'PYEOF'; then pass "another grid: decoder off, the run goes on"; else fail "another grid"; fi
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 40, len(lines)
for line in lines:
    d = line["decoder"]
    assert d["status"] == "off" and "grid" in d["reason"] and "decision" not in d, d
    assert "motion" in line, line
print(lines[0]["decoder"]["reason"])
PYEOF
serve nan "$WORK/localizer_model.json" "$D/run2_nan.nii.gz"
if "$PY" - "$WORK/nan.jsonl" <<'PYEOF'; then pass "a NaN in a feature voxel: decoder off from there on"; else fail "NaN"; fi
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 40, len(lines)
for line in lines:
    d, v = line["decoder"], line["volume"]
    if v < 10:
        assert d["status"] in ("ok", "warming-up") and "decision" in d, (v, d)
    else:
        assert d["status"] == "off" and "not finite" in d["reason"] and "volume 10" in d["reason"], (v, d)
    assert "motion" in line, line
print(lines[-1]["decoder"]["reason"])
PYEOF
expect_error "a malformed model refuses the start" 'decoder\] model: .*coef: [0-9]+ numbers where' \
  "$RTFMRI" run --session-dir "$WORK/session_bad" --decoder-model "$WORK/short_model.json" --exit-after-runs 1

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
