#!/usr/bin/env bash
# Letters to sounds on our own test words, every system in one sitting
# (docs/g2p.md, "Peers on our test words"): the shipped attograd models
# (translate::kShippedG2pModels, greedy) and Festival's CMU letter-to-sound
# rules (Debian's festival + festlex-cmu: cmu_lts_function, the rules and
# their stress rules alone, without the lexicon lookup), each scored by
# attograd-translate's own WER and PER code (--evaluate, --score-outputs) on
# the 6,171 test words, with its words per second on the same words.
#
# Festival's rules were trained on CMUdict 0.4, which holds most of our test
# words: its figure is measured on words it learned from, and flatters it.
# Festival's phones are mapped to ARPAbet (upper case; its schwa ax is AH,
# axr is ER); apostrophes are dropped from the words it reads, as its rules
# read letters only.
#
#   scripts/g2p_peers.sh [BUILD_DIR] [OUT_DIR]
#
# Defaults: build, g2p-peers. Writes OUT_DIR/peers.md. Run it on a quiet
# machine: the words-per-second column depends on it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-g2p-peers}
dict=/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict
program="$build/attograd-translate"
[[ -x "$program" ]] || { echo "g2p_peers.sh: no $program (build first)" >&2; exit 1; }
[[ -f "$dict" ]] || { echo "g2p_peers.sh: no $dict (scripts/install_deps.sh)" >&2; exit 1; }
command -v festival > /dev/null || { echo "g2p_peers.sh: no festival (apt-get install festival festlex-cmu)" >&2; exit 1; }
mkdir -p "$out"
/usr/bin/python3 scripts/g2p_test_split.py "$dict" "$out/test.dict" "$out/test.words"
words=$(wc -l < "$out/test.words")

rows=("| system | WER | PER | words/s | |" "|---|---|---|---|---|")
seconds() { /usr/bin/python3 -c "import time; print(time.monotonic())"; }
# row SYSTEM ANSWERS START END NOTE: scores a system's "word<TAB>phonemes"
# answers by attograd-translate's WER and PER and adds its table row, with
# its words per second between the times START and END.
row() {
  local system=$1 answers=$2 start=$3 end=$4 note=$5
  local stats="${answers%.answers}.stats"
  "$program" --score-outputs "$answers" --evaluate "$out/test.dict" --stats > "$stats" 2> /dev/null
  rows+=("$(/usr/bin/python3 - "$system" "$stats" "$words" "$start" "$end" "$note" << 'PY'
import sys
system, stats, words, start, end, note = sys.argv[1:]
figure = dict(line.split(" ", 1) for line in open(stats).read().splitlines() if " " in line)
wer, per = 100 * float(figure["eval_wer"]), 100 * float(figure["eval_per"])
rate = int(words) / (float(end) - float(start))
print(f"| {system} | {wer:.2f}% | {per:.2f}% | {rate:,.0f} | {note} |")
PY
  )")
}

for model in translate/models/g2p-cmudict.npz translate/models/g2p-cmudict-multihead.npz; do
  name=$(basename "$model" .npz)
  start=$(seconds)
  "$program" --load "$model" --predict-file "$out/test.words" --threads 2 > "$out/$name.tsv"
  end=$(seconds)
  cut -f1,4 "$out/$name.tsv" > "$out/$name.answers"
  row "attograd $name (greedy, 2 threads, load included)" "$out/$name.answers" "$start" "$end" ""
done

# Festival: one process reads a Scheme file that prints each word's phones.
{
  echo '(lex.select "cmu")'
  echo '(define (p w) (format t "%s\t%l\n" w (cmu_lts_function w nil)))'
  tr -d "'" < "$out/test.words" | sed 's/.*/(p "&")/'
} > "$out/festival.scm"
start=$(seconds)
festival --batch "$out/festival.scm" > "$out/festival.raw" 2>&1
end=$(seconds)
# ("word" nil (((n ay f) 1))) -> N AY F; each test word finds its line by
# the word Festival read (without apostrophes). A word it gave no phones is
# left without an answer (counted wrong).
/usr/bin/python3 - "$out" << 'PY'
import re, sys
out = sys.argv[1]
said = {}
for line in open(f"{out}/festival.raw"):
    if "\t" in line:
        word, result = line.rstrip("\n").split("\t", 1)
        said[word] = re.findall(r"[a-z]+", re.sub(r'^\("[^"]*" nil', "", result))
mapping = {"ax": "AH", "axr": "ER"}
with open(f"{out}/festival.answers", "w") as f:
    for word in open(f"{out}/test.words").read().split():
        phones = said.get(word.replace("'", ""), [])
        if phones:
            f.write(word + "\t" + " ".join(mapping.get(p, p.upper()) for p in phones) + "\n")
PY
row "Festival 2.5 CMU letter-to-sound rules (trained on CMUdict 0.4, which holds most of these words)" \
  "$out/festival.answers" "$start" "$end" "one process, start-up included"

{
  echo "On the $words test words, $(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores:"
  echo
  printf '%s\n' "${rows[@]}"
} > "$out/peers.md"
cat "$out/peers.md"
