#!/usr/bin/env bash
# Installs every Debian/Ubuntu package rtfmri needs to build, test and run its demo.
# Idempotent: packages already present are skipped; prints what it installs.
# Runs as root, or through sudo when available.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers pocl-opencl-icd clinfo
  libeigen3-dev libzmq3-dev cppzmq-dev libnifti2-dev libboost-dev zlib1g-dev
  libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libimgui-dev libglfw3-dev libgl-dev xvfb xauth libgl1-mesa-dri
  python3 python3-scipy python3-statsmodels python3-dipy python3-nibabel python3-sklearn
  libclblast-dev librandom123-dev
  libgdcm-dev libgdcm-tools dcm2niix
  libopenmpi-dev openmpi-bin
  chromium
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    SUDO="sudo"
  else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
