#!/usr/bin/env bash
# Builds a libFuzzer target with clang (ASan + UBSan) and runs it.
# Usage: scripts/fuzz.sh [nifti|header] [SECONDS]   (default nifti, 60 s; extra libFuzzer flags via FUZZ_FLAGS)
#   nifti:  the NIfTI reader (rtfmri-fuzz-nifti), seeds tests/data/nifti_corpus
#   header: the ingest protocol's header parsers (rtfmri-fuzz-volume-header), seeds tests/data/header_corpus
# Seeds are read-only; new inputs go to build-fuzz/corpus-<target>, crashes to build-fuzz/artifacts. A crash
# makes this script fail; minimise it (-minimize_crash=1), fix the code, and add the input to the seed directory
# as crash_<what> so the ctest replay (tests/io/test_fuzz_corpus_replay.cpp,
# tests/stream/test_header_corpus_replay.cpp) keeps checking it.
set -euo pipefail

target=nifti
if [[ ${1:-} == nifti || ${1:-} == header ]]; then
  target=$1
  shift
fi
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
if [[ $target == nifti ]]; then
  exe=rtfmri-fuzz-nifti seeds="$root/tests/data/nifti_corpus" extra=(-dict="$root/fuzz/nifti.dict" -max_len=4096)
else
  exe=rtfmri-fuzz-volume-header seeds="$root/tests/data/header_corpus" extra=(-max_len=2048)
fi
cmake --build "$build" --target "$exe" -j "$(nproc)"

mkdir -p "$build/corpus-$target" "$build/artifacts"
echo "fuzz: running $exe for ${seconds}s"
# shellcheck disable=SC2086
"$build/fuzz/$exe" "$build/corpus-$target" "$seeds" "${extra[@]}" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -artifact_prefix="$build/artifacts/" -print_final_stats=1 ${FUZZ_FLAGS:-}
