#!/usr/bin/python3
"""The attention comparison's report (issue 63): every figure and interval of
the comparison, recomputed from a results directory (docs/compare/README.md
has its format: runs.csv, answers/RUN.tsv.gz, curves/RUN.csv).

    compare_report.py RESULTS_DIR [--dict CMUDICT] [--out REPORT.md] [--curves PNG]

1. The dictionary (default Debian's CMUdict) gives the test words (the split
   of scripts/cmudict.py) and their pronunciations; any of them is right.
2. Every test run (a runs.csv row with a test WER; one without is a tuning
   run, scored on dev only) is scored again from its greedy answers as
   attograd-translate scores (translate/.../cmudict.h): WER, the share of
   words whose answer is none of their pronunciations, and PER, the edits to
   the nearest pronunciation over the nearest pronunciations' phonemes. Where
   runs.csv differs by more than 0.01 points the script stops (exit 1).
3. The report, in Markdown (stdout unless --out): the cells (size x encoder x
   scoring: recipe, seeds, parameters, test WER and PER mean +- sd), how
   they attend and what they cost, the tuning on dev, the comparisons, the
   Transformer's recipes (each a cell of its own: the one of lowest dev WER
   at the first seed they all have is chosen; its test WER against issue
   63's 25% target; each against the first recipe, the chosen one against
   full-size additive), and which differences the intervals support.
4. --curves PNG: dev WER against steps, a panel per size and encoder, a line per
   scoring function (the mean over its seeds) in a band from the lowest to
   the highest seed. Needs matplotlib (Debian's python3-matplotlib for
   /usr/bin/python3), imported only then.

The statistics, for cell A against a reference cell B of the same size (each
scoring function against additive with the same encoder; each other encoder
against the bidirectional one with the same scoring function):
- a word's error in a cell is its error (0 or 1) averaged over the cell's
  seeds, so the difference A - B is the difference of the cells' mean WERs,
  in points;
- its 95% interval is a paired bootstrap over the test words: 10,000
  resamples of the words with replacement (seed 63), the same words for A
  and B, the 2.5th and 97.5th percentiles of the resampled differences;
- McNemar's exact test (two-sided: twice the binomial(n, 1/2) tail of the
  smaller discordant count, at most 1) on each seed pair, the runs of A and
  B with the same seed (seeds only one cell has are left out). Every seed's
  p is shown, not a summary of them: they are not independent tests of one
  hypothesis (a median p has no error rate), and what they tell is whether
  one run of each would already tell the cells apart. The interval, over
  every seed, is the verdict; the list at the end is written from it.
"""
import argparse
import bisect
import csv
import gzip
import math
import os
import random
import statistics
import sys
import time
from itertools import accumulate

from cmudict import read_pronunciations, split_of

DEFAULT_DICT = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
COLUMNS = ("run encoder scoring recipe seed steps parameters dev_wer test_wer test_per "
           "test_wer_beam5 test_per_beam5 wall_s steps_per_s entropy monotonic "
           "alignment_agreement paused_s size").split()
TEXT_COLUMNS = {"run", "encoder", "scoring", "recipe", "seed", "size"}
REFERENCE_SCORING = "additive"
REFERENCE_ENCODER = "bidirectional"
TOLERANCE = 0.01  # points of WER or PER between runs.csv and the answers
RESAMPLES = 10_000
BOOTSTRAP_SEED = 63
SIGNIFICANCE = 0.05  # only to count the seed pairs McNemar tells apart
TRANSFORMER_TARGET_WER = 25.0  # issue 63: "Target: <= 25% test WER" for the Transformer


class Failure(Exception):
    """What is wrong with the results directory; the script stops on it."""


# ---- reading -----------------------------------------------------------------------

def read_runs(path):
    """runs.csv's rows as dicts, numbers as floats (None where empty)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise Failure(f"{path}: no column {', '.join(missing)}")
            rows = list(reader)
    except OSError as e:
        raise Failure(f"cannot read {path}: {e.strerror}") from None
    seen = set()
    for number, row in enumerate(rows, 2):
        for column in COLUMNS:
            text = (row[column] or "").strip()
            if column in TEXT_COLUMNS:
                row[column] = text
                continue
            try:
                row[column] = float(text) if text else None
            except ValueError:
                raise Failure(f"{path}:{number}: {column} '{text}' is not a number") from None
        if not row["run"] or "/" in row["run"] or row["run"] in seen:
            raise Failure(f"{path}:{number}: the run name '{row['run']}' is empty, "
                          "has a '/' or is used before")
        seen.add(row["run"])
    return rows


def read_answers(path, pronunciations):
    """The run's answer (a tuple of phonemes) to every test word, in the
    order of `pronunciations`; each word exactly once, no other word."""
    answers = {}
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                word, tab, phonemes = line.rstrip("\n").partition("\t")
                if not tab or word not in pronunciations or word in answers:
                    what = ("no tab" if not tab else "not a test word" if
                            word not in pronunciations else "a second answer")
                    raise Failure(f"{path}:{number}: '{word}': {what}")
                answers[word] = tuple(phonemes.split())
    except (OSError, EOFError) as e:
        raise Failure(f"cannot read {path}: {e}") from None
    missing = [word for word in pronunciations if word not in answers]
    if missing:
        raise Failure(f"{path}: no answer for {len(missing)} test words "
                      f"({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
    return [answers[word] for word in pronunciations]


def read_curve(path):
    """{step: dev WER} from curves/RUN.csv."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != ["step", "dev_wer"]:
                raise Failure(f"{path}: the columns must be step,dev_wer")
            return {int(row["step"]): float(row["dev_wer"]) for row in reader}
    except OSError as e:
        raise Failure(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        raise Failure(f"{path}: {e}") from None


# ---- scoring -----------------------------------------------------------------------

def edit_distance(a, b):
    """Levenshtein distance between two phoneme sequences."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (x != y))
    return row[-1]


def score_run(row, answers, pronunciations):
    """Each test word's error (0 or 1), and the run's WER and PER in percent
    (cmudict.h's score_pronunciations: the nearest pronunciation is the first
    among equals); a mismatch with runs.csv over TOLERANCE is a Failure."""
    errors, edits, reference_phonemes = [], 0, 0
    for answer, references in zip(answers, pronunciations.values()):
        distances = [edit_distance(answer, r) if answer != r else 0 for r in references]
        nearest = distances.index(min(distances))
        errors.append(int(distances[nearest] > 0))
        edits += distances[nearest]
        reference_phonemes += len(references[nearest])
    wer = 100 * sum(errors) / len(errors)
    per = 100 * edits / reference_phonemes
    for name, value in (("test_wer", wer), ("test_per", per)):
        if row[name] is None or abs(row[name] - value) > TOLERANCE:
            raise Failure(f"run {row['run']}: runs.csv says {name} {row[name]}, its answers "
                          f"give {value:.4f} (percent, as runs.csv must write it)")
    return errors, wer, per


# ---- statistics --------------------------------------------------------------------

def percentile(ordered, q):
    """The q-quantile of sorted values, interpolated between neighbours."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def binomial_cdf(n, q):
    """[P(K <= k) for k in 0..n], K ~ binomial(n, q), 0 < q <= 1; the
    probabilities in logs, so that n in the thousands does not overflow."""
    if q == 1:
        return [0.0] * n + [1.0]
    log_q, log_not_q = math.log(q), math.log1p(-q)
    log_n = math.lgamma(n + 1)
    return list(accumulate(
        math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_q +
                 (n - k) * log_not_q) for k in range(n + 1)))


def bootstrap_interval(differences):
    """The 95% percentile interval of the mean of `differences` (one per
    test word) over RESAMPLES resamples of the words with replacement.
    A word whose difference is 0 adds nothing to a resample's sum, so a
    resample is drawn as how many of its len(differences) words fall on the
    others (binomial) and then which of those (uniform): the same
    distribution as drawing every word, for the cost of the discordant ones."""
    n = len(differences)
    nonzero = [d for d in differences if d]
    if not nonzero:
        return 0.0, 0.0
    cdf = binomial_cdf(n, len(nonzero) / n)
    rng = random.Random(BOOTSTRAP_SEED)
    means = sorted(sum(rng.choices(nonzero, k=min(bisect.bisect_right(cdf, rng.random()), n))) / n
                   for _ in range(RESAMPLES))
    return percentile(means, 0.025), percentile(means, 0.975)


def mcnemar_exact(b, c):
    """Two-sided exact McNemar p for b and c discordant words."""
    tail = sum(math.comb(b + c, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** (b + c))


def mean_sd(values):
    """(mean, sample sd or None for one value) of the values that exist, or None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def seed_order(seed):
    return (0, int(seed), "") if seed.lstrip("-").isdigit() else (1, 0, seed)


# ---- the cells and their comparisons ---------------------------------------------

def cell_key(row):
    """(size, encoder, scoring): the cell of a test run. Every recipe of the
    Transformer is scored on test (its first seed tunes it, and is scored as
    well), so each is a cell of its own, its scoring "transformer (RECIPE)"."""
    scoring = row["scoring"]
    if scoring == "transformer":
        scoring = f"transformer ({row['recipe']})"
    return row["size"], row["encoder"], scoring


class Cell:
    """The test runs of one (size, encoder, scoring), one recipe, one run a seed."""

    def __init__(self, size, encoder, scoring):
        self.size, self.encoder, self.scoring = size, encoder, scoring
        self.runs = {}  # seed -> (row, errors, wer, per)

    def label(self):
        # the Transformer's scoring already names it and its recipe
        where = self.size if self.encoder == "transformer" else f"{self.encoder}, {self.size}"
        return f"{self.scoring} ({where})"

    def add(self, row, errors, wer, per):
        if row["seed"] in self.runs:
            raise Failure(f"runs {self.runs[row['seed']][0]['run']} and {row['run']}: "
                          f"the same cell {self.label()} and seed {row['seed']}")
        recipes = {r["recipe"] for r, *_ in self.runs.values()} | {row["recipe"]}
        if len(recipes) > 1:
            raise Failure(f"cell {self.label()}: test runs of recipes {sorted(recipes)}; "
                          "a cell's test runs are its one chosen recipe's seeds")
        self.runs[row["seed"]] = (row, errors, wer, per)

    def rows(self):
        return [self.runs[seed][0] for seed in sorted(self.runs, key=seed_order)]

    def word_errors(self):
        """Each test word's error averaged over the seeds."""
        per_seed = [errors for _, errors, _, _ in self.runs.values()]
        return [sum(column) / len(per_seed) for column in zip(*per_seed)]


def compare(a, b):
    """A - B: the WER difference (points), its interval, McNemar seed by seed."""
    differences = [x - y for x, y in zip(a.word_errors(), b.word_errors())]
    low, high = bootstrap_interval(differences)
    tests = []
    for seed in sorted(a.runs.keys() & b.runs.keys(), key=seed_order):
        errors_a, errors_b = a.runs[seed][1], b.runs[seed][1]
        only_a = sum(x > y for x, y in zip(errors_a, errors_b))  # A wrong, B right
        only_b = sum(y > x for x, y in zip(errors_a, errors_b))
        tests.append((seed, only_a, only_b, mcnemar_exact(only_a, only_b)))
    return {"a": a, "b": b, "difference": 100 * statistics.fmean(differences),
            "low": 100 * low, "high": 100 * high, "mcnemar": tests}


def comparisons(cells):
    """Each scoring function against REFERENCE_SCORING with the same encoder,
    then each scoring function's other encoders against REFERENCE_ENCODER."""
    against_scoring, against_encoder = [], []
    for (size, encoder, scoring), cell in cells.items():
        reference = cells.get((size, encoder, REFERENCE_SCORING))
        if reference and scoring != REFERENCE_SCORING:
            against_scoring.append(compare(cell, reference))
    for (size, encoder, scoring), cell in cells.items():
        reference = cells.get((size, REFERENCE_ENCODER, scoring))
        if reference and encoder != REFERENCE_ENCODER:
            against_encoder.append(compare(cell, reference))
    return against_scoring, against_encoder


# ---- the report --------------------------------------------------------------------

def figure(value, digits=2):
    return "–" if value is None else f"{value:,.{digits}f}"


def figure_sd(values, digits=2):
    summary = mean_sd(values)
    if summary is None:
        return "–"
    mean, sd = summary
    return figure(mean, digits) + ("" if sd is None else f" ± {sd:.{digits}f}")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows]


def cells_table(cells):
    rows = []
    for cell in cells.values():
        runs = cell.rows()
        parameters = [r["parameters"] for r in runs if r["parameters"] is not None]
        span = "–" if not parameters else figure(min(parameters), 0) + (
            "" if min(parameters) == max(parameters) else " – " + figure(max(parameters), 0))
        rows.append([
            cell.size, cell.encoder, cell.scoring, runs[0]["recipe"], len(runs), span,
            figure_sd([wer for _, _, wer, _ in cell.runs.values()]),
            figure_sd([per for _, _, _, per in cell.runs.values()]),
            figure_sd([r["test_wer_beam5"] for r in runs]),
            figure_sd([r["test_per_beam5"] for r in runs])])
    return table(["size", "encoder", "scoring", "recipe", "seeds", "parameters", "test WER %",
                  "test PER %", "beam 5 WER %", "beam 5 PER %"], rows)


def training_seconds(row):
    """A run's training time: its wall_s less the grid's pauses in it (None if unknown)."""
    return None if row["wall_s"] is None else row["wall_s"] - (row["paused_s"] or 0)


def attention_table(cells):
    """The attention's measures and the training's cost: steps a second and
    seconds with the grid's pauses left out (runs.csv's steps_per_s, steps
    over wall_s, keeps them; scaled by wall_s over the time without them,
    a run never paused keeps its figure to the digit)."""
    rows = []
    for cell in cells.values():
        runs = cell.rows()
        seconds = [training_seconds(r) for r in runs]
        rows.append([cell.size, cell.encoder, cell.scoring] +
                    [figure_sd([r[c] for r in runs], 3)
                     for c in ("entropy", "monotonic", "alignment_agreement")] +
                    [figure_sd([r["steps"] for r in runs], 0),
                     figure_sd([r["steps_per_s"] * r["wall_s"] / t if t else None
                                for r, t in zip(runs, seconds)], 2),
                     figure_sd(seconds, 0)])
    return table(["size", "encoder", "scoring", "row entropy (nats)", "monotonic", "alignment agreement",
                  "steps", "steps/s", "training s"], rows)


def tuning_table(rows, cells):
    """Every recipe each (size, encoder, scoring) ran, with its dev WER."""
    recipes = {}  # (size, encoder, scoring) -> recipe -> dev WERs
    for row in rows:
        recipes.setdefault((row["size"], row["encoder"], row["scoring"]), {}).setdefault(
            row["recipe"], []).append(row["dev_wer"])
    lines, notes = [], []
    for key, by_recipe in recipes.items():
        chosen = cells[key].rows()[0]["recipe"] if key in cells else None
        for recipe, dev in by_recipe.items():
            lines.append([*key, recipe + (" (chosen)" if recipe == chosen else ""), len(dev),
                          figure_sd(dev)])
        means = {recipe: mean_sd(dev) for recipe, dev in by_recipe.items()}
        means = {recipe: m[0] for recipe, m in means.items() if m}
        if chosen and means and chosen in means and means[chosen] > min(means.values()):
            notes.append(f"- {key[2]} ({key[1]}, {key[0]}): the chosen recipe {chosen} does not have "
                         "the lowest mean dev WER.")
    return table(["size", "encoder", "scoring", "recipe", "runs", "dev WER %"], lines) + (
        ["", *notes] if notes else [])


def comparison_figures(r):
    """A comparison's difference, interval and McNemar column."""
    tests = r["mcnemar"]
    seeds = ("; ".join(f"seed {s}: {p:.3g} ({x}/{y})" for s, x, y, p in tests) or
             "no common seed")
    below = sum(p < SIGNIFICANCE for *_, p in tests)
    return [f"{r['difference']:+.2f}", f"[{r['low']:+.2f}, {r['high']:+.2f}]",
            f"{seeds}; {below} of {len(tests)} below {SIGNIFICANCE}"]


FIGURES_HEADER = ["WER difference (points)", "95% interval",
                  "McNemar p per seed pair (A-only/B-only errors)"]


def comparison_table(results, varied):
    rows = []
    for r in results:
        a, b = r["a"], r["b"]
        shared = (a.encoder if varied == "scoring" else a.scoring) + ", " + a.size
        rows.append([f"{getattr(a, varied)} − {getattr(b, varied)}", shared,
                     *comparison_figures(r)])
    other = ("encoder" if varied == "scoring" else "scoring") + ", size"
    return table([varied, other, *FIGURES_HEADER], rows)


def target_line(chosen):
    """The chosen recipe's test WER against TRANSFORMER_TARGET_WER, with the
    95% bootstrap interval of its mean over the test words (a word's error
    averaged over the seeds, as in compare; the seeds' own spread is the
    table's sd, not in this interval)."""
    errors = chosen.word_errors()
    wer = 100 * statistics.fmean(errors)
    low, high = (100 * x for x in bootstrap_interval(errors))
    if high < TRANSFORMER_TARGET_WER:
        verdict = "met, the interval below it too"
    elif wer <= TRANSFORMER_TARGET_WER:
        verdict = "met by the mean; the interval reaches above it"
    elif low > TRANSFORMER_TARGET_WER:
        verdict = "not met, the interval above it too"
    else:
        verdict = "not met by the mean; the interval reaches below it"
    seeds = len(chosen.runs)
    return (f"Against the target of {TRANSFORMER_TARGET_WER:g}% test WER: the chosen recipe's "
            f"{wer:.2f}% over {seeds} seed{'s' if seeds > 1 else ''}, 95% interval over the "
            f"test words [{low:.2f}, {high:.2f}]: {verdict}.")


def transformer_section(cells):
    """The Transformer's recipes (each a cell): their dev WER, the one chosen
    on dev (the lowest dev WER at the first seed every recipe has, the seed
    that tunes them, as scripts/compare_grid.py chooses it) against the
    target, each recipe against the first, and the chosen one against the
    full-size reference cell."""
    recipes = [cell for (_, encoder, _), cell in cells.items() if encoder == "transformer"]
    if not recipes:
        return [], []
    shared = set.intersection(*(set(cell.runs) for cell in recipes))
    if not shared:
        raise Failure("the Transformer's recipes have no seed in common to choose one by")
    first = min(shared, key=seed_order)
    chosen = min(recipes, key=lambda cell: cell.runs[first][0]["dev_wer"])  # first among equals
    rows = [[cell.rows()[0]["recipe"] + (" (chosen on dev)" if cell is chosen else ""),
             len(cell.runs),
             figure_sd([r["dev_wer"] for r in cell.rows()]),
             figure_sd([wer for _, _, wer, _ in cell.runs.values()])] for cell in recipes]
    results = [compare(cell, recipes[0]) for cell in recipes[1:]]
    gru = cells.get((chosen.size, REFERENCE_ENCODER, REFERENCE_SCORING))
    if gru:
        results.append(compare(chosen, gru))
    # Seed `first` chose the recipe, so its test WER may be a lucky draw's:
    # the seeds that did not choose are given apart too.
    unchosen = [wer for seed, (_, _, wer, _) in chosen.runs.items() if seed != first]
    apart = (f" Its test WER over the seeds that did not choose it ({len(unchosen)}): "
             f"{figure_sd(unchosen)}." if unchosen else "")
    lines = [*table(["recipe", "seeds", "dev WER %", "test WER %"], rows), "",
             f"Chosen on dev: the recipe of lowest dev WER at seed {first}, the first seed every "
             f"recipe has.{apart} {target_line(chosen)} A − B as above, each recipe against "
             f"{recipes[0].rows()[0]['recipe']} and the one chosen on dev against "
             f"{REFERENCE_SCORING} ({REFERENCE_ENCODER}, {chosen.size}).",
             "",
             *table(["A − B", *FIGURES_HEADER],
                    [[f"{r['a'].label()} − {r['b'].label()}", *comparison_figures(r)]
                     for r in results])]
    return lines, results


def supported(results):
    shown, not_shown = [], []
    for r in results:
        line = (f"{r['a'].label()} − {r['b'].label()}: {r['difference']:+.2f} points, "
                f"[{r['low']:+.2f}, {r['high']:+.2f}]")
        if r["low"] > 0 or r["high"] < 0:
            worse = r["a"] if r["low"] > 0 else r["b"]
            shown.append(f"- {line}: {worse.label()} has the higher WER.")
        else:
            not_shown.append(f"- {line}: no difference shown.")
    return (["Intervals excluding 0:", ""] + (shown or ["- none"]) +
            ["", "Intervals including 0:", ""] + (not_shown or ["- none"]))


def compute_line(rows):
    """The training time: each run's wall_s less the grid's pauses in it."""
    def hours(subset):
        walls = [t for t in map(training_seconds, subset) if t is not None]
        unknown = len(subset) - len(walls)
        return (f"{len(subset)} runs, {sum(walls) / 3600:.1f} h" +
                (f" ({unknown} without a wall time)" if unknown else ""))
    tests = [r for r in rows if r["test_wer"] is not None]
    tuning = [r for r in rows if r["test_wer"] is None]
    return (f"Compute: {hours(rows)} of training (wall time less the grid's pauses); "
            f"tuning {hours(tuning)}, test {hours(tests)}.")


def report(directory, dict_path, rows, cells, test_words):
    against_scoring, against_encoder = comparisons(cells)
    transformer_lines, against_transformer = transformer_section(cells)
    lines = [
        "<!-- written by scripts/compare_report.py; edit the results, not this file -->",
        "# Scoring functions and encoders compared", "",
        f"From `{directory}`: {len(rows)} runs, {sum(len(c.runs) for c in cells.values())} of "
        f"them scored on the {test_words:,} test words of `{dict_path}` (any pronunciation is "
        "right). WER and PER are recomputed from each run's greedy answers; the beam-5 figures, "
        "entropy, monotonicity and alignment agreement are runs.csv's. Mean ± sample sd over "
        "a cell's seeds. Size: `half` the grid's widths, `full` the shipped model's (and the "
        "Transformer's row); each size's cells are compared among themselves.", "",
        compute_line(rows), "", "## Cells", "", *cells_table(cells), "",
        "## How they attend and what they cost", "", *attention_table(cells), "",
        "## Tuning on dev", "", *tuning_table(rows, cells), "",
        "## Against additive, same encoder and size", "",
        "A − B in WER points (A higher: positive). Interval: paired bootstrap over the test "
        f"words ({RESAMPLES:,} resamples, seed {BOOTSTRAP_SEED}), a word's error averaged over "
        "its cell's seeds. McNemar: exact, two-sided, the runs of the same seed.", "",
        *comparison_table(against_scoring, "scoring"), "",
        f"## One encoder against the {REFERENCE_ENCODER} one, same scoring function and size",
        "",
        *comparison_table(against_encoder, "encoder"), "",
        *(["## The Transformer's recipes", "", *transformer_lines, ""] if transformer_lines
          else []),
        "## What the intervals support", "",
        *supported(against_scoring + against_encoder + against_transformer)]
    return "\n".join(lines) + "\n"


def plot_curves(directory, cells, png):
    """dev WER against steps: a panel per (size, encoder), a line per cell (the
    mean over its seeds at each step) in a band from the lowest to the highest."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys((cell.size, cell.encoder) for cell in cells.values()))
    scorings = list(dict.fromkeys(cell.scoring for cell in cells.values()))  # a colour each
    columns = min(len(panels), 2)
    rows_ = math.ceil(len(panels) / columns)
    figure_, axes = plt.subplots(rows_, columns, figsize=(6 * columns, 4.5 * rows_),
                                 squeeze=False)
    for axis in axes.flat[len(panels):]:
        axis.set_visible(False)
    for axis, (size, encoder) in zip(axes.flat, panels):
        for cell in cells.values():
            if (cell.size, cell.encoder) != (size, encoder):
                continue
            curves = [read_curve(os.path.join(directory, "curves", row["run"] + ".csv"))
                      for row in cell.rows()]
            steps = sorted(set().union(*curves))
            values = [[curve[s] for curve in curves if s in curve] for s in steps]
            colour = f"C{scorings.index(cell.scoring) % 10}"
            axis.plot(steps, [statistics.fmean(v) for v in values], color=colour,
                      label=f"{cell.scoring} ({len(curves)} seed{'s' if len(curves) != 1 else ''})")
            axis.fill_between(steps, [min(v) for v in values], [max(v) for v in values],
                              color=colour, alpha=0.2, linewidth=0)
        axis.set_title(f"{encoder} encoder, {size} size" if encoder != "transformer" else
                       f"Transformer, {size} size")
        axis.set_xlabel("training step")
        axis.set_ylabel("dev WER (%)")
        axis.grid(alpha=0.3)
        axis.legend()
    figure_.suptitle("dev WER while training: the mean over seeds, "
                     "in a band from the lowest seed to the highest")
    figure_.tight_layout()
    figure_.savefig(png, dpi=120)


def main(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="the results directory")
    parser.add_argument("--dict", default=DEFAULT_DICT, help="CMUdict (default %(default)s)")
    parser.add_argument("--out", help="the report's file (default stdout)")
    parser.add_argument("--curves", metavar="PNG", help="draw the dev WER curves (matplotlib)")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        try:
            entries = read_pronunciations(args.dict)
        except (OSError, ValueError) as e:
            raise Failure(f"cannot read the dictionary: {e}") from None
        pronunciations = {w: p for w, p in entries.items() if split_of(w) == "test"}
        if not pronunciations:
            raise Failure(f"{args.dict} has no test word")
        rows = read_runs(os.path.join(args.results, "runs.csv"))
        cells = {}
        for row in rows:
            if row["test_wer"] is None:
                continue
            answers = read_answers(os.path.join(args.results, "answers", row["run"] + ".tsv.gz"),
                                   pronunciations)
            key = cell_key(row)
            cells.setdefault(key, Cell(*key)).add(row, *score_run(row, answers, pronunciations))
        if not cells:
            raise Failure("runs.csv has no test run (a row with test_wer)")
        text = report(args.results, args.dict, rows, cells, len(pronunciations))
        if args.curves:
            plot_curves(args.results, cells, args.curves)
    except Failure as e:
        sys.exit(f"compare_report.py: {e}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    print(f"compare_report.py: {len(rows)} runs in {time.perf_counter() - began:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
