#!/usr/bin/env bash
# Installs the Debian 12 packages gemmlab builds against, skipping those already present.
# Backends add their packages here as they land (pocl/OpenCL, hipcc, Kokkos, ...).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3 binutils
  clang libclang-rt-14-dev
  libopenblas-dev libblis-dev
  libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev zlib1g-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev
  hipcc libamdhip64-dev
  python3-matplotlib python3-numpy chromium
  libblas-test libdnnl-dev libxsmm-dev
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
