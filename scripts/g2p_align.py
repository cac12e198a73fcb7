#!/usr/bin/python3
"""Which letters spell each phoneme: an EM many-to-many letter-to-phoneme
aligner in the style of m2m-aligner (Jiampojamarn, Kondrak and Sherif 2007,
"Applying many-to-many alignments and hidden Markov models to
letter-to-phoneme conversion"), for the attention-alignment measure of
docs/compare (a phoneme's most-weighted letter is right when it is one of the
letters this script says spell the phoneme).

    g2p_align.py CMUDICT OUT.tsv [--iterations N]

The model, with m2m-aligner's letter-to-phoneme settings (--delX --maxX 2
--maxY 2, no --eqMap) and its joint maximization (--maxFn joint):
- an alignment cuts the word into units, left to right, each of 1 or 2
  letters, and gives each unit 0, 1 or 2 of the phonemes, in order: 1 -> 0,
  2 -> 0 (silent letters: e of knife, gh of thought), 1 -> 1, 1 -> 2 (x of
  box: K S) and 2 -> 1 (th of thought: TH). Never 2 -> 2: such a unit can
  always stand for two units of 1 -> 1, and EM, which favours fewer units,
  would swallow those (m2m-aligner leaves it out unless told --eqMap);
- every phoneme comes from letters (no phoneme is inserted from nothing), so
  a pronunciation of more than twice as many phonemes as its word has letters
  cannot be aligned (47 of CMUdict's, abbreviations read out: "aaa" TRIPLE A);
- an alignment scores the product over its units of p(letters, phonemes), p
  one distribution over all units. Not m2m-aligner's default, p(phonemes |
  letters), a distribution per letter string: under it a rare pair of
  letters is a unit at no cost (its few uses are all its own distribution
  has), and on CMUdict EM made "back" b|ac|k and "through" th|ro|u|gh.
  Under the joint p a pair is a unit when the dictionary uses it often (th,
  ck, ph, sh, kn, wr); a silent letter is a unit of its own only where it
  does not sit in such a pair (the e of knife; the k of knife is in kn).
EM learns p on every pronunciation of the training words only (the split of
scripts/cmudict.py) from m2m-aligner's start, p uniform over the units of
the training words' alignments, summing over all alignments (forward-
backward) until the log-likelihood gains less than 1e-4 nats a pronunciation
or after N iterations (default 30); it prints the log-likelihood, the sum
over the training pronunciations of log sum_alignments prod_units p, at every
iteration. Then every pronunciation of every word (training, dev and test)
gets its most probable alignment (Viterbi) under the learnt p; a unit that no
training alignment can use, or that EM gave less than 1e-12, scores 1e-12,
so a dev or test word's new unit is used only where nothing else fits.

OUT.tsv, one line per pronunciation, in the dictionary's order (the words and
phonemes as attograd-translate reads them: lower case, no stress digits):

    word <TAB> phonemes, space-separated <TAB> letters of each phoneme

The third column has one group per phoneme, in order, separated by single
spaces; a group is the 0-based indices into the word of the letters that
spell the phoneme, joined by '+'. Silent letters are in no group; the two
phonemes of a 1 -> 2 unit have the same group.

    knife   N AY F        0+1 2 3         kn, i, f; e silent
    box     B AA K S      0 1 2 2         x spells K S
    thought TH AO T       0+1 2+3 6       th, ou, t; gh silent

The third column is empty for a pronunciation that cannot be aligned.

On Debian's CMUdict: 120,219 training pronunciations, 26 iterations, about
3 minutes and 190 MB (CPython 3.11); units of 1 -> 1 670,143, 2 -> 1
154,495, 1 -> 2 12,808, and 10,101 silent letters.
"""
import argparse
import math
import sys
import time
from array import array

from cmudict import read_pronunciations, split_of

# (letters, phonemes) of a unit; see the docstring for the choice.
UNIT_SHAPES = ((1, 0), (2, 0), (1, 1), (1, 2), (2, 1))
TOLERANCE = 1e-4  # nats of log-likelihood gained per pronunciation to go on
FLOOR = 1e-12  # p of a unit EM never saw (or drove below it), for Viterbi
UNSEEN = 0  # the unit id of every such unit


class Lattice:
    """Every alignment of n letters with m phonemes as the paths of a graph:
    node i * (m + 1) + j is "i letters and j phonemes spelt", an edge is a
    unit. Only edges on some complete path are kept (a node is on one when
    j <= 2i and m - j <= 2 (n - i)), in the order of their target node, so
    one pass in order (or in reverse) is the forward (or backward) algorithm.
    The lattice depends on (n, m) only; a pronunciation adds its unit ids."""

    def __init__(self, n, m):
        self.nodes = (n + 1) * (m + 1)
        self.spans = []  # (first letter, end letter, first phoneme, end phoneme)
        for i in range(1, n + 1):
            for j in range(m + 1):
                if m - j > 2 * (n - i):
                    continue
                for letters, phonemes in UNIT_SHAPES:
                    si, sj = i - letters, j - phonemes
                    if si >= 0 and 0 <= sj <= 2 * si:
                        self.spans.append((si, i, sj, j))
        self.source = array("i", (si * (m + 1) + sj for si, _, sj, _ in self.spans))
        self.target = array("i", (i * (m + 1) + j for _, i, _, j in self.spans))
        self.source_reversed = self.source[::-1]
        self.target_reversed = self.target[::-1]


class Aligner:
    def __init__(self):
        self.lattices = {}  # (n, m) -> Lattice
        self.unit_of = {(None, None): UNSEEN}  # (letters, phonemes) -> unit id
        self.prob = []

    def lattice(self, word, phonemes):
        """The word's lattice and its edges' unit ids; new units are added
        while the training words are read (self.prob still empty) and are
        UNSEEN after; None when no alignment exists."""
        if len(phonemes) > 2 * len(word):
            return None
        shape = (len(word), len(phonemes))
        lattice = self.lattices.get(shape) or self.lattices.setdefault(shape, Lattice(*shape))
        ids = array("i")
        for si, i, sj, j in lattice.spans:
            key = (word[si:i], phonemes[sj:j])
            unit = self.unit_of.get(key)
            if unit is None:
                unit = UNSEEN if self.prob else self.unit_of.setdefault(key, len(self.unit_of))
            ids.append(unit)
        return lattice, ids

    def start(self):
        """m2m-aligner's start: every unit a training alignment can use
        counted once, so p is uniform."""
        units = len(self.unit_of) - 1
        self.prob = [0.0] + [1.0 / units] * units

    def em_step(self, examples):
        """One iteration of EM over (lattice, ids) pairs: the expected count
        of every unit under the current p (forward-backward), then p from
        them. Returns the log-likelihood under the p it started from."""
        prob = self.prob
        counts = [0.0] * len(prob)
        log_likelihood = 0.0
        for lattice, ids in examples:
            alpha = [0.0] * lattice.nodes
            alpha[0] = 1.0
            for s, t, unit in zip(lattice.source, lattice.target, ids):
                alpha[t] += alpha[s] * prob[unit]
            total = alpha[-1]
            log_likelihood += math.log(total)
            # beta starts at 1 / total so that alpha * p * beta is already the
            # unit's posterior: the share of the alignments' mass through it.
            beta = [0.0] * lattice.nodes
            beta[-1] = 1.0 / total
            for s, t, unit in zip(lattice.source_reversed, lattice.target_reversed, reversed(ids)):
                through = prob[unit] * beta[t]
                beta[s] += through
                counts[unit] += alpha[s] * through
        total = sum(counts)
        self.prob = [count / total for count in counts]
        return log_likelihood

    def viterbi(self, lattice, ids, phoneme_count):
        """The most probable alignment, as each phoneme's letter indices, and
        whether it needed a unit at FLOOR."""
        log_prob = self.log_prob
        best = [-math.inf] * lattice.nodes
        best[0] = 0.0
        back = [0] * lattice.nodes  # the best edge into each node
        for edge, (s, t, unit) in enumerate(zip(lattice.source, lattice.target, ids)):
            score = best[s] + log_prob[unit]
            if score > best[t]:
                best[t], back[t] = score, edge
        groups = [None] * phoneme_count
        floored = False
        node = lattice.nodes - 1
        while node:
            edge = back[node]
            si, i, sj, j = lattice.spans[edge]
            for phoneme in range(sj, j):
                groups[phoneme] = range(si, i)
            floored |= log_prob[ids[edge]] == log_prob[UNSEEN]
            node = lattice.source[edge]
        return groups, floored

    def freeze(self):
        """The log-probabilities Viterbi uses, FLOOR under every unit."""
        self.log_prob = [math.log(max(p, FLOOR)) for p in self.prob]
        self.log_prob[UNSEEN] = math.log(FLOOR)


def train(aligner, examples, iterations):
    aligner.start()
    previous = None
    for iteration in range(1, iterations + 1):
        start = time.perf_counter()
        log_likelihood = aligner.em_step(examples)
        print(f"iteration {iteration}: log-likelihood {log_likelihood:.1f} "
              f"({log_likelihood / len(examples):.4f} per pronunciation), "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        if previous is not None and log_likelihood - previous < TOLERANCE * len(examples):
            break
        previous = log_likelihood
    aligner.freeze()


def main(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dictionary", help="CMUdict")
    parser.add_argument("out", help="the alignments' TSV")
    parser.add_argument("--iterations", type=int, default=30, help="at most (default 30)")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    entries = read_pronunciations(args.dictionary)
    aligner = Aligner()
    # The training words first: they alone make the units and train p.
    training = {}
    for word, pronunciations in entries.items():
        if split_of(word) == "train":
            for phonemes in pronunciations:
                training[word, phonemes] = aligner.lattice(word, phonemes)
    examples = [example for example in training.values() if example]
    if not examples:
        sys.exit(f"g2p_align.py: {args.dictionary} has no training pronunciation to learn from")
    print(f"{len(examples)} training pronunciations ({len(training) - len(examples)} cannot "
          f"be aligned), {len(aligner.unit_of) - 1} units; "
          f"read in {time.perf_counter() - began:.1f} s", flush=True)
    train(aligner, examples, args.iterations)

    unaligned = floored = 0
    with open(args.out, "w", encoding="utf-8") as tsv:
        for word, pronunciations in entries.items():
            for phonemes in pronunciations:
                example = training.get((word, phonemes)) or aligner.lattice(word, phonemes)
                groups, needed_floor = (aligner.viterbi(*example, len(phonemes)) if example
                                        else ([], False))
                unaligned += not example
                floored += needed_floor
                letters = " ".join("+".join(map(str, group)) for group in groups)
                tsv.write(f"{word}\t{' '.join(phonemes)}\t{letters}\n")
    print(f"wrote {args.out}: {sum(map(len, entries.values()))} pronunciations, {unaligned} "
          f"without an alignment, {floored} aligned with a unit at the floor; "
          f"{time.perf_counter() - began:.1f} s in all")


if __name__ == "__main__":
    main(sys.argv[1:])
