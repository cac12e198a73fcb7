#!/usr/bin/env bash
# Builds attograd and runs every test (GoogleTest suites via ctest), the
# viewer's included: its widgets under Dear ImGui's null backend, and its
# screenshots under xvfb-run, checked cell by cell against the library, and
# the browser build's (test_web_viewer: WebAssembly in headless Chromium,
# built into build/web; Release pass only).
#   scripts/test.sh              Release build in build/
#   scripts/test.sh --sanitize   ASan + UBSan build in build-sanitize/
# Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh viewer
# Without Emscripten or Chromium, test_web_viewer reports itself skipped.
scripts/install_deps.sh web || echo "attograd: web packages not installed; test_web_viewer will be skipped"

build=build
flags=(-DCMAKE_BUILD_TYPE=Release)
if [[ "${1:-}" == "--sanitize" ]]; then
  build=build-sanitize
  # test_web_viewer is not built here (viz/viewer/CMakeLists.txt): this pass
  # checks host code under ASan, and the WebAssembly is the same either way.
  # Benchmarks and demos are not tests: skip them in the slow sanitizer build.
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTOGRAD_SANITIZE=ON -DATTOGRAD_BUILD_BENCHMARKS=OFF
         -DATTOGRAD_BUILD_EXAMPLES=OFF)
fi
jobs=$(nproc)
cmake -S . -B "$build" -G Ninja "${flags[@]}"
cmake --build "$build" -j "$jobs"
# One thread per test program, two programs at a time: the kernels' own
# thread tests set their thread counts explicitly.
ctest --test-dir "$build" --output-on-failure -j "$jobs"
