#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages attograd needs, only those missing.
#   scripts/install_deps.sh tests    compiler, ccache, CMake, GoogleTest, Google Benchmark, zlib,
#                                    OpenBLAS, stb, the DejaVu font (the heatmaps' labels; the
#                                    tests check their anti-aliasing), and CMUdict
#                                    (pocketsphinx-en-us: what attograd-translate --task g2p
#                                    reads; the tests use a sample), and Python 3
#                                    (scripts/g2p_distill.sh and its test; no modules)
#   scripts/install_deps.sh viewer   the above plus Dear ImGui, GLFW, OpenGL, Xvfb
#   scripts/install_deps.sh web      the first plus Emscripten, Node.js, Chromium (the browser
#                                    viewer, scripts/web.sh, and its headless test)
#   scripts/install_deps.sh neon     the first plus the AArch64 cross compiler, qemu-user and
#                                    GoogleTest's sources (scripts/test_neon.sh)
# Several groups may be named at once: scripts/install_deps.sh viewer web.
# Runs apt-get directly as root, through sudo otherwise.
set -euo pipefail

packages=(g++ cmake ninja-build pkg-config ccache libgtest-dev libbenchmark-dev zlib1g-dev
          libopenblas-dev libstb-dev fonts-dejavu-core pocketsphinx-en-us python3)
for group in "${@:-tests}"; do
  case "$group" in
    tests) ;;
    viewer) packages+=(libimgui-dev libglfw3-dev libgl-dev xvfb xauth) ;;
    # dpkg-dev unpacks the imgui and zlib source packages web.sh fetches.
    web) packages+=(emscripten nodejs chromium dpkg-dev) ;;
    # dpkg-dev unpacks the zlib source package test_neon.sh fetches.
    neon) packages+=(g++-aarch64-linux-gnu qemu-user googletest dpkg-dev) ;;
    *) echo "install_deps.sh: unknown group '$group' (tests, viewer, web, neon)" >&2; exit 2 ;;
  esac
done

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
