#!/usr/bin/env bash
# The six tricky words' alignments for docs/compare.md: one PNG a word and a
# run, drawn by attograd-translate --heatmap from the models the comparison's
# grid trained (scripts/compare_grid.py keeps RUN.model.npz in its work
# directory; the models are not in the repository, so a new machine draws
# them after its own grid).
#
#   scripts/compare_heatmaps.sh BUILD_DIR WORK_DIR OUT_DIR RUN...
#
# Writes OUT_DIR/WORD-RUN.png for every word and run, greedy, as the program
# answers `--predict WORD`. docs/compare.md's pictures:
#   scripts/compare_heatmaps.sh build compare-work/grid docs/compare/heatmaps \
#     bi-additive-lr0.003-ls0.1-s1 bi-dot-lr0.003-ls0-s1 bi-general-lr0.003-ls0.1-s1 \
#     bi-general_scaled-lr0.003-ls0.1-s1 bi-multihead-lr0.003-ls0.1-s1
set -euo pipefail
(($# >= 4)) || { echo "usage: compare_heatmaps.sh BUILD_DIR WORK_DIR OUT_DIR RUN..." >&2; exit 2; }
program="$1/attograd-translate"
work=$2
out=$3
shift 3
[[ -x "$program" ]] || { echo "compare_heatmaps.sh: no $program (build first)" >&2; exit 1; }
mkdir -p "$out"
for run in "$@"; do
  model="$work/$run.model.npz"
  [[ -f "$model" ]] || { echo "compare_heatmaps.sh: no $model (run compare_grid.py)" >&2; exit 1; }
  for word in knife box thought queue xylophone psychology; do
    "$program" --load "$model" --predict "$word" --heatmap "$out/$word-$run.png" > /dev/null
  done
done
