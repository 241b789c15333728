#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the demo need.
# Idempotent: runs apt-get update and install only when something is missing.
# Packages are installed without their recommendations, so every package the
# build needs is named here, including what libdnnl-dev only recommends:
# oneDNN's CMake config looks for OpenCL (ocl-icd-opencl-dev) and stops
# without it.
set -euo pipefail
PKGS=(build-essential cmake pkg-config ca-certificates
      libdnnl-dev ocl-icd-opencl-dev libjansson-dev zlib1g-dev
      libcriterion-dev coinor-libcbc-dev dataset-fashion-mnist
      python3 python3-pip)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
