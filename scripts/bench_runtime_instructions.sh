#!/usr/bin/env bash
# Instructions per call of the d2l toy DotProductAttention (bench/bench_runtime.cpp),
# counted by valgrind's callgrind: unlike times, the count does not change when
# other processes load the machine, so it compares two builds reliably.
# Runs N and 2N calls and prints (Ir(2N) - Ir(N)) / N, which cancels the setup.
#
#   BUILD_DIR=build-x scripts/bench_runtime_instructions.sh [N]   (default N = 500)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
n=${1:-500}
cmake --build "$build" --target bench_runtime >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
instructions() {  # which calls
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
    "$build/bench_runtime" --toy_calls="$1" "$2" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for which in forward forward_backward; do
  a=$(instructions "$which" "$n")
  b=$(instructions "$which" $((2 * n)))
  echo "dot/toy/$which: $(((b - a) / n)) instructions per call (one thread)"
done
