#!/usr/bin/env bash
# The AArch64 path tested on an x86-64 machine: the library and its kernel and
# op tests cross-compiled with Debian's AArch64 compiler
# (cmake/aarch64-linux-gnu.cmake) and run under qemu-user, where the kernels
# run their NEON set (the NEON GEMM micro-kernel, the row kernels compiled for
# AArch64) and, forced with ATTOGRAD_ISA=scalar, the portable one.
#   scripts/test_neon.sh [--build-dir DIR] [--build-only]     (default build-neon)
# Installs what it needs (install_deps.sh neon); zlib's sources come from
# Debian's source package (scripts/fetch_sources.sh). scripts/test.sh runs it
# (tests/README.md: what it adds to CI's time).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-neon
build_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --build-only) build_only=1 ;;
    *) echo "usage: scripts/test_neon.sh [--build-dir DIR] [--build-only]" >&2; exit 2 ;;
  esac
  shift
done

scripts/install_deps.sh neon
scripts/fetch_sources.sh "$build/deps" zlib
zlib_dir=$(cd "$(ls -d "$build"/deps/zlib-*/ | head -1)" && pwd)

# The kernels (GEMM, the row kernels, the instruction set), every op's tests
# against PyTorch's fixtures, the reference path against the fast one, and
# the random graphs against PyTorch (test_differential).
tests="test_gemm;test_vector_math;test_instruction_set;test_reference;test_unary;test_binary"
tests+=";test_softmax;test_matmul;test_reduce;test_flash_attention;test_attention_scores"
tests+=";test_gru;test_loss;test_differential"

launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # As scripts/test.sh: hits across checkouts, and the precompiled header cached.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DZLIB_SOURCE_DIR="$zlib_dir" \
  -DATTOGRAD_LIBRARY_UNITY=ON -DATTOGRAD_BUILD_BENCHMARKS=OFF -DATTOGRAD_BUILD_EXAMPLES=OFF \
  -DATTOGRAD_BUILD_TUTORIALS=OFF -DATTOGRAD_BUILD_VIEWER=OFF -DATTOGRAD_TEST_NAMES="$tests" >/dev/null
cmake --build "$build" --target attograd_tests attograd_tests_threads -j "$(nproc)"
((build_only == 0)) || exit 0

# Each program once under qemu (a process per test case would start the
# emulator hundreds of times) on the NEON set. Left out: the GEMM's thread
# splits (RowsApart, SharedPanels, WorkSplitAcrossThreads: the same driver
# on every path, tested natively; 105 of the 140 s the threaded program takes
# under qemu). GemmTest and VectorMathTest run every available path and set
# in one process, the scalar ones included; then the reference tests and the
# switch again on ATTOGRAD_ISA=scalar, which holds every kernel to it.
status=0
passed=0
run() {
  local log
  echo "attograd: $* on AArch64 (qemu-aarch64)"
  log=$(env "$@" --gtest_brief=1 2>&1) || status=1
  echo "$log"
  passed=$((passed + $(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\./\1/p' <<< "$log" | head -1)))
}
start=$SECONDS
run ATTOGRAD_ISA=neon qemu-aarch64 "$build/attograd_tests"
run ATTOGRAD_ISA=neon qemu-aarch64 "$build/attograd_tests_threads" \
  --gtest_filter=-GemmTest.RowsApart:GemmTest.SharedPanels:GemmTest.WorkSplitAcrossThreads
run ATTOGRAD_ISA=scalar qemu-aarch64 "$build/attograd_tests" \
  --gtest_filter='ReferenceTest.*:InstructionSetTest.*'
echo "attograd: the AArch64 tests ran in $((SECONDS - start)) s under qemu"
count="$passed AArch64 tests passed under qemu-aarch64 (status $status)"
echo "attograd: $count"
[[ -z "${ATTOGRAD_PHASE_LOG:-}" ]] || echo "count neon $count" >> "$ATTOGRAD_PHASE_LOG"
exit $status
