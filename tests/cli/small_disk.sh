# Shared by the command-line check scripts (sourced): run a command with a small, nearly full or full disk.
#   require_small_disk                       skip the script (exit 77) unless a private mount namespace can be made
#   on_small_disk DIR BYTES_FREE CMD...      runs CMD in a new mount namespace where DIR is a fresh tmpfs with
#                                            BYTES_FREE bytes left (0: full; tmpfs counts whole 4 KiB pages, so a
#                                            4096-byte file fits in 4096 and nothing more); DIR's contents there are
#                                            private to CMD and vanish with it. CMD's exit status is returned.
# The tmpfs lives only in the child's namespace (unshare -m as root, else an unprivileged user namespace: unshare -Urm),
# so nothing is left mounted whatever happens. A file CMD should see is copied in by CMD itself (e.g. sh -c 'cp ...').
SMALL_DISK_UNSHARE=()
require_small_disk() {
  local probe
  for args in "-m" "-Urm"; do
    probe=$(unshare $args sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=64k none "$d" && echo ok' 2>/dev/null)
    if [[ "$probe" == ok ]]; then
      SMALL_DISK_UNSHARE=(unshare $args)
      return 0
    fi
  done
  echo "SKIP: no private mount namespace here (unshare -m / -Urm refused): the full-disk checks need one"
  exit 77
}
on_small_disk() {
  local dir=$1 free=$2
  shift 2
  # tmpfs sizes round up to pages: make it 1 MiB and fill all but BYTES_FREE with a file nobody else touches.
  "${SMALL_DISK_UNSHARE[@]}" bash -c '
    dir=$1 free=$2; shift 2
    mkdir -p "$dir" && mount -t tmpfs -o size=1m none "$dir" || exit 125
    avail=$(( $(stat -f -c "%a*%S" "$dir") ))
    fill=$(( avail - free ))
    if (( fill > 0 )); then head -c "$fill" /dev/zero > "$dir/.filler" 2>/dev/null; fi
    "$@"' small_disk "$dir" "$free" "$@"
}
