#!/usr/bin/env bash
# Builds attograd and runs every test (GoogleTest suites via ctest), the
# viewer's included: its widgets under Dear ImGui's null backend, and its
# screenshots under xvfb-run, checked cell by cell against the library, and
# the browser build's (web_screen_*: WebAssembly in headless Chromium, one
# ctest test per scene; Release pass only); every fuzz target over a fixed
# set of mutated inputs (fuzz/driver.cpp; label `fuzz`). The Release pass
# builds the page into build/web (scripts/web.sh) as its own phase, before
# ctest, so that no timed test compiles it.
#   scripts/test.sh              Release build in build/
#   scripts/test.sh --sanitize   ASan + UBSan build in build-sanitize/
#   scripts/test.sh --tsan       ThreadSanitizer build in build-tsan/: only the
#                                test programs that start threads (label `threads`)
#   scripts/test.sh --neon       the AArch64 build in build-neon/, its kernel and op tests
#                                under qemu-user (scripts/test_neon.sh)
#   ... --build-only             installs, configures and builds; runs no test
#                                (.ci/run builds the next pass while this one's tests run)
# Installs missing Debian packages first; compiles through ccache when it is
# installed. Prints each phase's wall time at the end, and appends it to
# $ATTOGRAD_PHASE_LOG when that is set (.ci/run sums the passes with it).
set -euo pipefail
cd "$(dirname "$0")/.."

pass=release
build=build
flags=(-DCMAKE_BUILD_TYPE=Release)
targets=()
ctest_args=()
# The sanitizer passes' flags. Debug information: line tables and inlined
# frames (-g1), all a report's stack needs, without the variables'
# descriptions that -g adds: a test program compiles in a quarter less time
# under ASan. Optimisation: -O1 for the tests, tutorials, viewer and fuzz
# targets (instrumented code compiles a third faster than at -O2) and -O2
# for the libraries they spend their time in (CMakeLists.txt,
# ATTOGRAD_LIBRARY_OPTIMIZATION).
line_tables=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DATTOGRAD_LIBRARY_OPTIMIZATION=-O2)
build_only=0
mode=""
for arg in "$@"; do
  case "$arg" in
    --build-only) build_only=1 ;;
    *) mode="$arg" ;;
  esac
done
case "$mode" in
  "") ;;
  --sanitize)
    pass=sanitize
    build="build-sanitize"
    # The browser tests are not built here (viz/viewer/CMakeLists.txt): this pass
    # checks host code under ASan, and the WebAssembly is the same either way.
    # Benchmarks and demos are not tests: skip them in the slow sanitizer build.
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${line_tables[@]}" -DATTOGRAD_SANITIZE=ON
           -DATTOGRAD_LIBRARY_UNITY=ON -DATTOGRAD_BUILD_BENCHMARKS=OFF -DATTOGRAD_BUILD_EXAMPLES=OFF)
    ;;
  --tsan)
    pass=tsan
    build="build-tsan"
    # The target threads_tests holds the test programs that start threads
    # (attograd_gtest in CMakeLists.txt labels them); nothing else is built.
    # Its test files at -O1, not the other passes' -O0: it compiles few of
    # them, and its tests took 1.5 times the CPU time (375 s against 255 s)
    # with them at -O0 (tests/README.md).
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${line_tables[@]}" -DATTOGRAD_TSAN=ON
           -DATTOGRAD_LIBRARY_UNITY=ON -DATTOGRAD_TEST_OPTIMIZATION=-O1
           -DATTOGRAD_BUILD_BENCHMARKS=OFF -DATTOGRAD_BUILD_EXAMPLES=OFF -DATTOGRAD_BUILD_TUTORIALS=OFF)
    targets=(--target threads_tests)
    ctest_args=(-L threads)
    ;;
  --neon) pass=neon ;;
  *) echo "usage: scripts/test.sh [--sanitize | --tsan | --neon] [--build-only]" >&2; exit 2 ;;
esac

# Phase timings: the wall seconds, and the CPU seconds (user + sys) of the
# processes the phase ran, so that a time can be scaled to a slower machine.
# The CPU comes from bash's `times` (its second line: the finished children
# of this shell), read in this shell itself: in a subshell it would count
# nothing. Printed however the script ends. A phase that fails ends the
# script with its status.
phases=()
times_file=$(mktemp)
children_cpu() {  # sets REPLY to the CPU seconds of the finished children
  times > "$times_file"
  REPLY=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /m|s/); cpu += t[1] * 60 + t[2] }
                         printf "%.0f", cpu }' "$times_file")
}
phase() {
  local name=$1 start=$SECONDS status=0 cpu_start
  shift
  children_cpu
  cpu_start=$REPLY
  "$@" || status=$?
  children_cpu
  phases+=("$pass $name $((SECONDS - start)) $((REPLY - cpu_start))")
  return $status
}
report_phases() {
  local line fields
  for line in "${phases[@]}"; do
    read -ra fields <<< "$line"
    printf 'attograd: phase %-18s %5d s wall %6d s CPU\n' "${fields[0]} ${fields[1]}" "${fields[2]}" \
      "${fields[3]}"
    [[ -z "${ATTOGRAD_PHASE_LOG:-}" ]] || echo "phase $line" >> "$ATTOGRAD_PHASE_LOG"
  done
  rm -f "$times_file"
  return 0
}
trap report_phases EXIT

if [[ $pass == neon ]]; then  # its own script, phases and all
  if ((build_only)); then
    phase build scripts/test_neon.sh --build-only
  else
    phase tests scripts/test_neon.sh
  fi
  exit
fi

install_deps() {
  scripts/install_deps.sh viewer || return
  # Without Emscripten or Chromium, the browser tests report themselves skipped.
  [[ $pass != release ]] || scripts/install_deps.sh web ||
    echo "attograd: web packages not installed; the browser tests will be skipped"
}
phase deps install_deps

if command -v ccache > /dev/null; then
  flags+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths below the checkout are hashed relative to it, and the build
  # directory is not hashed at all (ccache hashes it by default for a
  # compilation with debug information, as the sanitizer passes' -g1 are):
  # two checkouts share hits. The price: a sanitizer report's file names,
  # from the debug information, may name the checkout that filled the cache.
  # The test programs compile with a precompiled header, which ccache caches
  # only with this sloppiness.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
fi

# ThreadSanitizer (GCC 12's runtime) keeps its shadow memory at fixed
# addresses: with more than 28 bits of mmap randomisation (vm.mmap_rnd_bits;
# some Linux 6.x kernels default to 32) a program's mappings can land there
# and it aborts at start with "FATAL: ThreadSanitizer: unexpected memory
# mapping". So the TSan pass runs its build (ninja runs each test program to
# list its tests) and its tests without address randomisation, under
# setarch -R, which every child inherits; where that is refused (a container
# that forbids personality(2)) root lowers the setting to 28 instead.
run=()
if [[ $pass == tsan ]] && (($(cat /proc/sys/vm/mmap_rnd_bits 2> /dev/null || echo 0) > 28)); then
  if setarch "$(uname -m)" -R true 2> /dev/null; then
    run=(setarch "$(uname -m)" -R)
  elif [[ $(id -u) -eq 0 ]]; then
    echo "attograd: setting vm.mmap_rnd_bits to 28 for ThreadSanitizer"
    sysctl -qw vm.mmap_rnd_bits=28
  else
    echo "attograd: vm.mmap_rnd_bits > 28 and setarch -R refused: TSan may fail to start" >&2
  fi
fi
# A report fails the test (exit code 66) after the whole run, so that one run
# shows every race; the second stack of a lock-order report helps read it.
# The out-of-memory tests (test_allocator, test_robustness) ask for
# impossible sizes and expect ag::Error: as their __asan_default_options do
# for ASan, the allocator returns null instead of aborting the program.
export TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1 allocator_may_return_null=1}"

jobs=$(nproc)
phase configure cmake -S . -B "$build" -G Ninja "${flags[@]}"
phase build "${run[@]}" cmake --build "$build" -j "$jobs" "${targets[@]}"
# The page the browser tests load (the ctest fixture web_site would build it
# too, inside its timeout).
if [[ $pass == release ]] && command -v em++ > /dev/null; then
  phase web scripts/web.sh --build-only --build-dir "$build/web"
fi
((build_only == 0)) || exit 0

# The TSan pass must not quietly check less: the label `threads` selects the
# tests of every program that starts threads (tests/README.md lists them).
# Raise this when adding such tests; lowering it needs a reason.
min_thread_tests=131
if [[ $pass == tsan ]]; then
  selected=$(ctest --test-dir "$build" -N -L threads | sed -n 's/^Total Tests: //p')
  if ((selected < min_thread_tests)); then
    echo "attograd: the label 'threads' selects $selected tests, expected at least" \
      "$min_thread_tests (scripts/test.sh)" >&2
    exit 1
  fi
fi

# One thread per test program, two programs at a time: the kernels' own
# thread tests set their thread counts explicitly.
run_ctest() {
  local log="$build/ctest.log" status=0
  "${run[@]}" ctest --test-dir "$build" --output-on-failure -j "$jobs" "${ctest_args[@]}" |
    tee "$log" || status=$?
  # ctest's count line ("100% tests passed, 0 tests failed out of N"), which
  # .ci/run prints again at the end.
  [[ -z "${ATTOGRAD_PHASE_LOG:-}" ]] ||
    sed -n "s/^\(.*tests passed.*\)/count $pass \1/p" "$log" >> "$ATTOGRAD_PHASE_LOG"
  return $status
}
phase ctest run_ctest
