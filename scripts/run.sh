#!/usr/bin/env bash
# Builds attograd and opens the main program: attograd-viewer, additive and
# dot-product attention side by side, live. With no display it says so and
# runs the text demo instead (the d2l toy example end to end, in the
# terminal). Installs missing Debian packages first.
#   scripts/run.sh [viewer arguments]    e.g. scripts/run.sh --scene playground
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh viewer
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)" --target attograd-viewer attention_demo
if [[ -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ]]; then
  exec build/viz/viewer/attograd-viewer "$@"
fi
echo "attograd: no display (DISPLAY is not set), so here is the text demo instead."
echo "attograd: to see the viewer without a display, write a screenshot:"
echo "  xvfb-run -a -s '-screen 0 1600x1000x24' build/viz/viewer/attograd-viewer --frames 5 --screenshot compare.png"
echo
exec build/attention_demo
