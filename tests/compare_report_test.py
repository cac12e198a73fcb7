#!/usr/bin/env python3
"""scripts/compare_report.py on a results directory made here, with figures
worked out by hand (below), standard library only (CI has no numpy or
matplotlib; --curves is tried only where matplotlib imports).

    tests/compare_report_test.py SOURCE_DIR

The dictionary: 40 test words, each K AE T, but word 0 also K AA T S and
word 1 also T AH M EY T OW; a right answer is the first pronunciation (word
1's second in general's runs), a wrong one K AE D (1 edit from K AE T), word
0's wrong one K AA T Z (1 edit from K AA T S, 2 from K AE T: its nearest is
the longer one). So a run with w wrong words has WER 100 w / 40 and PER
100 w / (120 + 1 if word 0 is wrong + 3 if word 1 is right by its second).

Wrong words, seed 0 / 1 / 2:
  additive (bidirectional)        0-3 / 0-4 / 0-5               10 / 12.5 / 15
  dot (bidirectional)             0-19 in every seed            50
  general (bidirectional)         36-39 / 35-39 / 34-39         10 / 12.5 / 15
  additive (unidirectional)       0-3,20-24 / 1-4,20-26 / 0-5,20-23   22.5 / 27.5 / 25

Per word, the error averaged over seeds; the differences d:
- dot - additive: 1/3 (word 4), 2/3 (word 5), 1 (words 6-19), 0 (24 words):
  mean 15/40 = 37.5 points; sd of d 0.4725, so the normal approximation of
  the paired interval is 37.5 +- 1.96 * 47.25 / sqrt(40) = [22.86, 52.14];
  unpaired it would be +- 18.3. McNemar seed by seed: 16, 15, 14 words wrong
  in dot only, none in additive only: p = 2 / 2^16, 2 / 2^15, 2 / 2^14.
- general - additive: -1 (words 0-3), -2/3, -1/3, +1/3, +2/3, +1 (36-39):
  mean 0; sd 0.4773, interval about +-14.79; McNemar p = 1 in every seed.
- unidirectional - bidirectional (additive): mean 5/40 = 12.5 points;
  McNemar: 5/0 discordant words (p = 2/32), 7/1 (p = 2 * 9/256), 4/0 (2/16).
"""
import gzip
import os
import re
import subprocess
import sys
import tempfile
import zlib

from script_checks import Checks, source_dir_argument

HEADER = ("run,encoder,scoring,recipe,seed,steps,parameters,dev_wer,test_wer,test_per,"
          "test_wer_beam5,test_per_beam5,wall_s,steps_per_s,entropy,monotonic,"
          "alignment_agreement,paused_s,size")
WRONG = {  # (size, encoder, scoring) -> the wrong words of seeds 0, 1, 2
    ("half", "bidirectional", "additive"): [range(0, 4), range(0, 5), range(0, 6)],
    ("half", "bidirectional", "dot"): [range(0, 20)] * 3,
    ("half", "bidirectional", "general"): [range(36, 40), range(35, 40), range(34, 40)],
    ("half", "unidirectional", "additive"): [[*range(0, 4), *range(20, 25)],
                                             [*range(1, 5), *range(20, 27)],
                                             [*range(0, 6), *range(20, 24)]],
    # Full size: compared with each other only, never with the half size's cells.
    ("full", "bidirectional", "additive"): [range(0, 2)] * 3,
    ("full", "bidirectional", "dot"): [range(0, 10)] * 3,
}
check = Checks("compare_report_test")


def test_words(count):
    """The first `count` three-letter words of the test split (crc32 % 20 == 0)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = (a + b + c for a in letters for b in letters for c in letters)
    return [w for w in words if zlib.crc32(w.encode()) % 20 == 0][:count]


def write_answers(results, run, words, wrong, scoring, drop_word):
    """A run's greedy answers (the docstring's rules: the words in `wrong`
    answered wrongly, the others rightly; drop_word left out); returns its
    WER and PER as worked out by hand."""
    with gzip.open(os.path.join(results, "answers", run + ".tsv.gz"), "wt") as f:
        for i, word in enumerate(words):
            if word == drop_word:
                continue
            right = "T AH M EY T OW" if i == 1 and scoring == "general" else "K AE T"
            answer = ("K AA T Z" if i == 0 else "K AE D") if i in wrong else right
            f.write(f"{word}\t{answer}\n")
    wer = 100 * len(wrong) / len(words)
    per = 100 * len(wrong) / (3 * len(words) + (0 in wrong) + 3 * (scoring == "general"))
    return wer, per


def write_results(root, words, test_wer_offset=0.0, drop_word=None):
    """The dictionary and a results directory in root; returns their paths."""
    os.makedirs(root, exist_ok=True)
    dictionary = os.path.join(root, "cmudict.dict")
    with open(dictionary, "w") as f:
        f.write(";;; a comment\nzz Z IY\n")  # zz: a dev word, not a test word
        for i, word in enumerate(words):
            f.write(f"{word} K AE1 T\n")  # the stress digit is dropped, as the program does
            if i == 0:
                f.write(f"{word}(2) K AA T S\n")
            if i == 1:
                f.write(f"{word}(2) T AH M EY T OW\n")
    results = os.path.join(root, "results")
    os.makedirs(os.path.join(results, "answers"), exist_ok=True)
    os.makedirs(os.path.join(results, "curves"), exist_ok=True)
    lines = [HEADER,
             "tune-a3,bidirectional,additive,lr3e-3,0,300,1000,20.0,,,,,50,6,,,,0,half",
             "tune-d3,bidirectional,dot,lr3e-3,0,300,500,40.0,,,,,40,7,,,,0,half"]
    for (size, encoder, scoring), wrong_by_seed in WRONG.items():
        for seed, wrong in enumerate(wrong_by_seed):
            run = f"{size}-{encoder[:3]}-{scoring}-{seed}"
            wer, per = write_answers(results, run, words, set(wrong), scoring, drop_word)
            if seed == 0 and scoring == "dot":
                wer += test_wer_offset
            dev = {"additive": 15 + seed, "dot": 45}.get(scoring, 30)
            lines.append(f"{run},{encoder},{scoring},lr1e-3,{seed},300,"
                         f"{500 if scoring == 'dot' else 1000},{dev},{wer:.2f},{per:.2f},"
                         f"{wer + 1:.2f},{per + 1:.2f},60,5,0.5,0.9,0.8,0,{size}")
            with open(os.path.join(results, "curves", run + ".csv"), "w") as f:
                f.write(f"step,dev_wer\n100,{60 + seed}\n200,{40 + seed}\n300,{dev}\n")
    # The Transformer's three recipes: a cell each; cosine has the lowest dev
    # WER at seed 1, the seed they all have, so it is the one chosen and
    # compared with full-size additive (its seed 2's dev WER puts its mean
    # above budget's: the mean does not choose). cosine-s1's 5,400 s include
    # a 1,800 s pause of the grid.
    for recipe, seed, wrong, dev, wall, paused in (
            ("published", 1, 8, 30, 60, 0), ("budget", 1, 6, 28, 60, 0),
            ("cosine", 1, 4, 25, 5400, 1800), ("cosine", 2, 6, 35, 60, 0)):
        run = f"transformer-{recipe}-s{seed}"
        wer, per = write_answers(results, run, words, set(range(wrong)), "transformer", drop_word)
        lines.append(f"{run},transformer,transformer,{recipe},{seed},900,2000,{dev},{wer:.2f},"
                     f"{per:.2f},,,{wall},5,0.5,0.9,0.8,{paused},full")
        with open(os.path.join(results, "curves", run + ".csv"), "w") as f:
            f.write("step,dev_wer\n300,50\n600,40\n900,30\n")
    with open(os.path.join(results, "runs.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return dictionary, results


def run_report(script, dictionary, results, *options, env=None):
    return subprocess.run([sys.executable, script, results, "--dict", dictionary, *options],
                          capture_output=True, text=True, env=env)


def table_row(report, *first_cells):
    """The cells of the Markdown table row that starts with first_cells."""
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[:len(first_cells)] == list(first_cells):
            return cells
    check(False, f"no table row starting {first_cells}")
    return [""] * 10


def interval(cell):
    low, high = re.fullmatch(r"\[([-+]\d+\.\d+), ([-+]\d+\.\d+)\]", cell).groups()
    return float(low), float(high)


def p_values(cell):
    return [(float(p), int(a), int(b))
            for p, a, b in re.findall(r"seed \d+: ([0-9.e+-]+) \((\d+)/(\d+)\)", cell)]


def main(source_dir):
    script = os.path.join(source_dir, "scripts", "compare_report.py")
    words = test_words(40)
    with tempfile.TemporaryDirectory() as root:
        dictionary, results = write_results(root, words)
        # matplotlib must not be imported without --curves: a stand-in that
        # fails on import goes first on the path.
        fake = os.path.join(root, "fake")
        os.makedirs(os.path.join(fake, "matplotlib"))
        with open(os.path.join(fake, "matplotlib", "__init__.py"), "w") as f:
            f.write("raise ImportError('compare_report.py imported matplotlib')\n")
        env = dict(os.environ, PYTHONPATH=fake)
        done = run_report(script, dictionary, results, env=env)
        if done.returncode != 0:
            sys.exit(f"compare_report_test: the report failed: {done.stderr}")
        report = done.stdout

        check("40 test words" in report, "the report does not count 40 test words")
        # The cells: WER and PER mean ± sd (hand values in the docstring).
        cells = {key: table_row(report, "half", *key)[1:] for key in
                 [("bidirectional", "additive"), ("bidirectional", "dot"),
                  ("bidirectional", "general"), ("unidirectional", "additive")]}
        additive = cells["bidirectional", "additive"]
        check(additive[2:6] == ["lr1e-3", "3", "1,000", "12.50 ± 2.50"], f"additive: {additive}")
        check(additive[6] == "4.13 ± 0.83", f"additive PER {additive[6]} (4/121, 5/121, 6/121)")
        check(cells["bidirectional", "dot"][4:7] == ["500", "50.00 ± 0.00", "16.53 ± 0.00"],
              f"dot: {cells['bidirectional', 'dot']}")
        check(cells["bidirectional", "general"][5:7] == ["12.50 ± 2.50", "4.07 ± 0.81"],
              "general (word 1's second pronunciation is right): "
              f"{cells['bidirectional', 'general']}")
        check(cells["unidirectional", "additive"][5] == "25.00 ± 2.50",
              f"unidirectional: {cells['unidirectional', 'additive']}")
        check(additive[7] == "13.50 ± 2.50", f"beam 5 WER from runs.csv: {additive[7]}")

        # dot - additive: interval excludes 0, near the paired normal one.
        dot = table_row(report, "dot − additive", "bidirectional, half")
        check(dot[2] == "+37.50", f"dot − additive: {dot[2]}, expected +37.50")
        low, high = interval(dot[3])
        check.close(low, 22.86, 1.5, "dot − additive, lower end")
        check.close(high, 52.14, 1.5, "dot − additive, upper end")
        for (p, a, b), only_dot in zip(p_values(dot[4]), (16, 15, 14)):
            check((a, b) == (only_dot, 0), f"dot − additive discordant words {(a, b)}")
            check.close(p, 2 / 2 ** only_dot, 2e-3 * p, f"McNemar p, {only_dot} against 0")
        check(len(p_values(dot[4])) == 3, f"McNemar seeds: {dot[4]}")

        # general - additive: no difference, an interval around 0.
        general = table_row(report, "general − additive", "bidirectional, half")
        check(general[2] in ("+0.00", "-0.00"), f"general − additive: {general[2]}")
        low, high = interval(general[3])
        check.close(low, -14.79, 1.5, "general − additive, lower end")
        check.close(high, 14.79, 1.5, "general − additive, upper end")
        check([p for p, *_ in p_values(general[4])] == [1.0] * 3, f"general McNemar: {general[4]}")

        # The encoders: unidirectional - bidirectional with additive.
        encoders = table_row(report, "unidirectional − bidirectional", "additive, half")
        check(encoders[2] == "+12.50", f"unidirectional − bidirectional: {encoders[2]}")
        expected = [(2 / 32, 5, 0), (18 / 256, 7, 1), (2 / 16, 4, 0)]
        got = p_values(encoders[4])
        check(len(got) == 3, f"encoder McNemar: {encoders[4]}")
        for (p, a, b), (p_hand, a_hand, b_hand) in zip(got, expected):
            check((a, b) == (a_hand, b_hand), f"encoder discordant words {(a, b)}")
            check.close(p, p_hand, 2e-3 * p_hand, f"encoder McNemar p ({a}/{b})")

        # Full size: its dot against its additive (8 of 40 words), and nothing across sizes.
        full = table_row(report, "dot − additive", "bidirectional, full")
        check(full[2] == "+20.00", f"full-size dot − additive: {full[2]}, expected +20.00")
        comparisons = [line for line in report.splitlines() if line.startswith("| dot − ") or
                       line.startswith("| general − ") or line.startswith("| unidirectional − ")]
        check(len(comparisons) == 4, f"{len(comparisons)} comparisons, expected 3 half + 1 full")

        # The Transformer's recipes: three cells, 8, 6 and 4 (seed 2: 6) of 40
        # words wrong; cosine chosen on seed 1's dev WER (25 against 28 and
        # 30; its mean, 30, is budget's 28 and more), against additive's 2 of
        # 40 (words 2 and 3, seed 2 words 2 to 5, wrong in cosine only:
        # McNemar p = 2 / 4 and 2 / 16).
        for recipe, seeds, wer in (("published", "1", "20.00"), ("budget", "1", "15.00"),
                                   ("cosine", "2", "12.50 ± 3.54")):
            row = table_row(report, "full", "transformer", f"transformer ({recipe})")
            check(row[3:5] == [recipe, seeds] and row[6] == wer, f"the Transformer, {recipe}: {row}")
        check(table_row(report, "cosine (chosen on dev)")[1:4] == ["2", "30.00 ± 7.07",
                                                                   "12.50 ± 3.54"],
              "the Transformer's recipe of lowest dev WER at seed 1 is not the one chosen")
        check("Chosen on dev: the recipe of lowest dev WER at seed 1, the first seed every "
              "recipe has. Its test WER over the seeds that did not choose it (1): 15.00." in report,
              "the report does not say how the Transformer's recipe is chosen, or its seed 2")
        # Against the 25% target: cosine's word errors 1 (words 0-3), 1/2
        # (4-5), 0: mean 12.5, sd 0.3112, so about 12.5 +- 1.96 * 31.12 /
        # sqrt(40) = [2.86, 22.14], all of it below 25.
        target = re.search(r"Against the target of 25% test WER: the chosen recipe's "
                           r"(\S+)% over 2 seeds, 95% interval over the test words "
                           r"\[(\S+), (\S+)\]: met, the interval below it too\.", report)
        check(target is not None, "no sentence on the chosen recipe against the 25% target")
        if target:
            check(target[1] == "12.50", f"the chosen recipe's test WER {target[1]}, expected 12.50")
            low, high = float(target[2]), float(target[3])
            check.close(low, 2.86, 1.5, "the chosen recipe's WER, lower end")
            check.close(high, 22.14, 1.5, "the chosen recipe's WER, upper end")
        for a, b, difference in (("budget", "published", "-5.00"), ("cosine", "published", "-7.50"),
                                 ("cosine", "additive", "+7.50")):
            against = (f"transformer ({b}) (full)" if b != "additive" else
                       "additive (bidirectional, full)")
            row = table_row(report, f"transformer ({a}) (full) − {against}")
            check(row[1] == difference, f"transformer ({a}) − {b}: {row}")
        check(p_values(table_row(report, "transformer (cosine) (full) − additive (bidirectional, "
                                 "full)")[3]) == [(0.5, 2, 0), (0.125, 4, 0)],
              "cosine − additive McNemar")

        # The target's four verdicts, one seed with k of 40 words wrong: about
        # 100 k / 40 +- 1.96 sqrt(p (1 - p) / 40) points, p = k / 40.
        sys.path.insert(0, os.path.dirname(script))
        import compare_report

        def one_seed(wrong):
            cell = compare_report.Cell("full", "transformer", "transformer (t)")
            cell.add({"run": "t-s1", "seed": "1", "recipe": "t"}, [1] * wrong + [0] * (40 - wrong),
                     None, None)
            return cell

        for wrong, verdict in ((4, "met, the interval below it too"),  # [0.7, 19.3]
                               (8, "met by the mean; the interval reaches above it"),  # [7.6, 32.4]
                               (12, "not met by the mean; the interval reaches below it"),
                               (39, "not met, the interval above it too")):  # [92.7, 100]
            line = compare_report.target_line(one_seed(wrong))
            check(line.endswith(f": {verdict}.") and f"recipe's {100 * wrong / 40:.2f}% over 1 seed,"
                  in line, f"{wrong} of 40 wrong against the target: {line}")

        # Their cost without the grid's pauses: cosine's seed 1 trained 3,600
        # of its 5,400 s, at 5 x 5,400 / 3,600 = 7.5 steps a second; seed 2 at
        # its 5 in 60 s.
        cost = table_row(report.split("## How they attend and what they cost")[1], "full",
                         "transformer", "transformer (cosine)")
        check(cost[-2:] == ["6.25 ± 1.77", "1,830 ± 2503"],
              f"cosine's steps a second and training seconds without pauses: {cost}")

        # The training time: 2 tuning runs of 50 and 40 s; 18 test runs of 60 s,
        # the Transformer's 60, 60, 5,400 - 1,800 and 60 s: 4,950 s in all.
        check("Compute: 24 runs, 1.4 h of training (wall time less the grid's pauses); "
              "tuning 2 runs, 0.0 h, test 22 runs, 1.4 h." in report,
              f"the compute line: {[l for l in report.splitlines() if 'Compute' in l]}")

        # The verdicts, and the tuning.
        support = report.split("## What the intervals support")[1]
        shown, not_shown = support.split("Intervals including 0:")
        check("dot (bidirectional, half) − additive (bidirectional, half)" in shown,
              "dot not listed as shown")
        check("general (bidirectional, half) − additive (bidirectional, half)" in not_shown,
              "general not listed as not shown")
        check(table_row(report, "half", "bidirectional", "additive", "lr1e-3 (chosen)")[4:6] ==
              ["3", "16.00 ± 1.00"], "the chosen additive recipe's dev WER")
        check("dot (bidirectional, half): the chosen recipe lr1e-3 does not have the lowest"
              in report, "no note that dot's chosen recipe is not its best on dev")

        # Loud failures: a WER that its answers do not give, a missing answer.
        _, bad = write_results(os.path.join(root, "bad-wer"), words, test_wer_offset=0.02)
        done = run_report(script, dictionary, bad)
        check(done.returncode == 1 and "runs.csv says test_wer" in done.stderr,
              f"a WER off by 0.02 points was not refused: {done.returncode} {done.stderr}")
        _, bad = write_results(os.path.join(root, "bad-answers"), words, drop_word=words[7])
        done = run_report(script, dictionary, bad)
        check(done.returncode == 1 and "no answer for 1 test words" in done.stderr,
              f"a missing answer was not refused: {done.stderr}")

        # The curves, where matplotlib is there.
        try:
            __import__("matplotlib")
        except ImportError:
            print("compare_report_test: no matplotlib here, --curves not tried")
        else:
            png = os.path.join(root, "curves.png")
            done = run_report(script, dictionary, results, "--curves", png)
            check(done.returncode == 0, f"--curves failed: {done.stderr}")
            with open(png, "rb") as f:
                check(f.read(8) == b"\x89PNG\r\n\x1a\n", "--curves did not write a PNG")

    check.finish()


if __name__ == "__main__":
    main(source_dir_argument("compare_report_test"))
