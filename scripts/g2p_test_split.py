#!/usr/bin/python3
"""A g2p split as files (the test split unless told): every pronunciation
of each of its words.

translate's split (cmudict.h): words of ^[a-z']+$ with crc32(word) % 20 == 0
test, == 1 dev, the rest training.

    g2p_test_split.py CMUDICT TEST.dict TEST.words [--split test|dev|train]

TEST.dict keeps the dictionary's lines of the split's words (for
attograd-translate --evaluate), TEST.words the words, one a line, in the
dictionary's order (for --predict-file; g2p_distill.sh's training words).
"""
import sys

from cmudict import KEPT_WORD, SPLITS, split_of, word_of

source, dict_out, words_out, *option = sys.argv[1:]
split = option[1] if option[:1] == ["--split"] and len(option) == 2 else "test"
if option and (option[:1] != ["--split"] or split not in SPLITS):
    sys.exit("g2p_test_split.py: the optional fourth argument is --split test|dev|train")
lines, words = [], []
for line in open(source, encoding="utf-8"):
    parts = line.split()
    if not parts:
        continue
    word = word_of(parts[0])
    if KEPT_WORD.fullmatch(word) and split_of(word) == split:
        lines.append(line.rstrip("\n"))
        if not words or words[-1] != word:
            words.append(word)
open(dict_out, "w").write("\n".join(lines) + "\n")
open(words_out, "w").write("\n".join(dict.fromkeys(words)) + "\n")
