#!/usr/bin/env bash
# Issue 20, bedpost on the whole-brain-sized synthetic set (VOXELS, default 150,000, of 69 measurements; 3 fibres,
# 1,000 + 1,250 iterations) per CONFIGS (default 1, 2, 4 GPUs in one process, mpirun 2 and 4), RUNS runs each after WARMUP (1)
# warm-up; every configuration's files compared with the first's, bit for bit. EXTRA adds bedpost options (e.g.
# --host-start). Run on the GPU machine from the repository root: `bash bench/scale/device_bedpost.sh` ($OUT: results).
# LIMIT (seconds, default 580) bounds the benchmark inside, so that the logs are still copied to $OUT after it
# (bedpost_TAG.json: the report; bedpost_TAG_logs.tgz: each configuration's log and bedpost.json).
set -uo pipefail
# shellcheck source=device_env.sh
source "$(dirname "$0")/device_env.sh"
V=${VOXELS:-150000}
[[ -s $D/bp$V/bvecs ]] || python3 bench/scale/scale_bench.py make-bedpost "$D/bp$V" --voxels "$V"
echo "data: $((SECONDS - T0)) s"
rm -f "$D/wb$V"/*.log  # only this call's logs go to $OUT
timeout $((${LIMIT:-580} - SECONDS + T0)) "${B[@]}" --rtfmri "$R" --case bedpost --data "$D/bp$V" --work "$D/wb$V" \
  --configs "${CONFIGS:-gpus=1;gpus=2;gpus=4;mpi=2;mpi=4}" --runs "${RUNS:-2}" --warmup "${WARMUP:-1}" --args="${EXTRA:-}" \
  --out "$OUT/bedpost_${TAG:-a}.json" 2>&1 | grep -v '^{' | tail -12
# Each configuration's log and bedpost.json, in one archive (the device tool brings back a few files only).
K=$D/kept_${TAG:-a}
rm -rf "$K" && mkdir -p "$K"
for f in "$D/wb$V"/*.log; do grep -E "bedpost|seconds|block" "$f" | tail -60 > "$K/$(basename "$f")"; done
for f in "$D/wb$V"/*/bp.bedpostX/bedpost.json; do cp "$f" "$K/$(basename "$(dirname "$(dirname "$f")")").json"; done
tar czf "$OUT/bedpost_${TAG:-a}_logs.tgz" -C "$K" .
echo "done: $((SECONDS - T0)) s"
