#!/usr/bin/env bash
# The README's test command: installs what is missing, fetches the real test data, configures,
# builds (warnings are errors) and runs every ctest suite. Extra arguments go to ctest
# (e.g. scripts/test.sh -L unit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RTF_BUILD_DIR:-$ROOT/build}"
JOBS="${RTF_JOBS:-$(nproc)}"

bash "$ROOT/scripts/setup.sh"
if [[ -x "$ROOT/scripts/fetch-data.sh" ]]; then
  bash "$ROOT/scripts/fetch-data.sh" "$BUILD/data"
fi
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTF_WERROR=ON
cmake --build "$BUILD" -j "$JOBS"
ctest --test-dir "$BUILD" -j "$JOBS" --output-on-failure --timeout 600 "$@"
