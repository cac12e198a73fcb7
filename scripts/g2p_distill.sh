#!/usr/bin/env bash
# Letters to sounds, distilled: an ensemble of three models teaches one
# (sequence-level knowledge distillation, Kim and Rush 2016). docs/g2p.md,
# "An ensemble of three", has the figures of a run (the student was no
# better than one teacher).
#
#   scripts/g2p_distill.sh [BUILD_DIR] [WORK_DIR] [TEACHER.npz ...]
#
# 1. The teachers: the files given, or (none given) three runs of the
#    shipped model's command trained here: seed 0, seed 1, and seed 0
#    without dropout (about 25 minutes each on 2 quiet cores).
# 2. Their ensemble (attograd-translate --load A --load B --load C: the
#    three models' next-token probabilities averaged at every step)
#    pronounces every training word, greedy.
# 3. CMUdict is written again with that pronunciation for each training
#    word, in place of the dictionary's (dev and test words as they are):
#    WORK_DIR/distilled.dict. The split is by word, so it is the same split.
# 4. The student: the shipped command on that dictionary, seed 0, saved as
#    WORK_DIR/student.npz; its dev WER decides, its test WER is measured
#    once at its end, on the dictionary's own test words.
#
# Defaults: build, g2p-distill. Every log is kept in WORK_DIR. G2P_DICT
# names another dictionary (default Debian's CMUdict), G2P_DISTILL_OPTIONS
# options added to every training run (tests/g2p_distill_test.sh: a tiny
# model on the committed sample).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=${2:-g2p-distill}
shift $(($# > 2 ? 2 : $#))
teachers=("$@")
program=$build/attograd-translate
dict=${G2P_DICT:-/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict}
read -r -a extra <<<"${G2P_DISTILL_OPTIONS:-}"
[[ -x $program ]] || { echo "g2p_distill.sh: $program: build it first (scripts/test.sh)" >&2; exit 2; }
[[ -r $dict ]] || { echo "g2p_distill.sh: $dict: apt-get install pocketsphinx-en-us" >&2; exit 2; }
mkdir -p "$work"

# The shipped model's command (docs/g2p.md, "The shipped model"), with the
# options after it (a later flag overrides an earlier one).
recipe=(--task g2p --encoder bidirectional --embed 128 --hidden 256 --layers 2 --batch 128
        --lr 0.0015 --lr-schedule cosine --steps 10000 --label-smoothing 0.1 --average-last 5
        --eval-every 1000 --threads 2 --stats)
train() {  # train NAME OPTIONS...: WORK_DIR/NAME.npz, its log NAME.log, figures NAME.stats
  local name=$1
  shift
  echo "training $name: ${recipe[*]} $*" >&2
  "$program" "${recipe[@]}" "$@" "${extra[@]}" --save "$work/$name.npz" >"$work/$name.stats" \
    2>"$work/$name.log" || { tail -n 3 "$work/$name.log" >&2; exit 1; }
  grep -E "^(dev_wer|test_wer|test_per|train_seconds) " "$work/$name.stats" >&2 || true
}

start=$SECONDS
if ((${#teachers[@]} == 0)); then
  train teacher-seed0 --dict "$dict" --dropout 0.1 --seed 0
  train teacher-seed1 --dict "$dict" --dropout 0.1 --seed 1
  train teacher-nodropout --dict "$dict" --dropout 0 --seed 0
  teachers=("$work/teacher-seed0.npz" "$work/teacher-seed1.npz" "$work/teacher-nodropout.npz")
fi

# 2. The training words (translate's split: crc32(word) % 20 >= 2), and the
#    ensemble's pronunciation of each.
python3 scripts/g2p_test_split.py "$dict" "$work/train.dict" "$work/train.words" --split train
loads=()
for t in "${teachers[@]}"; do loads+=(--load "$t"); done
echo "the ensemble of ${#teachers[@]} pronounces $(wc -l <"$work/train.words") training words" >&2
"$program" "${loads[@]}" --threads 2 --predict-file "$work/train.words" --show-source >"$work/teacher.tsv"

# 3. The dictionary again, each training word with the ensemble's answer
#    alone (its first line; its other lines dropped). A word the ensemble
#    answers with no phoneme keeps the dictionary's lines.
python3 - "$dict" "$work/teacher.tsv" "$work/distilled.dict" <<'EOF'
import re, sys
teacher = {}
for line in open(sys.argv[2], encoding="utf-8"):
    word, rank, posterior, phonemes, source = line.rstrip("\n").split("\t")
    if phonemes:
        teacher[word] = phonemes
out, dictionary = [], {}
for line in open(sys.argv[1], encoding="utf-8"):
    parts = line.split()
    word = re.sub(r"\(\d+\)$", "", parts[0]) if parts else ""
    if word not in teacher:
        out.append(line)
        continue
    if word not in dictionary:
        out.append(f"{word} {teacher[word]}\n")
    dictionary.setdefault(word, []).append(" ".join(parts[1:]))
open(sys.argv[3], "w").writelines(out)
other = sum(teacher[w] not in p for w, p in dictionary.items())
print(f"distilled.dict: {len(dictionary)} training words, the ensemble's answer none of the "
      f"dictionary's pronunciations for {other}", file=sys.stderr)
EOF

# 4. The student.
train student --dict "$work/distilled.dict" --dropout 0.1 --seed 0
echo "g2p_distill.sh: $((SECONDS - start)) s; the student is $work/student.npz" >&2
