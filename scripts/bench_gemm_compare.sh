#!/usr/bin/env bash
# attograd's GEMM against OpenBLAS at its best, on every shape attograd
# serves, one thread and two: builds bench/bench_gemm.cpp and runs its gemm/
# benchmarks REPS times each (default 5), interleaved in random order so that
# load from other processes spreads over both libraries alike. bench_gemm
# prints first what ran (CPU features, OpenBLAS core and config, thread
# counts, attograd's kernel), then a table
#   shape what threads ours_us openblas_us ratio best
# with median times per call, ratio = openblas / ours (> 1: attograd is
# faster; rows below 1.0 are flagged) and `best` the ratio of the fastest runs.
#
#   scripts/bench_gemm_compare.sh [REGEX]     e.g. 'attn|sq2048' (default: all shapes);
#                                             'g2p_|transformer_': the training steps' products
#   BUILD_DIR=build-x REPS=9 scripts/bench_gemm_compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-.}
build=${BUILD_DIR:-build}
reps=${REPS:-5}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" --target bench_gemm >/dev/null
"$build/bench_gemm" --benchmark_filter="^gemm/.*($filter)" --benchmark_repetitions="$reps" \
  --benchmark_enable_random_interleaving=true --benchmark_min_time=0.1 \
  --benchmark_color=false | grep -v "^gemm/"
