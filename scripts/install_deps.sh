#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages attograd needs, only those missing.
#   scripts/install_deps.sh tests    compiler, CMake, GoogleTest, Google Benchmark, zlib, OpenBLAS, stb
#   scripts/install_deps.sh viewer   the above plus Dear ImGui, GLFW, OpenGL, Xvfb
# Runs apt-get directly as root, through sudo otherwise.
set -euo pipefail

packages=(g++ cmake ninja-build pkg-config libgtest-dev libbenchmark-dev zlib1g-dev libopenblas-dev libstb-dev)
if [[ "${1:-tests}" == "viewer" ]]; then
  packages+=(libimgui-dev libglfw3-dev libgl-dev xvfb xauth fonts-dejavu-core)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
echo "attograd: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
