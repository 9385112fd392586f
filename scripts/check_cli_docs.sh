#!/usr/bin/env bash
# docs/cli.md is the command reference the built rtfmri prints (`rtfmri help --markdown`, generated from the options
# each command declares). This fails, with the difference, when the file is out of date: after changing a command's
# options or help, regenerate it with `build/cli/rtfmri help --markdown > docs/cli.md`. Run by ctest (cli.docs_current),
# so by scripts/test.sh and CI.
#   usage: scripts/check_cli_docs.sh BUILD_DIR|RTFMRI [DOCS_FILE]   (DOCS_FILE: default docs/cli.md)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RTFMRI="${1:-$ROOT/build}"
[[ -d $RTFMRI ]] && RTFMRI="$RTFMRI/cli/rtfmri"
DOCS="${2:-$ROOT/docs/cli.md}"
if [[ ! -x $RTFMRI ]]; then
  echo "check_cli_docs: $RTFMRI is not built (build the rtfmri target first)" >&2
  exit 2
fi
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$RTFMRI" help --markdown >"$generated"
if ! diff -u --label "$DOCS" --label "rtfmri help --markdown" "$DOCS" "$generated"; then
  echo
  echo "check_cli_docs: FAIL: $DOCS is out of date: it is not what rtfmri prints from the options its commands"
  echo "declare (the difference is above: - the file, + the binary). Regenerate it and commit it:"
  echo "  $RTFMRI help --markdown > $DOCS"
  exit 1
fi
echo "check_cli_docs: $DOCS is what rtfmri help --markdown prints"
