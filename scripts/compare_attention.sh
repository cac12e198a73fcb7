#!/usr/bin/env bash
# The scoring functions compared on CMUdict, in one sitting (docs/g2p.md,
# "Additive against dot-product"): each model trained by the default g2p
# run's recipe (attograd-translate --task g2p --threads 2: the same data,
# seed 0, batches of 128, 1.5e-3 down a cosine, 5,500 steps, the dev WER every
# 1,000 steps), then scored once on the test words. The models:
#   additive, general, multihead   the bidirectional encoder (its keys are 2H
#                                  wide, the decoder's queries H)
#   dot                            d2l's one-way encoder: the bidirectional
#                                  one's keys have twice the queries' width,
#                                  which dot refuses
#   transformer                    g2p-seq2seq's published Transformer: 2
#                                  layers of 256, filter 256 and 2 heads (its
#                                  defaults), d2l's blocks
# For each: test WER and PER greedy (the training run's own end) and with
# beam 5 (--evaluate on the test split), parameters, training steps/s and
# wall time; from every test word's greedy alignment the mean entropy of an
# attention row (nats) and the share of rows whose most-weighted letter is
# at or after the previous row's (monotonicity; the Transformer's rows are
# its last block's cross-attention averaged over heads); and the six tricky
# words' alignments, one PNG per model and word.
#
#   scripts/compare_attention.sh [BUILD_DIR] [OUT_DIR] [MODEL...]
#
# BUILD_DIR defaults to build, OUT_DIR to compare-attention; the models to
# all five. Writes OUT_DIR/table.md (the table docs/g2p.md shows) and each
# run's log and model. Needs numpy (/usr/bin/python3, Debian's
# python3-numpy) for the table. About 20 minutes a model on 2 cores: run it
# on an otherwise quiet machine, the steps/s column depends on it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-compare-attention}
shift $(($# < 2 ? $# : 2))
models=("$@")
((${#models[@]} > 0)) || models=(additive general multihead dot transformer)
program="$build/attograd-translate"
dict=/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict
[[ -x "$program" ]] || { echo "compare_attention.sh: no $program (build first)" >&2; exit 1; }
[[ -f "$dict" ]] || { echo "compare_attention.sh: no $dict (scripts/install_deps.sh)" >&2; exit 1; }
mkdir -p "$out"

declare -A flags=(
  [additive]="--encoder bidirectional --attention additive"
  [general]="--encoder bidirectional --attention general"
  [multihead]="--encoder bidirectional --attention multihead --heads 4"
  [dot]="--encoder unidirectional --attention dot"
  [transformer]="--model transformer --hidden 256 --blocks 2 --heads 2 --ffn 256"
)

# The test split as a dictionary (every pronunciation of each test word, for
# --evaluate) and a word list.
/usr/bin/python3 scripts/g2p_test_split.py "$dict" "$out/test.dict" "$out/test.words"

tricky=(knife box thought queue xylophone psychology)
sitting_start=$SECONDS
for name in "${models[@]}"; do
  [[ -n "${flags[$name]:-}" ]] || { echo "compare_attention.sh: unknown model $name" >&2; exit 2; }
  echo "attograd: training $name ($(date -u +%H:%M))"
  start=$SECONDS
  # shellcheck disable=SC2086
  "$program" --task g2p --threads 2 --seed 0 ${flags[$name]} --save "$out/g2p-$name.npz" \
    --stats > "$out/$name.log" 2>&1
  echo "wall_sec $((SECONDS - start))" >> "$out/$name.log"
  "$program" --load "$out/g2p-$name.npz" --evaluate "$out/test.dict" --beam 5 --threads 2 \
    --stats > "$out/$name-beam5.log" 2>&1
  "$program" --load "$out/g2p-$name.npz" --predict-file "$out/test.words" --json --threads 2 \
    > "$out/$name-test.jsonl"
  for word in "${tricky[@]}"; do
    "$program" --load "$out/g2p-$name.npz" --predict "$word" --heatmap "$out/$name-$word.png" \
      > /dev/null
  done
done
echo "sitting_sec $((SECONDS - sitting_start))" > "$out/sitting.txt"

/usr/bin/python3 - "$out" "${models[@]}" << 'EOF'
import json, math, sys
import numpy as np
out, models = sys.argv[1], sys.argv[2:]

def stats(path):
    values = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 2:
            try:
                values[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return values

rows = ["| model | test WER greedy | PER greedy | WER beam 5 | PER beam 5 | parameters | "
        "steps/s (2 threads) | wall | row entropy (nats) | monotonic rows |",
        "|---|---|---|---|---|---|---|---|---|---|"]
for name in models:
    train, beam = stats(f"{out}/{name}.log"), stats(f"{out}/{name}-beam5.log")
    npz = np.load(f"{out}/g2p-{name}.npz")
    params = sum(npz[k].size for k in npz.files if not k.startswith("meta."))
    entropies, monotonic, rows_seen = [], 0, 0
    for line in open(f"{out}/{name}-test.jsonl"):
        weights = np.array(json.loads(line)["weights"], dtype=float)  # [outputs, sources]
        previous = None
        for row in weights:
            p = row[row > 0]
            entropies.append(float(-(p * np.log(p)).sum()))
            peak = int(row.argmax())
            if previous is not None:
                rows_seen += 1
                monotonic += peak >= previous
            previous = peak
    wall = train["wall_sec"]
    rows.append(f"| {name} | {100 * train['test_wer']:.2f}% | {100 * train['test_per']:.2f}% | "
                f"{100 * beam['eval_wer']:.2f}% | {100 * beam['eval_per']:.2f}% | {params:,} | "
                f"{train['steps_per_sec']:.2f} | {int(wall // 60)} min {int(wall % 60)} s | "
                f"{np.mean(entropies):.3f} | {100 * monotonic / max(rows_seen, 1):.1f}% |")
sitting = stats(f"{out}/sitting.txt")["sitting_sec"]
rows.append("")
rows.append(f"One sitting: {int(sitting // 60)} min {int(sitting % 60)} s for {len(models)} models.")
open(f"{out}/table.md", "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
EOF
