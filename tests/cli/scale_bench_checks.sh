#!/usr/bin/env bash
# bench/scale/scale_bench.py (the scale-out benchmark of docs/scale.md) on small data, so that it does not rot: it makes
# a connectome series and randomise maps, runs the real command on `--devices cpu` and `--devices cpu/2`, and its
# report says the outputs are equal, once by copies and once by digests (--digest: outputs removed after each run,
# digests in the report); a configuration that cannot run (more GPUs than there are) stops it with a clear message.
#   usage: scale_bench_checks.sh RTFMRI WORK_DIR
set -uo pipefail
RTFMRI=$1
WORK=$2
PY=/usr/bin/python3
BENCH="$(dirname "${BASH_SOURCE[0]}")/../../bench/scale/scale_bench.py"
"$PY" -c "import numpy" 2>/dev/null || { echo "SKIP: numpy missing"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
W=$WORK

# report_says FILE PYTHON-EXPRESSION NAME: the expression over r (the report) is true.
report_says() {
  if "$PY" -c "import json, sys; r = json.load(open('$1')); sys.exit(0 if ($2) else 1)"; then pass "$3"
  else fail "$3: $(cat "$1" 2>&1 | head -c 2000)"; fi
}

expect_ok "make-connectome" '2000 nodes' "$PY" "$BENCH" make-connectome "$W/c" --nodes 2000 --length 40
expect_ok "connectome, by digests" 'devices=cpu/2 run 1' "$PY" "$BENCH" run --case connectome --data "$W/c" \
  --work "$W/wc" --configs "devices=cpu;devices=cpu/2" --runs 1 --warmup 0 --args "--density 0.02" \
  --rtfmri "$RTFMRI" --digest --out "$W/c.json"
report_says "$W/c.json" "len(r['results']) == 2 and all(e['outputs_equal_to_first'] for e in r['results'])" \
  "connectome: outputs equal by digests"
report_says "$W/c.json" "sorted(r['results'][1]['digests']) == ['c_connectome.json', 'c_degree.nii.gz', 'c_edges.npz', \
'c_nodes.npz', 'c_strength.nii.gz'] and r['results'][1]['device_count'] == 2" "connectome: digests of every output"
[[ -e $W/wc/devices-cpu ]] && fail "--digest left the outputs" || pass "--digest removed the outputs"
[[ -s $W/wc/devices-cpu_2.log ]] && pass "the run's log kept" || fail "no log: $(ls "$W/wc")"

expect_ok "make-randomise" 'subjects|data' "$PY" "$BENCH" make-randomise "$W/r" --dims 13 15 11 --subjects 8
expect_ok "randomise, by copies" 'devices=cpu/2 run 2' "$PY" "$BENCH" run --case randomise --data "$W/r" --work "$W/wr" \
  --configs "devices=cpu;devices=cpu/2" --runs 2 --warmup 1 --args "-x -T -n 300 --seed 2" --rtfmri "$RTFMRI" \
  --out "$W/r.json"
report_says "$W/r.json" "all(e['outputs_equal_to_first'] for e in r['results']) and len(r['results'][1]['walls_s']) == 2 \
and r['results'][1]['compute_median_s'] > 0" "randomise: outputs equal, medians of 2 runs"

expect_error "more GPUs than there are" 'GPU\(s\) here' "$PY" "$BENCH" run --case randomise --data "$W/r" \
  --work "$W/wg" --configs "gpus=64" --runs 1 --rtfmri "$RTFMRI" --out "$W/g.json"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
