#!/usr/bin/env bash
# Bundles built executables (tests, benches, rtfmri) with the shared libraries they load into one folder that runs on
# another Linux x86-64 machine without this project's packages: the GPU machine, which has its own OpenCL loader and
# driver, a glibc at least as new as this machine's and no package registry (docs/testing.md, docs/performance.md).
#
#   scripts/bundle.sh OUT_DIR EXECUTABLE...        e.g. scripts/bundle.sh .device/bundle build/bench/rtfmri-bench_kernels
#   then, there:  OUT_DIR/run NAME [ARGS...]       NAME: an executable's file name, e.g. rtfmri-bench_kernels
#
# OUT_DIR/bin holds the executables, OUT_DIR/lib every library they load (as ldd resolves them here) except those the
# other machine must supply itself: glibc's (libc, libm, libpthread, libdl, librt, libresolv, libutil, the loader),
# libstdc++ and libgcc_s (newer there, and backward compatible) and libOpenCL (the loader that finds its driver).
# Running it again adds to the folder; an executable of the same name is replaced. Strip OUT_DIR/bin/* to make it small.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 OUT_DIR EXECUTABLE..." >&2
  exit 2
fi
out=$1
shift
mkdir -p "$out/bin" "$out/lib"

# Libraries the target machine supplies (matched against each library's soname).
system_libraries='^(linux-vdso|ld-linux|libc\.so|libm\.so|libmvec\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libstdc\+\+\.so|libgcc_s\.so|libOpenCL\.so)'

for executable in "$@"; do
  if [[ ! -x $executable || -d $executable ]]; then
    echo "bundle: $executable is not an executable file (build it first)" >&2
    exit 1
  fi
  if ldd "$executable" | grep -q 'not found'; then
    echo "bundle: $executable needs a library ldd cannot find here:" >&2
    ldd "$executable" | grep 'not found' >&2
    exit 1
  fi
  cp -fL "$executable" "$out/bin/"
  # "libfoo.so.1 => /usr/lib/.../libfoo.so.1 (0x...)": copy each resolved library once, under its soname.
  while read -r soname path; do
    [[ $soname =~ $system_libraries ]] && continue
    [[ -e $out/lib/$soname ]] || cp -L "$path" "$out/lib/$soname"
  done < <(ldd "$executable" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done

cat >"$out/run" <<'LAUNCHER'
#!/usr/bin/env bash
# Runs one of this bundle's executables with the bundle's libraries first on the library path.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 || ! -x $here/bin/$1 ]]; then
  echo "usage: $0 NAME [ARGS...]; NAME one of: $(ls "$here/bin" | tr '\n' ' ')" >&2
  exit 2
fi
name=$1
shift
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/$name" "$@"
LAUNCHER
chmod +x "$out/run"
executables=$(find "$out/bin" -maxdepth 1 -type f | wc -l)
libraries=$(find "$out/lib" -maxdepth 1 -type f | wc -l)
echo "bundle: $executables executable(s) and $libraries librar(ies), $(du -sh "$out" | cut -f1), in $out"
