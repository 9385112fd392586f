#!/usr/bin/env bash
# Checks of the generated command reference (`rtfmri help --markdown`, cli/command_support.hpp; docs/cli.md is its
# output): every subcommand that `rtfmri [CMD...] --help` lists, at any depth, has its section, and every option and
# positional of its --help appears in that section; the README names every subcommand; and scripts/check_cli_docs.sh
# fails, with a diff and the command that regenerates the file, on a stale copy of docs/cli.md.
#   usage: cli_reference_checks.sh RTFMRI WORK_DIR
set -uo pipefail
RTFMRI=$1
WORK=$2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
rm -rf "$WORK" && mkdir -p "$WORK"

# The subcommands listed by `rtfmri [CMD...] --help`.
subcommands() {
  "$RTFMRI" "$@" --help 2>&1 | awk '/^Subcommands:/ {on = 1; next} /^[^ ]/ {on = 0} on && /^  [^ ]/ {print $1}'
}
# Every name of every option and positional of `rtfmri CMD... --help` but --help, one a line (the lines that start
# an entry: two spaces; a flag's "{false}" left out).
names() {
  "$RTFMRI" "$@" --help 2>&1 | awk '/^(Options|Positionals):/ {on = 1; next} /^[^ ]/ {on = 0}
    on && /^  [^ ]/ { n = split($1, names, ",")
      for (i = 1; i <= n; i++) { sub(/\{.*\}$/, "", names[i]); if (names[i] !~ /^-h$|^--help$/) print names[i] } }'
}
# The section `## rtfmri WORDS` of the reference, up to the next section.
section() {
  awk -v heading="## rtfmri $*" '$0 == heading {on = 1; print; next} /^## / {on = 0} on' "$WORK/cli.md"
}

expect_ok "help --markdown runs" '^# rtfmri command reference' "$RTFMRI" help --markdown
"$RTFMRI" help --markdown >"$WORK/cli.md"

commands=0
check_command() {  # WORDS...: its section, its options and positionals, its README mention; then its subcommands
  local words="$*" missing="" text name
  commands=$((commands + 1))
  text=$(section "$@")
  if [[ -z $text ]]; then
    fail "rtfmri $words has no section '## rtfmri $words'"
  else
    while read -r name; do
      [[ -z $name ]] && continue
      grep -qF -- "\`$name\`" <<<"$text" || missing+=" $name"
    done < <(names "$@")
    if [[ -z $missing ]]; then pass "rtfmri $words: section with every option"; else fail "rtfmri $words lacks:$missing"; fi
  fi
  grep -qF -- "rtfmri $words" "$ROOT/README.md" || fail "README.md does not name rtfmri $words"
  local sub
  for sub in $(subcommands "$@"); do check_command "$@" "$sub"; done
}
for top in $(subcommands); do check_command "$top"; done
if ((commands >= 20)); then pass "$commands subcommands checked"; else fail "only $commands subcommands found"; fi

# The global options are in the reference too.
for name in --device --devices --verbose --version; do
  grep -qF -- "\`$name\`" "$WORK/cli.md" || fail "global option $name missing from the reference"
done

# The docs check: passes on the binary's own output, fails with a diff on a stale copy.
expect_ok "check_cli_docs passes on the binary's output" 'is what rtfmri help --markdown prints' \
  "$ROOT/scripts/check_cli_docs.sh" "$RTFMRI" "$WORK/cli.md"
sed 's/Rigid motion correction/Motion correction/' "$WORK/cli.md" >"$WORK/stale.md"
expect_error "check_cli_docs fails on a stale file, with a diff and the fix" \
  '\+.*Rigid motion correction.*FAIL.*out of date.*help --markdown >' \
  "$ROOT/scripts/check_cli_docs.sh" "$RTFMRI" "$WORK/stale.md"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
