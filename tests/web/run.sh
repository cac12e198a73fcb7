#!/usr/bin/env bash
# ctest's browser tests (label `web`, viz/viewer/CMakeLists.txt):
#   tests/web/run.sh --build SITE   the test web_site: builds the browser viewer
#                                   into SITE (scripts/web.sh --build-only), the
#                                   fixture the page tests require
#   tests/web/run.sh SITE TESTS SUITES
#                                   a test web_screen_NAME: runs the program
#                                   TESTS (the screen tests built with the
#                                   browser runner, see screen_check.cpp) on
#                                   the gtest filter SUITES (one scene's
#                                   tests/viewer/test_screen_NAME.cpp) against
#                                   SITE in headless Chromium
# Exits 77, which ctest reports as skipped, only when Emscripten, Chromium or
# Node.js is missing and cannot be installed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

have_tools() { command -v em++ && command -v chromium && command -v node; } >/dev/null
if ! have_tools; then
  scripts/install_deps.sh web || true
  if ! have_tools; then
    echo "SKIPPED: Emscripten (em++), Chromium or Node.js is not installed and could not be" \
         "installed (scripts/install_deps.sh web installs them)"
    exit 77
  fi
fi
if [[ "$1" == --build ]]; then
  exec scripts/web.sh --build-only --build-dir "$2"
fi
site="$1"
tests="$2"
suites="${3:-*}"
if [[ ! -f "$site/attograd-viewer.wasm" ]]; then
  echo "tests/web/run.sh: $site has no page; the test web_site builds it" >&2
  exit 1
fi
# One Chromium for all of the program's pages (drive.js --keep-open): starting
# one per page cost about 1.5 s a page.
export ATTOGRAD_WEB_DRIVE
ATTOGRAD_WEB_DRIVE=$(mktemp -u "${TMPDIR:-/tmp}/attograd-drive-XXXXXX.sock")
node tests/web/drive.js --keep-open "$ATTOGRAD_WEB_DRIVE" --site "$site" &
driver=$!
trap 'kill "$driver" 2> /dev/null; wait "$driver"' EXIT
for ((tries = 0; tries < 300; ++tries)); do
  [[ -S "$ATTOGRAD_WEB_DRIVE" ]] && break
  kill -0 "$driver" 2> /dev/null || { echo "tests/web/run.sh: drive.js did not start" >&2; exit 1; }
  sleep 0.1
done
# The page has no resident-set figure (/proc), so the memory-growth tests stay
# desktop-only; --list-scenes runs the native binary.
"$tests" --gtest_filter="$suites-*NoMemoryGrowth*:*ListScenes*"
