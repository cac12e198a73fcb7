#!/usr/bin/env bash
# ctest's test_web_viewer: builds the browser viewer into SITE
# (scripts/web.sh --build-only) and runs the viewer's screen tests against it
# in headless Chromium (TESTS is test_web_viewer: tests/viewer/test_screen_*.cpp
# built with the browser runner, see screen_check.cpp).
#   tests/web/run.sh SITE TESTS
# Exits 77, which ctest reports as skipped, only when Emscripten, Chromium or
# Node.js is missing and cannot be installed.
set -uo pipefail
site="$1"
tests="$2"
cd "$(dirname "$0")/../.."

have_tools() { command -v em++ && command -v chromium && command -v node; } >/dev/null
if ! have_tools; then
  scripts/install_deps.sh web || true
  if ! have_tools; then
    echo "SKIPPED: Emscripten (em++), Chromium or Node.js is not installed and could not be" \
         "installed (scripts/install_deps.sh web installs them)"
    exit 77
  fi
fi
scripts/web.sh --build-only --build-dir "$site" || exit 1
# The page has no resident-set figure (/proc), so the memory-growth tests stay
# desktop-only; --list-scenes runs the native binary.
exec "$tests" --gtest_filter='-*NoMemoryGrowth*:*ListScenes*'
