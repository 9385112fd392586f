#!/usr/bin/env bash
# Issue 20, randomise: 49 subjects at 2 mm (91 x 109 x 91 inside an ellipsoid), 10,000 sign flips, -x -c 3.1 -T, per
# CONFIGS (default 1, 2, 4 GPUs in one process, mpirun 2 and 4), RUNS (2) runs each after WARMUP (1) warm-up; every
# configuration's files compared with the first's, bit for bit. EXTRA replaces the options after -1. Run on the GPU
# machine from the repository root: `bash bench/scale/device_randomise.sh` ($OUT: results). LIMIT (seconds, default 580)
# bounds the benchmark (randomise_TAG.json: the report; randomise_TAG_logs.tgz: each configuration's debug log).
set -uo pipefail
# shellcheck source=device_env.sh
source "$(dirname "$0")/device_env.sh"
[[ -s $D/rand/data.nii ]] || python3 bench/scale/scale_bench.py make-randomise "$D/rand"
echo "data: $((SECONDS - T0)) s"
rm -f "$D/wrand"/*.log
timeout $((${LIMIT:-580} - SECONDS + T0)) "${B[@]}" --rtfmri "$R" --case randomise --data "$D/rand" --work "$D/wrand" \
  --configs "${CONFIGS:-gpus=1;gpus=2;gpus=4;mpi=2;mpi=4}" --runs "${RUNS:-2}" --warmup "${WARMUP:-1}" --args="${EXTRA:-}" \
  --out "$OUT/randomise_${TAG:-a}.json" 2>&1 | grep -v '^{' | tail -12
K=$D/kept_r_${TAG:-a}
rm -rf "$K" && mkdir -p "$K"
for f in "$D/wrand"/*.log; do tail -300 "$f" > "$K/$(basename "$f")"; done
tar czf "$OUT/randomise_${TAG:-a}_logs.tgz" -C "$K" .
echo "done: $((SECONDS - T0)) s"
