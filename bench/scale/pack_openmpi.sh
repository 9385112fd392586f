#!/usr/bin/env bash
# Packs Debian's OpenMPI runtime (orterun/mpirun, orted, the MCA components, PMIx, their libraries and help files) into
# one relocatable folder, for measuring `mpirun rtfmri ...` on a machine that has no OpenMPI and no package registry
# (the GPU machines of docs/scale.md). On that machine:  source OUT/env.sh; mpirun -np 4 ...
#   usage: pack_openmpi.sh OUT_DIR
set -euo pipefail
out=$1
arch=x86_64-linux-gnu
rm -rf "$out" && mkdir -p "$out/usr/bin" "$out/usr/lib/$arch" "$out/usr/share" "$out/lib"
cp -L /usr/bin/orterun /usr/bin/orted "$out/usr/bin/"
ln -s orterun "$out/usr/bin/mpirun"
cp -rL "/usr/lib/$arch/openmpi" "$out/usr/lib/$arch/"
cp -rL "/usr/lib/$arch/pmix2" "$out/usr/lib/$arch/"
rm -rf "$out/usr/lib/$arch/openmpi/include" "$out/usr/lib/$arch/pmix2/include" "$out/usr/lib/$arch/openmpi/lib/"*java*
find "$out" -name '*.a' -delete
cp -r /usr/share/openmpi "$out/usr/share/"
[[ -d /usr/share/pmix ]] && cp -r /usr/share/pmix "$out/usr/share/"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv|libutil|libstdc\+\+|libgcc_s)'
find "$out/usr" -type f \( -name '*.so*' -o -path '*/bin/*' \) | while read -r f; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [[ $path == */openmpi/* || $path == */pmix2/* ]] && continue
    cp -Ln "$path" "$out/lib/$name" 2>/dev/null || true
  done
done
find "$out" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec strip --strip-unneeded {} + 2>/dev/null || true
cat >"$out/env.sh" <<'ENV'
# Source this to use the packed OpenMPI: relocation through OPAL_PREFIX / PMIX_INSTALL_PREFIX.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$here/usr PMIX_INSTALL_PREFIX=$here/usr/lib/x86_64-linux-gnu/pmix2
export PATH=$here/usr/bin:$PATH
export LD_LIBRARY_PATH=$here/usr/lib/x86_64-linux-gnu/openmpi/lib:$here/usr/lib/x86_64-linux-gnu/pmix2/lib:$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PMIX_MCA_pcompress_base_silence_warning=1
ENV
du -sh "$out" | awk '{print "openmpi bundle:", $1}'
