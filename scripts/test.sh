#!/usr/bin/env bash
# The README's test command: installs what is missing, fetches the real test data, configures (scripts/prepare.sh,
# the same configuration as the demo's), builds (warnings are errors), checks the layering (scripts/check_layers.py,
# docs/architecture.md) and runs every ctest suite. Extra arguments go to ctest (e.g. scripts/test.sh -L unit). The
# output ends with ctest's summary line.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RTF_BUILD_DIR:-$ROOT/build}"
JOBS="${RTF_JOBS:-$(nproc)}"
START=$(date +%s)

mkdir -p "$BUILD"
bash "$ROOT/scripts/prepare.sh" "$BUILD"
cmake --build "$BUILD" -j "$JOBS"
python3 "$ROOT/scripts/check_layers.py" || { echo "test.sh: the layering check failed (docs/architecture.md)"; exit 1; }
set +e
ctest --test-dir "$BUILD" -j "$JOBS" --output-on-failure --timeout 900 "$@" 2>&1 | tee "$BUILD/ctest.log"
status=${PIPESTATUS[0]}
set -e
echo "test.sh: $(($(date +%s) - START)) s in all"
summary=$(grep -E '^[0-9]+% tests passed' "$BUILD/ctest.log" | tail -1 || true)
echo "${summary:-ctest printed no summary (exit status $status)}"
exit "$status"
