# Shared by the command-line check scripts (sourced): pass/fail counting and the two expectations.
#   expect_ok NAME PATTERN CMD...     exit 0 and output (stdout + stderr) matching PATTERN
#   expect_error NAME PATTERN CMD...  exit 1..125 (an error, not a signal) and output matching PATTERN
# The script ends with: echo "$failures failure(s)"; [[ $failures -eq 0 ]]
failures=0
pass() { echo "ok: $1"; }
fail() {
  echo "FAIL: $1"
  failures=$((failures + 1))
}
expect_ok() {
  local name=$1 pattern=$2
  shift 2
  local out
  out=$("$@" 2>&1)
  local rc=$?
  if [[ $rc -eq 0 && "$out" =~ $pattern ]]; then pass "$name"; else fail "$name (rc=$rc): $out"; fi
}
expect_error() {
  local name=$1 pattern=$2
  shift 2
  local out
  out=$("$@" 2>&1)
  local rc=$?
  if [[ $rc -ge 1 && $rc -lt 126 && "$out" =~ $pattern ]]; then pass "$name"; else fail "$name (rc=$rc): $out"; fi
}
