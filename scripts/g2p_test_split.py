#!/usr/bin/python3
"""The g2p test split as files: every pronunciation of each test word.

translate's split (cmudict.h): words of ^[a-z']+$ with crc32(word) % 20 == 0.

    g2p_test_split.py CMUDICT TEST.dict TEST.words

TEST.dict keeps the dictionary's lines of the test words (for
attograd-translate --evaluate), TEST.words the words, one a line, in the
dictionary's order (for --predict-file).
"""
import re
import sys
import zlib

source, dict_out, words_out = sys.argv[1:]
lines, words = [], []
for line in open(source, encoding="utf-8"):
    parts = line.split()
    if not parts:
        continue
    word = re.sub(r"\(\d+\)$", "", parts[0])
    if re.fullmatch(r"[a-z']+", word) and zlib.crc32(word.encode()) % 20 == 0:
        lines.append(line.rstrip("\n"))
        if not words or words[-1] != word:
            words.append(word)
open(dict_out, "w").write("\n".join(lines) + "\n")
open(words_out, "w").write("\n".join(dict.fromkeys(words)) + "\n")
