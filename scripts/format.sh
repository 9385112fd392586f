#!/usr/bin/env bash
# Applies clang-format to every C++ and OpenCL source; with --check, fails if any file would change.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mapfile -t files < <(cd "$ROOT" && git ls-files '*.cpp' '*.hpp' '*.cl' '*.clh')
cd "$ROOT"
if [[ "${1:-}" == "--check" ]]; then
  clang-format --dry-run --Werror "${files[@]}"
else
  clang-format -i "${files[@]}"
fi
