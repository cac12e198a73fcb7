#!/usr/bin/env python3
"""scripts/g2p_align.py on dictionaries whose right alignments are plain,
standard library only.

    tests/g2p_align_test.py SOURCE_DIR

1. A toy language whose every spelling has one sound: b d t s B D T S, a i
   o AE IH AA, x K S (one letter, two phonemes), sh SH (two letters, one
   phoneme), and she SH with a silent e. Its words: onset vowel coda, onset
   vowel onset vowel coda, and onset vowel she, every combination (1,455
   words). Every pronunciation's alignment must be the construction's, in
   the dictionary's order, whatever the word's split: EM learns from the
   training words alone, so the dev and test words are Viterbi's with what
   it learnt; the log-likelihood never falls from one iteration to the next
   (EM's promise). A pronunciation of more than two phonemes a letter has
   no alignment: an empty third column. (The silent e stands after sh, where a
   pair cannot take it without splitting sh. After a one-letter spelling EM
   would join it to that one, t and e for T, as it joins k and n for N in
   knife: the model prefers fewer units, and a pair the dictionary uses
   often is a unit; g2p_align.py's docstring has more.)
2. The committed CMUdict sample (tests/data/cmudict-sample.dict), EM on its
   263 training pronunciations alone: knife's N from letters that include n
   and not i, its AY from i, its F from letters that include f (with so few
   words EM joins the final e to f; on the whole dictionary it is silent);
   box's K and S both from x; every alignment's groups in order.
"""
import itertools
import os
import re
import subprocess
import sys
import tempfile

from script_checks import Checks, source_dir_argument

# A spelling's phonemes, each with the offsets (in the spelling) of its letters.
ONSETS = {"b": [("B", (0,))], "d": [("D", (0,))], "t": [("T", (0,))], "s": [("S", (0,))],
          "sh": [("SH", (0, 1))]}
VOWELS = {"a": [("AE", (0,))], "i": [("IH", (0,))], "o": [("AA", (0,))]}
CODAS = dict(ONSETS, x=[("K", (0,)), ("S", (0,))])
SILENT_E = {"she": [("SH", (0, 1))]}
SPELLINGS = {**ONSETS, **VOWELS, **CODAS, **SILENT_E}
check = Checks("g2p_align_test")


def toy_words():
    """[(word, phonemes, letters of each phoneme as the TSV writes them)]."""
    words = []
    for parts in itertools.chain(itertools.product(ONSETS, VOWELS, CODAS),
                                 itertools.product(ONSETS, VOWELS, ONSETS, VOWELS, CODAS),
                                 itertools.product(ONSETS, VOWELS, SILENT_E)):
        phonemes, groups, at = [], [], 0
        for part in parts:
            for phoneme, offsets in SPELLINGS[part]:
                phonemes.append(phoneme)
                groups.append("+".join(str(at + offset) for offset in offsets))
            at += len(part)
        words.append(("".join(parts), " ".join(phonemes), " ".join(groups)))
    return words


def align(script, dictionary, out):
    done = subprocess.run([sys.executable, script, dictionary, out],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"g2p_align_test: g2p_align.py failed: {done.stderr}")
    with open(out, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f], done.stdout


def check_toy(script, root):
    words = toy_words()
    unalignable = ("bx", "B IY EH K S")  # 5 phonemes for 2 letters
    dictionary = os.path.join(root, "toy.dict")
    with open(dictionary, "w") as f:
        f.write(";;; the toy language\n")
        for word, phonemes, _ in words:
            f.write(f"{word} {phonemes}\n")
        f.write(" ".join(unalignable) + "\n")
    lines, log = align(script, dictionary, os.path.join(root, "toy.tsv"))
    # EM never lowers the likelihood: a wrong expectation or maximization does.
    curve = [float(x) for x in re.findall(r"log-likelihood (-?[0-9.]+)", log)]
    check(len(curve) > 1, f"no log-likelihood printed: {log}")
    check(all(b >= a - 1e-6 * abs(a) for a, b in zip(curve, curve[1:])),
          f"the log-likelihood fell: {curve}")
    check(len(lines) == len(words) + 1, f"{len(lines)} lines for {len(words) + 1} pronunciations")
    wrong = [(line, expected) for line, expected in zip(lines, words) if tuple(line) != expected]
    check(not wrong, f"{len(wrong)} toy words misaligned, the first: {wrong[:3]}")
    check(lines[-1] == [*unalignable, ""], f"the unalignable pronunciation: {lines[-1]}")
    print(f"g2p_align_test: toy language, {len(words) - len(wrong)} of {len(words)} words "
          "aligned as built")


def check_sample(script, source_dir, root):
    sample = os.path.join(source_dir, "tests", "data", "cmudict-sample.dict")
    lines, _ = align(script, sample, os.path.join(root, "sample.tsv"))
    alignment = {}
    for word, phonemes, letters in lines:
        groups = [set(map(int, g.split("+"))) for g in letters.split(" ")] if letters else []
        check(len(groups) == len(phonemes.split()) or not letters,
              f"{word} {phonemes}: {len(groups)} groups")
        # Groups run left to right and never share a letter across units.
        firsts = [min(g) for g in groups]
        check(firsts == sorted(firsts), f"{word}: groups out of order: {letters}")
        alignment.setdefault(word, groups)  # the first pronunciation
    knife, box = alignment["knife"], alignment["box"]
    check(len(knife) == 3 and 1 in knife[0] and 2 not in knife[0], f"knife's N: {knife}")
    check(len(knife) == 3 and knife[1] == {2}, f"knife's AY: {knife}")
    check(len(knife) == 3 and 3 in knife[2], f"knife's F: {knife}")
    check(box == [{0}, {1}, {2}, {2}], f"box: {box}")


def main(source_dir):
    script = os.path.join(source_dir, "scripts", "g2p_align.py")
    with tempfile.TemporaryDirectory() as root:
        check_toy(script, root)
        check_sample(script, source_dir, root)
    check.finish()


if __name__ == "__main__":
    main(source_dir_argument("g2p_align_test"))
