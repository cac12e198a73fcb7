#!/usr/bin/env bash
# The viewer in a web page: attograd and attograd-viewer compiled to
# WebAssembly with Emscripten, served on 127.0.0.1.
#   scripts/web.sh                 build into build-web/, then serve it (Ctrl-C stops)
#   scripts/web.sh --build-only    build only (the test, tests/web/run.sh, uses this)
#   options: --build-dir DIR (default build-web), --port N (default 8000)
# Installs missing Debian packages first (install_deps.sh web). Dear ImGui's
# and zlib's sources come from Debian's source packages (apt-get source, into
# DIR/deps; a deb-src entry is added to apt's sources if there is none).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-web
port=8000
serve=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-only) serve=0 ;;
    --build-dir) build="$2"; shift ;;
    --port) port="$2"; shift ;;
    *) echo "usage: scripts/web.sh [--build-only] [--build-dir DIR] [--port N]" >&2; exit 2 ;;
  esac
  shift
done

scripts/install_deps.sh web
# Debian's Emscripten runs its JavaScript tools with Debian's node modules.
export NODE_PATH=/usr/share/nodejs

# ---- sources of Dear ImGui and zlib (Debian ships them compiled for the host only)
deps="$build/deps"
scripts/fetch_sources.sh "$deps" imgui zlib
deps=$(cd "$deps" && pwd)
imgui_dir=$(ls -d "$deps"/imgui-*/ | head -1)
zlib_dir=$(ls -d "$deps"/zlib-*/ | head -1)
[[ -f "$imgui_dir/imgui.cpp" && -f "$zlib_dir/inflate.c" ]] || { echo "web.sh: apt-get source imgui zlib failed" >&2; exit 1; }

# ---- the WebAssembly build: the libraries and the viewer, nothing else
# Through ccache where it is installed, with scripts/test.sh's settings (paths
# hashed relative to the checkout): another clone's page compiles from the
# cache. Emscripten's Python is the system's (Debian's package is made for
# it), not whichever python3 comes first in PATH: a version manager's shim
# there costs a process or two on each of the build's compilations.
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
fi
[[ -x /usr/bin/python3 ]] && export EMSDK_PYTHON="${EMSDK_PYTHON:-/usr/bin/python3}"
# The libraries in unity batches (ATTOGRAD_LIBRARY_UNITY): the page compiles
# them once, so a batch's shared headers cost once.
emcmake cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  -DATTOGRAD_LIBRARY_UNITY=ON -DATTOGRAD_BUILD_TESTS=OFF -DATTOGRAD_BUILD_BENCHMARKS=OFF -DATTOGRAD_BUILD_EXAMPLES=OFF \
  -DATTOGRAD_BUILD_TUTORIALS=OFF -DIMGUI_SOURCE_DIR="$imgui_dir" -DZLIB_SOURCE_DIR="$zlib_dir" >/dev/null
cmake --build "$build" --target attograd-viewer -j "$(nproc)"
echo "attograd: built $build/index.html, attograd-viewer.js ($(stat -c %s "$build/attograd-viewer.js") bytes)," \
     "attograd-viewer.wasm ($(stat -c %s "$build/attograd-viewer.wasm") bytes)"

[[ $serve -eq 1 ]] && exec node web/serve.js "$build" "$port"
exit 0
