"""CMUdict as attograd-translate reads it, and the project's split by word,
for the Python scripts (g2p_test_split.py, g2p_align.py, compare_report.py).

The split (translate/include/attograd/translate/cmudict.h): a word of
^[a-z']+$ is a test word when zlib.crc32 of its UTF-8 bytes is 0 mod 20, a dev
word when it is 1, a training word otherwise.

read_pronunciations() keeps what translate/src/cmudict.cpp keeps, so that a
script sees the words and answers the program trains and scores on: ';;;'
lines and blank lines are comments, a '#' starts a note, words fold to lower
case and lose their "(N)", a stress digit after a phoneme is dropped, a word
outside ^[a-z']+$ is skipped, and so is a pronunciation the word already has.
"""
import re
import zlib

KEPT_WORD = re.compile(r"[a-z']+")
_ALTERNATE = re.compile(r"\(\d+\)$")
_STRESS = re.compile(r"(?<=[A-Z])[012]$")

SPLITS = ("train", "dev", "test")


def word_of(field):
    """'read(2)' -> 'read': the word of a dictionary line's first field."""
    return _ALTERNATE.sub("", field)


def split_of(word):
    """'test', 'dev' or 'train': the word's split (crc32 % 20: 0, 1, 2-19)."""
    remainder = zlib.crc32(word.encode()) % 20
    return "test" if remainder == 0 else "dev" if remainder == 1 else "train"


def read_pronunciations(path):
    """{word: [pronunciation, ...]} in the file's order, each pronunciation a
    tuple of phonemes; the first is the word's target, all are right answers."""
    entries = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            fields = line.split("#", 1)[0].split()
            if not fields or fields[0].startswith(";;;"):
                continue
            if len(fields) == 1:
                raise ValueError(f"{path}:{number}: '{fields[0]}' has no phonemes")
            word = word_of(fields[0].lower())
            if not KEPT_WORD.fullmatch(word):
                continue
            pronunciation = tuple(_STRESS.sub("", phoneme) for phoneme in fields[1:])
            known = entries.setdefault(word, [])
            if pronunciation not in known:
                known.append(pronunciation)
    if not entries:
        raise ValueError(f"{path}: no word of ^[a-z']+$ with phonemes: not a dictionary")
    return entries
