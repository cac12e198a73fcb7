#!/usr/bin/env bash
# Attention per call, attograd vs PyTorch CPU, in one sitting: builds and runs
# bench/bench_attention.cpp (one thread, median of 5 repetitions), then
# scripts/bench_attention_torch.py (one thread, median of 5 blocks), and
# prints both times and the speed-up torch / ours (> 1: we are faster)
# against the issue's targets:
#   toy shapes             at least 10x faster than PyTorch per call
#   b8_t512 fwd+backward   no slower than PyTorch (speed-up >= 1)
#
#   scripts/bench_attention_compare.sh [REGEX]   e.g. 'toy|t128' (default: all)
#   BUILD_DIR=build-x scripts/bench_attention_compare.sh   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-.}
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_BUILD_VIEWER=OFF >/dev/null
cmake --build "$build" --target bench_attention >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/bench_attention" --benchmark_filter="$filter" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/ours.json" \
  --benchmark_out_format=json >/dev/null
/usr/bin/python3 scripts/bench_attention_torch.py "$filter" >"$out/torch.txt"
/usr/bin/python3 - "$out/ours.json" "$out/torch.txt" <<'EOF'
import json
import sys

ours = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        assert b["time_unit"] == "us"
        ours[b["run_name"]] = b["real_time"]
torch, header = {}, ""
for line in open(sys.argv[2]):
    if line.startswith("#"):
        header = line[1:].strip()
    elif line.strip():
        name, us = line.split()
        torch[name] = float(us)

def target(name):
    if "/toy/" in name:
        return 10.0
    if name.endswith("b8_t512/forward_backward"):
        return 1.0
    return None

print(f"PyTorch: {header}")
print(f"{'case':36} {'ours us':>12} {'torch us':>12} {'torch/ours':>11}  target")
for name, t in torch.items():
    o = ours.get(name)
    if o is None:
        continue
    ratio = t / o
    goal = target(name)
    verdict = "" if goal is None else f">= {goal:g}x  {'met' if ratio >= goal else 'MISSED'}"
    print(f"{name:36} {o:12.1f} {t:12.1f} {ratio:10.2f}x  {verdict}")
EOF
