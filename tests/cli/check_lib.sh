# Shared by the command-line check scripts (sourced): pass/fail counting and the two expectations.
#   expect_ok NAME PATTERN CMD...     exit 0 and output (stdout + stderr) matching PATTERN
#   expect_error NAME PATTERN CMD...  exit 1..125 (an error, not a signal) and output matching PATTERN
#   wait_for SECONDS CMD...           poll CMD every 0.1 s until it succeeds (a bound that only turns a hang into a failure)
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
wait_for() {
  local limit=$1
  shift
  for ((i = 0; i < limit * 10; i++)); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  return 1
}
# require_mpi RTFMRI: skip the script (exit 77) unless mpirun is installed and RTFMRI was built with MPI; then
# MPI=(timeout 600 mpirun --oversubscribe), root may run it, and no cross-memory attach (containers lack it).
require_mpi() {
  if ! command -v mpirun >/dev/null; then
    echo "SKIP: no mpirun (scripts/setup.sh installs openmpi-bin)"
    exit 77
  fi
  if ! "$1" devices 2>/dev/null | grep -q 'MPI: built in'; then
    echo "SKIP: rtfmri was built without MPI"
    exit 77
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  MPI=(timeout 600 mpirun --oversubscribe)
}

# For scripts that start servers and clients in the background: add each PID to PIDS (killed at exit); die MESSAGE
# fails with the last lines of every $WORK/*.log.
PIDS=()
kill_background() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap kill_background EXIT
die() {
  echo "FAIL: $*"
  for f in "$WORK"/*.log; do
    echo "--- $f"
    tail -30 "$f"
  done
  exit 1
}
