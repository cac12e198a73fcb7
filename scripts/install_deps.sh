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
#   scripts/install_deps.sh sanitizers  the first plus Clang and its sanitizer runtimes (the
#                                    sanitizer passes of scripts/test.sh compile with Clang)
# Several groups may be named at once: scripts/install_deps.sh viewer web.
# Runs apt-get directly as root, through sudo otherwise.
set -euo pipefail

optional=()
packages=(g++ cmake ninja-build pkg-config ccache libgtest-dev libbenchmark-dev zlib1g-dev
          libopenblas-dev libstb-dev fonts-dejavu-core pocketsphinx-en-us python3)
for group in "${@:-tests}"; do
  case "$group" in
    tests) ;;
    viewer) packages+=(libimgui-dev libglfw3-dev libgl-dev xvfb xauth) ;;
    # dpkg-dev unpacks the imgui and zlib source packages web.sh fetches.
    web) packages+=(emscripten nodejs chromium dpkg-dev) ;;
    # Debian packs the sanitizer runtimes apart (libclang-rt-dev, a mere
    # recommendation of clang's); Ubuntu 22.04 has no such package: they are in
    # clang's own. So it is installed where the package lists know it.
    sanitizers) packages+=(clang) optional+=(libclang-rt-dev) ;;
    *) echo "install_deps.sh: unknown group '$group' (tests, viewer, web, sanitizers)" >&2; exit 2 ;;
  esac
done

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
unknown_optional=()
for p in "${optional[@]}"; do
  installed "$p" || unknown_optional+=("$p")
done
[[ ${#missing[@]} -eq 0 && ${#unknown_optional[@]} -eq 0 ]] && exit 0

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
$sudo apt-get update -qq
for p in "${unknown_optional[@]}"; do
  apt-cache show "$p" > /dev/null 2>&1 && missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "attograd: installing ${missing[*]}"
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
