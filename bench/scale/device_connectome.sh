#!/usr/bin/env bash
# Issue 20, connectome: Pearson N NODES (default 1,000,000) x LENGTH (128) at r >= 0.5, per CONFIGS (default 1, 2, 4
# GPUs in one process, mpirun 2 and 4), RUNS (2) runs each after WARMUP (1) warm-up; every configuration's files
# compared with the first's, bit for bit. Run on the GPU machine from the repository root:
# `bash bench/scale/device_connectome.sh` ($OUT: results). LIMIT (seconds, default 580) bounds the benchmark
# (connectome_TAG.json: the report; connectome_TAG_logs.tgz: each configuration's log, the chunk lines cut).
set -uo pipefail
# shellcheck source=device_env.sh
source "$(dirname "$0")/device_env.sh"
N=${NODES:-1000000}
L=${LENGTH:-128}
[[ -s $D/c$N/bold.nii ]] || python3 bench/scale/scale_bench.py make-connectome "$D/c$N" --nodes "$N" --length "$L"
echo "data: $((SECONDS - T0)) s"
rm -f "$D/wc$N"/*.log
timeout $((${LIMIT:-580} - SECONDS + T0)) "${B[@]}" --rtfmri "$R" --case connectome --data "$D/c$N" --work "$D/wc$N" \
  --configs "${CONFIGS:-gpus=1;gpus=2;gpus=4;mpi=2;mpi=4}" --runs "${RUNS:-2}" --warmup "${WARMUP:-1}" \
  --args="--threshold 0.5" --out "$OUT/connectome_${TAG:-a}.json" 2>&1 | grep -v '^{' | tail -12
K=$D/kept_c_${TAG:-a}
rm -rf "$K" && mkdir -p "$K"
for f in "$D/wc$N"/*.log; do grep -v "connectome chunk [0-9]*:" "$f" | tail -300 > "$K/$(basename "$f")"; done
tar czf "$OUT/connectome_${TAG:-a}_logs.tgz" -C "$K" .
echo "done: $((SECONDS - T0)) s"
