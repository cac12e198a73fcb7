#!/usr/bin/env bash
# Peak memory of one scaled dot-product attention call, attograd vs PyTorch:
# each number is a fresh process (bench/bench_attention_memory.cpp, and
# scripts/bench_attention_torch.py --memory) reporting the growth of its
# VmHWM over the call, inputs [8, T, 64] float32 excluded. Prints both and
# ours / torch against the issue's targets:
#   forward at T = 4096            streamed <= 0.1x PyTorch's
#   forward+backward at T = 1024   streamed <= 0.5x PyTorch's
# The materialised path (scores and weights stored, as PyTorch 1.13) is
# printed beside it for scale.
#
#   scripts/bench_attention_memory.sh
#   BUILD_DIR=build-x scripts/bench_attention_memory.sh   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_BUILD_BENCHMARKS=ON -DATTOGRAD_BUILD_VIEWER=OFF >/dev/null
cmake --build "$build" --target bench_attention_memory >/dev/null
peak() { "$@" | awk '/^peak_mib/ { print $2 }'; }
/usr/bin/python3 scripts/bench_attention_torch.py --memory forward 64 | sed -n 1p
printf '%-24s %14s %16s %12s %14s  %s\n' case "streamed MiB" "materialised MiB" "torch MiB" "streamed/torch" target
for spec in "forward 4096 0.1" "forward_backward 1024 0.5"; do
  set -- $spec
  ours=$(peak "$build/bench_attention_memory" "$1" "$2" streamed)
  mat=$(peak "$build/bench_attention_memory" "$1" "$2" materialised)
  torch=$(peak /usr/bin/python3 scripts/bench_attention_torch.py --memory "$1" "$2")
  /usr/bin/python3 - "$1/T$2" "$ours" "$mat" "$torch" "$3" <<'PY'
import sys
name, ours, mat, torch, goal = sys.argv[1], *map(float, sys.argv[2:])
ratio = ours / torch
print(f"{name:24} {ours:14.1f} {mat:16.1f} {torch:12.1f} {ratio:13.3f}x  <= {goal:g}x "
      f"{'met' if ratio <= goal else 'MISSED'}")
PY
done
