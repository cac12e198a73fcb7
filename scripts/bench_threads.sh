#!/usr/bin/env bash
# Two threads against one on the two training steps of issue 45: the default
# letters-to-sounds run's step (--task g2p: the shipped model's sizes, batch
# 128) and d2l's Transformer step (--model transformer --task dates, batch
# 64), with attograd-translate and no evaluation.
#
#   scripts/bench_threads.sh [BUILD_DIR] [PAIRS]     (defaults: build, 5)
#   G2P_STEPS=200 TRANSFORMER_STEPS=1500             (the steps of one run)
#
# The runs alternate, one thread then two, PAIRS times, so that a drift of the
# machine (a VM's neighbours) falls on both sides of a pair; each pair gives
# one ratio, and the median of the ratios is printed last. Run it on a quiet
# machine: anything else on the cores is counted as the threads' loss.
set -euo pipefail
build=${1:-build}
pairs=${2:-5}
program="$build/attograd-translate"
[[ -x "$program" ]] || {
  echo "bench_threads.sh: no $program; build it first (cmake --build $build --target attograd-translate)" >&2
  exit 1
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(nproc) CPUs online"

# steps/s of one run: STEPS THREADS FLAGS...
steps_per_sec() {
  local steps=$1 threads=$2
  shift 2
  "$program" "$@" --steps "$steps" --threads "$threads" --eval-every 0 --stats 2>/dev/null |
    awk '$1 == "steps_per_sec" { print $2 }'
}

# PAIRS alternated pairs of one model: NAME STEPS FLAGS...
pairs_of() {
  local name=$1 steps=$2
  shift 2
  local ratios=()
  for ((pair = 1; pair <= pairs; ++pair)); do
    local one two
    one=$(steps_per_sec "$steps" 1 "$@")
    two=$(steps_per_sec "$steps" 2 "$@")
    local ratio
    ratio=$(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.3f", b / a }')
    ratios+=("$ratio")
    printf '%-12s pair %d: one thread %7.2f steps/s, two %7.2f: %s x\n' "$name" "$pair" "$one" "$two" "$ratio"
  done
  printf '%s\n' "${ratios[@]}" | sort -g |
    awk -v name="$name" '{ r[NR] = $1 } END {
      m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
      printf "%-12s two threads / one: median %.3f x of %d pairs (lowest %.3f, highest %.3f)\n", name, m, NR, r[1], r[NR] }'
}

pairs_of g2p "${G2P_STEPS:-200}" --task g2p
pairs_of transformer "${TRANSFORMER_STEPS:-1500}" --model transformer --task dates --batch 64
