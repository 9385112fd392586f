#!/usr/bin/env bash
# The set-up shared by the README's two commands (scripts/demo.sh and scripts/test.sh): installs missing Debian
# packages (setup.sh), unpacks the real test data (fetch-data.sh) and configures the build directory. Both commands
# configure it here with the same options, so running one after the other recompiles nothing.
# Usage: scripts/prepare.sh BUILD_DIR   (RTF_WERROR=OFF to build with warnings not treated as errors)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$1"

bash "$ROOT/scripts/setup.sh"
bash "$ROOT/scripts/fetch-data.sh" "$BUILD/data"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTF_WERROR="${RTF_WERROR:-ON}" >"$BUILD/configure.log" ||
  { cat "$BUILD/configure.log"; exit 1; }
echo "prepare: $BUILD configured (RelWithDebInfo, warnings as errors: ${RTF_WERROR:-ON})"
