#!/usr/bin/env bash
# Runs clang-tidy (config: .clang-tidy) over the libraries' and the CLI's sources using build/compile_commands.json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RTF_BUILD_DIR:-$ROOT/build}"
cd "$ROOT"
mapfile -t files < <(git ls-files 'core/*.cpp' 'stream/*.cpp' 'sim/*.cpp' 'scanner/*.cpp' 'cli/*.cpp' 'viewer/*.cpp')
clang-tidy -p "$BUILD" --quiet --extra-arg=-Wno-error "${files[@]}" "$@" 2>&1 | grep -v "warnings generated" || true
