#!/usr/bin/env bash
# Command-line checks of the numeric options of every rtfmri command and subcommand (cli/command_support.hpp, issue 35),
# found in their --help: every option of type FLOAT refuses nan and inf ("must be a finite number (got nan)") before
# anything runs, an option that must be > 0 refuses 0 and one that must be >= 0 refuses -0.5, each saying what it
# needs and what it got, and no message or help text holds CLI11's DBL_MAX (a 309-digit "not in range" bound).
#   usage: option_checks.sh RTFMRI
set -uo pipefail
RTFMRI=$1
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

# The subcommands listed by `rtfmri [CMD] --help`.
subcommands() {
  "$RTFMRI" "$@" --help 2>&1 | awk '/^Subcommands:/ {on = 1; next} /^[^ ]/ {on = 0} on && NF {print $1}'
}
# "NAME TYPE" of each option of `rtfmri CMD... --help`, NAME its first long name (else its short one).
options() {
  "$RTFMRI" "$@" --help 2>&1 | awk '/^Options:/ {on = 1; next} /^[^ ]/ {on = 0}
    on && $1 ~ /^-/ && NF >= 2 {
      n = split($1, names, ","); name = names[1]
      for (i = 1; i <= n; i++) if (names[i] ~ /^--/) { name = names[i]; break }
      print name, $2
    }'
}
# expect_refused CMD_WORDS OPTION VALUE PATTERN: `rtfmri CMD OPTION VALUE` fails naming the option, matching PATTERN.
checked=0
expect_refused() {
  local words=$1 option=$2 value=$3 pattern=$4
  local out rc
  # shellcheck disable=SC2086  # the command's words
  out=$("$RTFMRI" $words "$option" "$value" 2>&1)
  rc=$?
  checked=$((checked + 1))
  if [[ $rc -ge 1 && $rc -lt 126 && "$out" =~ $pattern ]]; then return 0; fi
  fail "rtfmri $words $option $value (rc=$rc): $(echo "$out" | head -3)"
}

commands=()
for c in $(subcommands); do
  commands+=("$c")
  for s in $(subcommands "$c"); do commands+=("$c $s"); done
done
if [[ ${#commands[@]} -ge 20 ]]; then pass "${#commands[@]} commands listed"; else fail "only ${#commands[@]} commands: ${commands[*]}"; fi

floats=0 positives=0 nonnegatives=0
for words in "${commands[@]}"; do
  # shellcheck disable=SC2086
  help=$("$RTFMRI" $words --help 2>&1)
  if [[ "$help" =~ [0-9]{20} ]]; then fail "rtfmri $words --help holds a 20-digit number"; fi
  # shellcheck disable=SC2086
  while read -r option type; do
    if [[ $type == FLOAT* ]]; then
      floats=$((floats + 1))
      expect_refused "$words" "$option" nan "must be a finite number \(got nan\)"
      # A CLI11 range (checked first) says "Value inf not in range 0.000000 to 1.000000": plain enough.
      expect_refused "$words" "$option" inf "must be a finite number \(got inf\)|Value inf not in range [-0-9.]+ to"
    fi
    if [[ $type == *:POSITIVE* ]]; then
      positives=$((positives + 1))
      expect_refused "$words" "$option" 0 "$option: .*must be .*> 0 \(got 0\)"
    fi
    if [[ $type == *:NONNEGATIVE* ]]; then
      nonnegatives=$((nonnegatives + 1))
      expect_refused "$words" "$option" -0.5 "$option: must be a number >= 0 \(got -0.5\)"
    fi
  done < <(options $words)
done
# Today's commands have dozens of each: a help format this script no longer reads would find none.
if [[ $floats -ge 30 && $positives -ge 20 && $nonnegatives -ge 10 ]]; then
  pass "$floats FLOAT options refuse nan and inf, $positives refuse 0, $nonnegatives refuse -0.5 ($checked commands run)"
else
  fail "found only $floats FLOAT, $positives POSITIVE, $nonnegatives NONNEGATIVE options"
fi
# The messages of the issue, in full.
expect_error "randomise -n 0" '--permutations: the number of permutations must be at least 1 \(got 0\)' \
  "$RTFMRI" randomise -i "$0" -o /nonexistent/x -1 -n 0
expect_error "smooth --truncate 0" '--truncate: must be a number > 0 \(got 0\)' "$RTFMRI" smooth "$0" /nonexistent/x --fwhm 6 \
  --truncate 0

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
