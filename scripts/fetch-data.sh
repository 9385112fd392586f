#!/usr/bin/env bash
# Installs the real neuroimaging data listed in docs/data.md into DESTDIR, from Debian packages:
# `apt-get download` (no root needed) into a temporary directory, `dpkg -x`, then only the listed
# files are copied to short, stable paths (DESTDIR/nitime/fmri1.nii.gz, ...), with each package's
# copyright file beside them. Idempotent: returns at once when DESTDIR/.complete lists every file.
# Usage: scripts/fetch-data.sh DESTDIR      (e.g. build/data, which the tests look in)
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DESTDIR" >&2
  exit 2
fi
dest=$1

# package | path inside the package | destination (relative to DESTDIR)
MANIFEST="
python3-nitime|usr/lib/python3/dist-packages/nitime/data/fmri1.nii.gz|nitime/fmri1.nii.gz
python3-nitime|usr/lib/python3/dist-packages/nitime/data/fmri2.nii.gz|nitime/fmri2.nii.gz
python3-nitime|usr/lib/python3/dist-packages/nitime/data/event_related_fmri.csv|nitime/event_related_fmri.csv
python3-nitime|usr/lib/python3/dist-packages/nitime/data/fmri_timeseries.csv|nitime/fmri_timeseries.csv
python3-nitime|usr/share/doc/python3-nitime/copyright|nitime/copyright
python3-nipy|usr/lib/python3/dist-packages/nipy/testing/functional.nii.gz|nipy/functional.nii.gz
python3-nipy|usr/lib/python3/dist-packages/nipy/testing/anatomical.nii.gz|nipy/anatomical.nii.gz
python3-nipy|usr/lib/python3/dist-packages/nipy/modalities/fmri/tests/spm_hrfs.mat|nipy/spm_hrfs.mat
python3-nipy|usr/lib/python3/dist-packages/nipy/modalities/fmri/tests/spm_bases.mat|nipy/spm_bases.mat
python3-nipy|usr/lib/python3/dist-packages/nipy/modalities/fmri/tests/spm_dmtx.npz|nipy/spm_dmtx.npz
python3-nipy|usr/share/doc/python3-nipy/copyright|nipy/copyright
python3-nibabel|usr/lib/python3/dist-packages/nibabel/tests/data/example4d.nii.gz|nibabel/example4d.nii.gz
python3-nibabel|usr/share/doc/python3-nibabel/copyright|nibabel/copyright
python3-dipy|usr/lib/python3/dist-packages/dipy/data/files/small_64D.nii|dipy/small_64D.nii
python3-dipy|usr/lib/python3/dist-packages/dipy/data/files/small_64D.bval|dipy/small_64D.bval
python3-dipy|usr/lib/python3/dist-packages/dipy/data/files/small_64D.bvec|dipy/small_64D.bvec
python3-dipy|usr/lib/python3/dist-packages/dipy/data/files/small_101D.nii.gz|dipy/small_101D.nii.gz
python3-dipy|usr/lib/python3/dist-packages/dipy/data/files/small_101D.bval|dipy/small_101D.bval
python3-dipy|usr/lib/python3/dist-packages/dipy/data/files/small_101D.bvec|dipy/small_101D.bvec
python3-dipy|usr/share/doc/python3-dipy/copyright|dipy/copyright
mricron-data|usr/share/mricron/templates/ch2bet.nii.gz|mricron/ch2bet.nii.gz
mricron-data|usr/share/mricron/templates/ch2.nii.gz|mricron/ch2.nii.gz
mricron-data|usr/share/mricron/templates/aal.nii.gz|mricron/aal.nii.gz
mricron-data|usr/share/mricron/templates/aal.nii.txt|mricron/aal.nii.txt
mricron-data|usr/share/mricron/templates/brodmann.nii.gz|mricron/brodmann.nii.gz
mricron-data|usr/share/doc/mricron-data/copyright|mricron/copyright
"

entries=()
while IFS= read -r line; do
  [[ -n $line ]] && entries+=("$line")
done <<<"$MANIFEST"

# Already complete? (.complete lists every destination, and every file is present.)
if [[ -f $dest/.complete ]]; then
  ok=1
  for e in "${entries[@]}"; do
    rel=${e##*|}
    if ! grep -qxF "$rel" "$dest/.complete" || [[ ! -s $dest/$rel ]]; then
      ok=0
      break
    fi
  done
  if ((ok)); then
    echo "fetch-data: all ${#entries[@]} files already in $dest"
    exit 0
  fi
fi

for tool in apt-get dpkg-deb; do
  if ! command -v "$tool" >/dev/null; then
    echo "fetch-data: '$tool' not found; this script needs a Debian/Ubuntu system" >&2
    exit 1
  fi
done

# Packages that still have a missing file.
packages=()
for e in "${entries[@]}"; do
  pkg=${e%%|*}
  rel=${e##*|}
  if [[ ! -s $dest/$rel ]] && [[ " ${packages[*]} " != *" $pkg "* ]]; then
    packages+=("$pkg")
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rtf-fetch-data.XXXXXX")
trap 'rm -rf "$work"' EXIT

download() {
  (cd "$work" && apt-get download -q "$1" >"$work/apt-$1.log" 2>&1)
}

for pkg in "${packages[@]}"; do
  echo "fetch-data: downloading $pkg"
  if ! download "$pkg"; then
    echo "fetch-data: apt-get download $pkg failed; running apt-get update and retrying"
    SUDO=""
    if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then SUDO="sudo"; fi
    $SUDO apt-get update -qq || true
    if ! download "$pkg"; then
      echo "fetch-data: cannot download package '$pkg':" >&2
      sed 's/^/  /' "$work/apt-$pkg.log" >&2
      exit 1
    fi
  fi
  debs=("$work/${pkg}"_*.deb)
  deb=${debs[0]}
  if [[ ! -f $deb ]]; then
    echo "fetch-data: apt-get download $pkg produced no .deb file" >&2
    exit 1
  fi
  dpkg-deb -x "$deb" "$work/x-$pkg"
  echo "fetch-data: unpacked $(basename "$deb")"
done

mkdir -p "$dest"
installed=0
for e in "${entries[@]}"; do
  IFS='|' read -r pkg src rel <<<"$e"
  [[ -s $dest/$rel ]] && continue
  from="$work/x-$pkg/$src"
  if [[ ! -f $from ]]; then
    echo "fetch-data: package $pkg has no file /$src (package layout changed?)" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$dest/$rel")"
  cp "$from" "$dest/$rel.part"
  mv "$dest/$rel.part" "$dest/$rel"
  echo "fetch-data: installed $rel  ($(stat -c %s "$dest/$rel") bytes, from $pkg:/$src)"
  installed=$((installed + 1))
done

for e in "${entries[@]}"; do echo "${e##*|}"; done >"$dest/.complete"
echo "fetch-data: $installed file(s) installed, ${#entries[@]} in total under $dest"
