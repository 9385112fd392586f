#!/usr/bin/env bash
# Builds the libFuzzer target for the NIfTI reader with clang (ASan + UBSan) and runs it.
# Usage: scripts/fuzz.sh [SECONDS]   (default 60; extra libFuzzer flags via FUZZ_FLAGS="...")
# Seeds come from tests/data/nifti_corpus (read-only); new inputs go to build-fuzz/corpus, crashes to
# build-fuzz/artifacts. A crash makes this script fail; minimise it (-minimize_crash=1), fix the reader,
# and add the input to tests/data/nifti_corpus as crash_<what>.nii so the ctest replay keeps checking it.
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"

for tool in clang clang++; do
  if ! command -v "$tool" >/dev/null; then
    echo "fuzz: '$tool' not found (apt-get install clang libclang-rt-dev)" >&2
    exit 1
  fi
done

if [[ ! -f $(clang++ -print-file-name="libclang_rt.fuzzer-$(uname -m).a") ]]; then
  echo "fuzz: clang's libFuzzer runtime is missing (apt-get install libclang-rt-dev)" >&2
  exit 1
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTF_BUILD_FUZZ=ON \
  -DRTF_BUILD_TESTS=OFF -DRTF_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target rtfmri-fuzz-nifti -j "$(nproc)"

mkdir -p "$build/corpus" "$build/artifacts"
echo "fuzz: running rtfmri-fuzz-nifti for ${seconds}s"
# shellcheck disable=SC2086
"$build/fuzz/rtfmri-fuzz-nifti" "$build/corpus" "$root/tests/data/nifti_corpus" \
  -dict="$root/fuzz/nifti.dict" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$build/artifacts/" -print_final_stats=1 ${FUZZ_FLAGS:-}
