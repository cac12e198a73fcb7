#!/usr/bin/env bash
# scripts/g2p_distill.sh end to end on the committed CMUdict sample, with a
# tiny model: three teachers train, their ensemble pronounces the training
# words, the dictionary is written again with those answers (the training
# words' only; dev and test lines as they were), and the student trains on
# it and is scored on the sample's own test words.
#
#   tests/g2p_distill_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/g2p_distill.XXXXXX")
trap 'rm -rf "$work"' EXIT
sample=$source_dir/tests/data/cmudict-sample.dict
fail() { echo "g2p_distill_test: $*" >&2; exit 1; }

G2P_DICT=$sample G2P_DISTILL_OPTIONS="--steps 20 --embed 8 --hidden 16 --batch 16 --eval-every 10 --average-last 2 --threads 1" \
  "$source_dir/scripts/g2p_distill.sh" "$build_dir" "$work" 2>"$work/run.log" ||
  fail "the script failed: $(tail -n 5 "$work/run.log")"

for f in teacher-seed0 teacher-seed1 teacher-nodropout student; do
  [[ -s $work/$f.npz ]] || fail "$f.npz was not written"
  grep -q "^test_wer " "$work/$f.stats" || fail "$f.stats has no test_wer"
done
grep -q -- "--dropout 0 --seed 0" "$work/run.log" || fail "no teacher without dropout: $(cat "$work/run.log")"

python3 - "$sample" "$work/teacher.tsv" "$work/distilled.dict" "$work/train.words" <<'PY'
import re, sys, zlib
sample, teacher_file, distilled, train_words = sys.argv[1:]
def entries(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if parts and not parts[0].startswith(";;;"):
            word = re.sub(r"\(\d+\)$", "", parts[0])
            out.setdefault(word, []).append(" ".join(parts[1:]))
    return out
original, rewritten = entries(sample), entries(distilled)
teacher = {}
for line in open(teacher_file, encoding="utf-8"):
    word, rank, posterior, phonemes, source = line.rstrip("\n").split("\t")
    assert rank == "1" and source == "model", line
    teacher[word] = phonemes
train = [w for w in open(train_words).read().split()]
kept = [w for w in original if re.fullmatch(r"[a-z']+", w)]
expected_train = [w for w in kept if zlib.crc32(w.encode()) % 20 >= 2]
assert train == expected_train, (len(train), len(expected_train))
assert sorted(teacher) == sorted(train), "the ensemble answered other words than the training words"
for word in kept:
    if teacher.get(word):  # an empty answer keeps the dictionary's lines
        assert rewritten[word] == [teacher[word]], (word, rewritten[word], teacher[word])
    else:  # dev and test words: the dictionary's own lines
        assert rewritten[word] == original[word], (word, rewritten[word], original[word])
print(f"g2p_distill_test: {sum(1 for w in train if teacher[w])} training words rewritten from the ensemble, "
      f"{len(kept) - len(train)} dev and test words as they were")
PY
grep -q "dev 24 words, test 10 words" "$work/student.log" || fail "the student's split differs: $(head -n 3 "$work/student.log")"
echo "g2p_distill_test: passed"
