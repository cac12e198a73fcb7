#!/usr/bin/env bash
# Where a training step's time goes, per kind of op: `perf record` samples
# bench_seq2seq's g2p step and d2l's Transformer step (bench/training_steps.h,
# one thread), and the samples' functions are grouped into the kinds below
# (the first pattern a function's name matches), printed as one markdown
# table per step with the 12 functions that took the most.
#
#   scripts/profile_step.sh [BUILD_DIR] [SECONDS]      (defaults: build, 10)
#
# Needs perf (Debian's linux-perf) and a Release build; run it on a quiet
# machine. docs/performance.md ("Where a step's time goes") shows its tables.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-10}
command -v perf > /dev/null || { echo "profile_step.sh: no perf (apt-get install linux-perf)" >&2; exit 1; }
[[ -x "$build/bench_seq2seq" ]] || { echo "profile_step.sh: no $build/bench_seq2seq (build first)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for step in g2p transformer; do
  perf record -q -F 999 -o "$scratch/$step.data" "$build/bench_seq2seq" \
    --benchmark_filter="seq2seq/train_step/$step\$" --benchmark_min_time="$seconds" \
    > "$scratch/$step.out" 2> /dev/null
  perf report -i "$scratch/$step.data" --no-children --sort symbol --stdio 2> /dev/null |
    /usr/bin/python3 -c '
import re, sys
step, bench = sys.argv[1], open(sys.argv[2]).read()
kinds = [  # (kind, pattern), the first match wins
    ("GEMM micro-kernel", r"Kernel<\w+>::(tile|gemm_small)|gemm_naive"),
    ("GEMM packing", r"pack_"),
    ("GRU cell (gates)", r"gru"),
    ("masked softmax and attention scores", r"softmax|additive|attention"),
    ("dropout", r"dropout"),
    ("LayerNorm", r"Moments|layer_norm"),
    ("copies (contiguous, cat, memmove)", r"copy|memmove|memcpy|contiguous|for_each_offset|cat"),
    ("allocation, freeing, page faults", r"malloc|free|_int_|unlink_chunk|consolidate|clear_page|"
                                         r"page_fault|memset|operator new|~Node|mmap|\[k\]"),
    ("optimizer (Adam, clipping)", r"adam|clip|norm"),
    ("gradients summed into place, reductions", r"add_in_place|sum_dims|reduce"),
    ("element-wise ops", r"ag::(mul|add|sub|div|relu|gt|where|exp|tanh|sigmoid|neg)\b|binary|unary|"
                         r"expf|tanhf|logf"),
    ("autograd engine and dispatch", r"Node|backward|Engine|_Function_handler|shared_ptr|parallel"),
]
rows = []
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+\[(.)\]\s+(.*?)\s*(?:-\s+-\s*)?$", line)
    if m:
        rows.append((float(m.group(1)), ("[k] " if m.group(2) == "k" else "") + m.group(3)))
share = {kind: 0.0 for kind, _ in kinds}
share["other"] = 0.0
for percent, name in rows:
    kind = next((k for k, p in kinds if re.search(p, name)), "other")
    share[kind] += percent
rate = re.search(r"steps_per_s=([\d.]+)", bench)
rate = rate.group(1) if rate else "?"
print(f"\n{step} step, one thread: {rate} steps/s under perf\n")
print("| kind of work | share of the samples |\n|---|---|")
for kind, percent in sorted(share.items(), key=lambda kv: -kv[1]):
    if percent > 0:
        print(f"| {kind} | {percent:.1f}% |")
print("\n| function (the 12 most sampled) | share |\n|---|---|")
for percent, name in rows[:12]:
    name = re.sub(r"\(anonymous namespace\)::", "", name)
    name = name if len(name) <= 90 else name[:87] + "..."
    print(f"| `{name}` | {percent:.1f}% |")
' "$step" "$scratch/$step.out"
done
