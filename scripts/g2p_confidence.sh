#!/usr/bin/env bash
# How far a g2p model's confidence can be trusted (docs/g2p.md, "Confidence"):
# every test word pronounced once (greedy, attograd-translate --predict-file
# --json), then, for rising thresholds, the share of words whose confidence
# (the probability of the answer's phonemes and <eos>) reaches the threshold
# and the WER of those words (an answer is right when it is one of the
# dictionary's pronunciations of the word). Writes OUT/confidence.md.
#
#   scripts/g2p_confidence.sh [BUILD_DIR] [MODEL.npz] [OUT_DIR]
#
# Defaults: build, translate/models/g2p-cmudict.npz, g2p-confidence. Needs
# /usr/bin/python3 (the standard library only) and Debian's CMUdict.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
model=${2:-translate/models/g2p-cmudict.npz}
out=${3:-g2p-confidence}
dict=/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict
[[ -x "$build/attograd-translate" ]] || { echo "g2p_confidence.sh: no $build/attograd-translate" >&2; exit 1; }
[[ -f "$dict" ]] || { echo "g2p_confidence.sh: no $dict (scripts/install_deps.sh)" >&2; exit 1; }
mkdir -p "$out"
/usr/bin/python3 scripts/g2p_test_split.py "$dict" "$out/test.dict" "$out/test.words"
"$build/attograd-translate" --load "$model" --predict-file "$out/test.words" --json --threads 2 \
  > "$out/test.jsonl"
/usr/bin/python3 - "$out" "$model" << 'PY'
import json, re, sys
out, model = sys.argv[1:]
references = {}
for line in open(f"{out}/test.dict"):
    parts = line.split()
    references.setdefault(re.sub(r"\(\d+\)$", "", parts[0]), set()).add(" ".join(parts[1:]))
answers = [json.loads(line) for line in open(f"{out}/test.jsonl")]
right = [(a["confidence"], a["output"] in references[a["word"]]) for a in answers]
n = len(right)
rows = [f"Confidence of {model} on the {n:,} test words (greedy; "
        f"WER of all: {100 * sum(not r for _, r in right) / n:.2f}%)", "",
        "| confidence at least | words answered | WER of those |", "|---|---|---|"]
for threshold in (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99):
    kept = [r for c, r in right if c >= threshold]
    wer = 100 * sum(not r for r in kept) / len(kept) if kept else float("nan")
    rows.append(f"| {threshold:g} | {100 * len(kept) / n:.1f}% | {wer:.2f}% |")
open(f"{out}/confidence.md", "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
