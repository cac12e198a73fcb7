#!/usr/bin/env bash
# Attention per call, attograd vs PyTorch CPU, in one sitting: builds and runs
# bench/bench_attention.cpp (median of 5 repetitions), then
# scripts/bench_attention_torch.py (median of 5 blocks; it runs PyTorch at its
# best for the CPU and says which SDPA it used), and prints both times and the
# speed-up torch / ours (> 1: we are faster) against the issue's targets
# (float32, one thread unless the name ends in /2threads):
#   toy shapes                          >= 10x (dot/toy/forward_backward >= 14x)
#   sdpa/b8_t512/forward                >= 1.3x   (streamed, no grad)
#   sdpa/b8_t512/forward_backward       >= 1.2x
#   dot/b8_t512/forward_backward        >= 1.0x   (d2l, weights kept)
#   additive/b8_t128/forward_backward   >= 8x
# and the two-thread speed-up of our own SDPA forward+backward (our one-thread
# time / our two-thread time, >= 1.8x on an idle two-core machine).
# Peak memory: scripts/bench_attention_memory.sh.
#
#   scripts/bench_attention_compare.sh [REGEX]   e.g. 'toy|t128' (default: all)
#   BUILD_DIR=build-x scripts/bench_attention_compare.sh   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-.}
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_BUILD_BENCHMARKS=ON -DATTOGRAD_BUILD_VIEWER=OFF >/dev/null
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
report = json.load(open(sys.argv[1]))
gemm_path = report["context"].get("gemm_path", "?")
for b in report["benchmarks"]:
    if b.get("aggregate_name") == "median":
        assert b["time_unit"] == "us"
        ours[b["run_name"].removesuffix("/real_time")] = b["real_time"]
torch, header = {}, []
for line in open(sys.argv[2]):
    if line.startswith("#"):
        header.append(line[1:].strip())
    elif line.strip():
        name, us = line.split("#")[0].split()  # "# torch 2, openblas 1": which split won
        torch[name] = float(us)

TARGETS = {
    "sdpa/b8_t512/forward": 1.3,
    "sdpa/b8_t512/forward_backward": 1.2,
    "dot/b8_t512/forward_backward": 1.0,
    "additive/b8_t128/forward_backward": 8.0,
    "dot/toy/forward_backward": 14.0,
}

def target(name):
    if "/toy/" in name and name not in TARGETS:
        return 10.0
    return TARGETS.get(name)

print(f"attograd: gemm path {gemm_path}")
print(f"PyTorch: {'; '.join(header)}")
print(f"{'case':36} {'ours us':>12} {'torch us':>12} {'torch/ours':>11}  target")
for name, t in torch.items():
    o = ours.get(name)
    if o is None:
        continue
    ratio = t / o
    goal = target(name)
    verdict = "" if goal is None else f">= {goal:g}x  {'met' if ratio >= goal else 'MISSED'}"
    print(f"{name:36} {o:12.1f} {t:12.1f} {ratio:10.2f}x  {verdict}")
one = ours.get("sdpa/b8_t512/forward_backward")
two = ours.get("sdpa/b8_t512/forward_backward/2threads")
if one and two:
    ratio = one / two
    print(f"{'ours 1 thread / 2 threads, sdpa fwd+bwd':36} {one:12.1f} {two:12.1f} {ratio:10.2f}x  "
          f">= 1.8x  {'met' if ratio >= 1.8 else 'MISSED'} (needs an idle 2-core machine)")
EOF
