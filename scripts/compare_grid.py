#!/usr/bin/python3
"""Issue 63's comparison, the whole grid, in as many sittings as it takes:
every scoring function with every encoder, tuned alike on dev, several seeds
at each cell's chosen recipe scored once on test, and the Transformer at its
published recipe; the results in docs/compare/README.md's format.

    compare_grid.py [--dry-run] [--size grid|tiny] [--only REGEX] [--build DIR]
                    [--dict CMUDICT] [--work DIR] [--results DIR] [--threads N]
    compare_grid.py --collect DEST [--size grid|tiny] [--work DIR] [--results DIR]

The plan (--dry-run prints it, with each run's state and estimated time):
1. Set-up, once: the test split as files (g2p_test_split.py: test.dict for
   --evaluate, test.words for --predict-file) and the letters of each phoneme
   (g2p_align.py, about 3 minutes on CMUdict) in the work directory.
2. Tuning: each cell, (encoder, scoring) for scoring in SCORINGS and encoder
   in ENCODERS, trains at every point of the size's small grid (learning rate
   x label smoothing), seed 0, and is scored on dev only: its dev WER is the
   best of its evaluations (the kept parameters'). Every bidirectional cell
   has the encoder's directions half the decoder's width (--encoder-hidden
   H/2), so that its keys are H wide as the one-way encoder's are: dot reads
   it, and encoder and scoring function vary one at a time.
3. Test runs: once a cell's tuning runs are all done, its chosen recipe is
   the one of lowest dev WER (the first in grid order among equals), and it
   trains with seeds 1..N at that recipe; each is scored once on the test
   words: WER and PER greedy and with beam 5, the greedy answers, the row
   entropy, monotonicity and alignment agreement (--evaluate with
   --alignment-reference).
4. The Transformer's rows: g2p-seq2seq's published Transformer
   (docs/compare.md, "The Transformer, at its published recipe") at each of
   its recipes (step caps and schedules), trained until the dev WER stops
   improving (--patience) or the cap, scored as the test runs are. Every
   recipe trains the first seed; "published", the figure the others are
   measured against, all seeds; and once every recipe has its first seed,
   the one of lowest dev WER among them (the first among equals) the other
   seeds, as a cell's seeds follow its tuning.
5. The confirmation at full size (the shipped model's widths and schedule):
   once every cell is tuned, the cells of the size's `confirm` rule (the
   `top` cells of lowest chosen dev WER, and the `always` cells) train again
   at full width. Each is tuned the same way: every learning rate of the
   rule, with the label smoothing its cell chose, seed 0, on dev; then seeds
   1..N at the learning rate of lowest dev WER, scored once on test. Their
   runs are named full-..., their rows' `size` is `full` (the grid's `half`).

A run is done when its row is in WORK/RUN.row.json or in RESULTS/runs.csv
(so a results directory committed to the repository, docs/compare, carries
the finished runs to a new machine with an empty work directory); a run
that is not resumes from its checkpoint (WORK/RUN.ckpt.npz, written every
--checkpoint-every steps by attograd-translate, atomically), to the bits it
would have had uninterrupted. Every file is written to a temporary name and
renamed once whole, so the script may be killed at any moment and started
again: it skips what is done and goes on with the rest. runs.csv is written
anew from the rows after each run, in plan order.

--collect DEST copies the finished runs' results (their rows merged into
DEST/runs.csv, their answers and curves) from RESULTS to DEST, the
repository's docs/compare, to be committed: what a new machine needs to go
on. Unfinished runs' checkpoints stay in WORK (a new machine starts them
over).
"""
import argparse
import csv
import gzip
import io
import json
import math
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_DICT = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
SAMPLE_DICT = os.path.join(ROOT, "tests", "data", "cmudict-sample.dict")
COLUMNS = ("run encoder scoring recipe seed steps parameters dev_wer test_wer test_per "
           "test_wer_beam5 test_per_beam5 wall_s steps_per_s entropy monotonic "
           "alignment_agreement paused_s size").split()
SCORINGS = ("additive", "dot", "general", "general_scaled", "multihead")
ENCODERS = ("unidirectional", "bidirectional")

# The sizes. "grid" is the comparison's: half the shipped model's widths
# (hidden 128 against 256, embed 64 against 128; 0.37 to 0.47 M parameters
# against 3.1 M), the shipped recipe's batch, schedule and evaluation;
# "tiny" is a smoke test on the CMUdict sample (seconds a run). speed, for
# the plan's time estimates, measured on this project's two-vCPU machine
# beside other work (2026-12-04; the Transformer's with nothing beside it,
# 2026-12-06): training steps a second on two threads, seconds a dev
# evaluation, seconds a test run's scoring (greedy, beam 5, the answers;
# the grid's for the confirmation's too).
SIZES = {
    "grid": {
        "dict": DEFAULT_DICT,
        "model": ["--embed", "64", "--hidden", "128", "--layers", "2", "--dropout", "0.1"],
        "hidden": 128,
        "train": ["--batch", "128", "--lr-schedule", "cosine", "--steps", "5000",
                  "--eval-every", "500"],
        "steps": 5000, "eval_every": 500, "checkpoint_every": 500,
        "grid": [(lr, ls) for lr in ("0.001", "0.003") for ls in ("0", "0.1")],
        "seeds": [1, 2, 3],
        "speed": {"steps_per_s": 16.0, "eval_s": 3.0, "score_s": 30.0},
        # The shipped model's widths and schedule (translate/src/g2p.cpp), its
        # learning rate and twice it (from 3e-3 its dev WER stalled once).
        "confirm": {
            "model": ["--embed", "128", "--hidden", "256", "--layers", "2", "--dropout", "0.1"],
            "hidden": 256,
            "train": ["--batch", "128", "--lr-schedule", "cosine", "--steps", "5500",
                      "--eval-every", "500"],
            "steps": 5500, "eval_every": 500, "lrs": ("0.0015", "0.003"),
            "top": 2, "always": [("bidirectional", "dot")],
            "speed": {"steps_per_s": 5.5, "eval_s": 11.0},
        },
        "transformer": {
            "model": ["--model", "transformer", "--hidden", "256", "--blocks", "3", "--heads", "4",
                      "--ffn", "512", "--dropout", "0.1", "--norm-first"],
            # t2t's constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size with
            # constant 2.0, 8,000 warm-up steps, d 256: peak 2 / sqrt(8000 * 256)
            "train": ["--batch", "128", "--lr", "0.0013975", "--warmup", "8000",
                      "--label-smoothing", "0.1", "--eval-every", "1000", "--patience", "5"],
            # Each recipe: its step cap and the flags it adds. "published"
            # stopped at 25,000 (1.5 h on a quiet machine, its dev WER still
            # falling); "budget" is the same run with the 2 hours on
            # 2 threads used (4.6 steps/s): the rsqrt decay does not depend
            # on the cap, so the two differ only in how far they go.
            # "cosine" is the budget with the decay after the warm-up made
            # half a cosine to 0 at the cap (the GRUs' schedule), the one
            # change: its late steps shrink to nothing where rsqrt keeps them
            # at 0.49 of the peak. "cosine-dropout0.3" is the cosine with
            # dropout 0.3 (fairseq's recipe for IWSLT'14, a small corpus),
            # added when cosine's seed 1 ended at a training loss of 0.78 against
            # the smoothed targets' floor of 0.69 while its dev WER stayed
            # at 24%: the model fits its training words, and dropout is the
            # regularizer the block already has. "cosine-40000-average5" is
            # the cosine with the cap the 2 hours hold at the speed measured
            # again with the grid stopped (6.8 steps/s, a dev evaluation about
            # 30 s: 33,000 steps took 1.6 hours), and the mean of the last 5
            # evaluations' parameters offered to dev as one more candidate
            # (the shipped GRU's --average-last 5; Vaswani et al. averaged
            # their base models' last 5 checkpoints).
            "recipes": {"published": (25000, []), "budget": (33000, []),
                        "cosine": (33000, ["--lr-schedule", "cosine"]),
                        "cosine-dropout0.3": (33000, ["--lr-schedule", "cosine",
                                                      "--dropout", "0.3"]),
                        "cosine-40000-average5": (40000, ["--lr-schedule", "cosine",
                                                          "--average-last", "5"])},
            "eval_every": 1000,
            "speed": {"steps_per_s": 6.8, "eval_s": 30.0, "score_s": 460.0},
        },
    },
    "tiny": {
        "dict": SAMPLE_DICT,
        "model": ["--embed", "8", "--hidden", "8", "--layers", "1", "--dropout", "0.1"],
        "hidden": 8,
        "train": ["--batch", "16", "--lr-schedule", "cosine", "--steps", "30",
                  "--eval-every", "10"],
        "steps": 30, "eval_every": 10, "checkpoint_every": 10,
        "grid": [("0.01", "0"), ("0.01", "0.1")],
        "seeds": [1],
        "speed": {"steps_per_s": 60.0, "eval_s": 0.1, "score_s": 2.0},
        "confirm": {
            "model": ["--embed", "8", "--hidden", "12", "--layers", "1", "--dropout", "0.1"],
            "hidden": 12,
            "train": ["--batch", "16", "--lr-schedule", "cosine", "--steps", "20",
                      "--eval-every", "10"],
            "steps": 20, "eval_every": 10, "lrs": ("0.01", "0.02"),
            "top": 2, "always": [("bidirectional", "dot")],
            "speed": {"steps_per_s": 60.0, "eval_s": 0.1},
        },
        "transformer": {
            "model": ["--model", "transformer", "--hidden", "8", "--blocks", "1", "--heads", "2",
                      "--ffn", "16", "--dropout", "0.1", "--norm-first"],
            "train": ["--batch", "16", "--lr", "0.01", "--warmup", "10", "--label-smoothing",
                      "0.1", "--eval-every", "10", "--patience", "2"],
            # two seeds: the second is the chosen recipe's (and published's)
            "seeds": [1, 2],
            "recipes": {"published": (40, []), "budget": (50, []),
                        "cosine": (50, ["--lr-schedule", "cosine"]),
                        "cosine-dropout0.3": (50, ["--lr-schedule", "cosine",
                                                   "--dropout", "0.3"]),
                        "cosine-40000-average5": (60, ["--lr-schedule", "cosine",
                                                       "--average-last", "5"])},
            "eval_every": 10,
            "speed": {"steps_per_s": 40.0, "eval_s": 0.1, "score_s": 2.0},
        },
    },
}


class PauseClock:
    """Pauses of this process (kill -STOP ... kill -CONT of the grid's
    process group): a thread wakes every second; a wake-up 5 seconds or more
    after the last one, less that second, was a pause (a stopped process's
    threads stop with it). Shorter pauses go uncounted. on_pause, if set, is
    called with each pause's start (time.time()) and seconds."""

    def __init__(self):
        self.on_pause = None
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        last = time.monotonic()
        while True:
            time.sleep(1)
            now = time.monotonic()
            if now - last >= 5 and self.on_pause:
                self.on_pause(time.time() - (now - last - 1), now - last - 1)
            last = now


CLOCK = None  # main()'s PauseClock


class Run:
    """One training run of the plan: its name, cell, recipe, seed and flags."""

    def __init__(self, encoder, scoring, recipe, seed, flags, steps, evals, speed, test,
                 width="half"):
        self.encoder, self.scoring, self.recipe, self.seed = encoder, scoring, recipe, seed
        self.flags, self.steps, self.evals, self.speed, self.test = flags, steps, evals, speed, test
        self.width = width  # runs.csv's size: "half" (the grid's widths) or "full"
        short = "transformer" if scoring == "transformer" else (
            ("full-" if width == "full" else "") +
            ("uni" if encoder == "unidirectional" else "bi") + "-" + scoring)
        self.name = f"{short}-{recipe}-s{seed}"

    def estimate_s(self, size):
        score_s = self.speed.get("score_s", size["speed"]["score_s"])
        return (self.steps / self.speed["steps_per_s"] + self.evals * self.speed["eval_s"] +
                (score_s if self.test else 0))


def recipe_name(lr, ls):
    return f"lr{lr}-ls{ls}"


def cell_flags(size, encoder, scoring):
    flags = ["--encoder", encoder, "--attention", scoring] + size["model"]
    if encoder == "bidirectional":
        flags += ["--encoder-hidden", str(size["hidden"] // 2)]
    if scoring == "multihead":
        flags += ["--heads", "4"]
    return flags


def gru_run(size, encoder, scoring, lr, ls, seed, test, width="half"):
    """A GRU run at the grid's widths (half) or the confirmation's (full)."""
    shape = size if width == "half" else size["confirm"]
    flags = (cell_flags(shape, encoder, scoring) + shape["train"] +
             ["--lr", lr, "--label-smoothing", ls, "--seed", str(seed)])
    return Run(encoder, scoring, recipe_name(lr, ls), seed, flags, shape["steps"],
               shape["steps"] // shape["eval_every"], shape["speed"], test, width)


def lowest_dev(rows):
    """The index of the row of lowest dev WER, the first among equals: how a
    cell's recipe, and the Transformer's, is chosen."""
    return min(range(len(rows)), key=lambda i: (rows[i]["dev_wer"], i))


def transformer_run(size, recipe, seed):
    t = size["transformer"]
    steps, flags = t["recipes"][recipe]
    return Run("transformer", "transformer", recipe, seed,
               t["model"] + t["train"] + flags + ["--steps", str(steps), "--seed", str(seed)],
               steps, steps // t["eval_every"], t["speed"], True, "full")


def transformer_runs(size, rows):
    """(runs, notes) of the Transformer: every recipe's first seed (the tuning
    seed), then the first recipe's other seeds (published, the figure the
    others are measured against); then, once every recipe's first seed has
    its row, the other seeds of the recipe of lowest dev WER among them (the
    first among equals), as a GRU cell's seeds follow its tuning; a note
    (text, the runs it waits to plan) until then."""
    t = size["transformer"]
    recipes = list(t["recipes"])
    first, *others = t.get("seeds", size["seeds"])
    runs = ([transformer_run(size, recipe, first) for recipe in recipes] +
            [transformer_run(size, recipes[0], seed) for seed in others])
    done = [rows[run.name] for run in runs[:len(recipes)] if run.name in rows]
    if len(done) < len(recipes):
        longest = max(recipes, key=lambda recipe: t["recipes"][recipe][0])
        waiting = [transformer_run(size, longest, seed) for seed in others]  # for the estimate
        return runs, [(f"the Transformer: {len(waiting)} runs of the recipe chosen on dev after "
                       f"its {len(recipes) - len(done)} first-seed runs still to do", waiting)]
    chosen = lowest_dev(done)
    if chosen:
        runs += [transformer_run(size, recipes[chosen], seed) for seed in others]
    return runs, []


def tune_then_test(size, rows, cell, recipes, width):
    """(tuning runs, test runs, notes, (dev WER, ls) of the chosen recipe or
    None) of one cell: a seed-0 run for each (lr, ls) of recipes, then the
    seeds at the recipe of lowest dev WER (the first among equals) once every
    tuning run has its row; a note (text, the runs it waits to plan) until
    then."""
    encoder, scoring = cell
    tuning = [gru_run(size, encoder, scoring, lr, ls, 0, False, width) for lr, ls in recipes]
    done = [rows[r.name] for r in tuning if r.name in rows]
    if len(done) < len(tuning):
        waiting = [gru_run(size, encoder, scoring, *recipes[0], seed, True, width)
                   for seed in size["seeds"]]
        return tuning, [], [(f"{width} {encoder} {scoring}: {len(waiting)} test runs after its "
                             f"{len(tuning) - len(done)} tuning runs still to do", waiting)], None
    best = lowest_dev(done)
    lr, ls = recipes[best]
    tests = [gru_run(size, encoder, scoring, lr, ls, seed, True, width) for seed in size["seeds"]]
    return tuning, tests, [], (done[best]["dev_wer"], ls)


def plan(size, rows):
    """(tuning runs, test runs, notes): the grid's tuning runs first; then its
    test runs, each cell's once its tuning runs all have rows; the
    Transformer's; and the confirmation's once every cell of the grid is
    tuned; a note for each cell still waiting."""
    tuning, tests, chosen = [], [], {}
    later, notes = transformer_runs(size, rows)
    for cell in ((encoder, scoring) for encoder in ENCODERS for scoring in SCORINGS):
        cell_tuning, cell_tests, cell_notes, choice = tune_then_test(size, rows, cell,
                                                                     size["grid"], "half")
        tuning, tests, notes = tuning + cell_tuning, tests + cell_tests, notes + cell_notes
        if choice:
            chosen[cell] = choice
    if len(chosen) == len(ENCODERS) * len(SCORINGS):
        rule = size["confirm"]
        ranked = sorted(chosen, key=lambda cell: chosen[cell][0])  # stable: plan order on ties
        confirmed = ranked[:rule["top"]] + [c for c in rule["always"] if c not in ranked[:rule["top"]]]
        for cell in confirmed:
            recipes = [(lr, chosen[cell][1]) for lr in rule["lrs"]]
            cell_tuning, cell_tests, cell_notes, _ = tune_then_test(size, rows, cell, recipes,
                                                                    "full")
            later, notes = later + cell_tuning + cell_tests, notes + cell_notes
    else:
        rule = size["confirm"]
        # Its runs' cost, to estimate: any cell's, its tuning runs then its seeds.
        recipes = [(lr, 0) for lr in rule["lrs"]] + [(rule["lrs"][0], s) for s in size["seeds"]]
        waiting = [gru_run(size, ENCODERS[0], SCORINGS[0], lr, "0", seed, seed > 0, "full")
                   for _ in range(rule["top"] + len(rule["always"])) for lr, seed in recipes]
        notes.append((f"the confirmation at full size: {len(waiting)} runs after every "
                      "cell's tuning", waiting))
    return tuning, tests + later, notes


# ---- files ---------------------------------------------------------------------------

def write_atomic(path, data):
    """Writes bytes (or text) to path.partial, then renames it over path."""
    partial = path + ".partial"
    with open(partial, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    os.replace(partial, path)


def percent(share):
    """A share (0 to 1) as percent, to 1e-6 points (the float's tail dropped)."""
    return round(100 * share, 6)


def read_stats(text):
    """attograd-translate's --stats lines, "key value", as {key: float}."""
    stats = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                stats[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return stats


def run_program(program, args, log_path, threads):
    """Runs attograd-translate, its stderr appended to log_path; returns stdout.
    Stops the script (exit 1) when the program fails."""
    command = [program, *args, "--threads", str(threads)]
    with open(log_path, "a", encoding="utf-8") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True)
    if done.returncode != 0:
        sys.exit(f"compare_grid.py: {' '.join(command)} failed (exit {done.returncode}); "
                 f"see {log_path}")
    return done.stdout


def stage(path, make):
    """The text at path, made by make() and written atomically when missing."""
    if not os.path.exists(path):
        write_atomic(path, make())
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- one run -------------------------------------------------------------------------

def do_run(run, args, size, program):
    work = args.work
    base = os.path.join(work, run.name)
    log = base + ".log"
    checkpoint = base + ".ckpt.npz"

    def train():
        resume = ["--resume", checkpoint] if os.path.exists(checkpoint) else []
        # The run's pauses, [start, seconds], kept in WORK/RUN.paused at each
        # one: the program's train_seconds spans its sittings up to the
        # checkpoint it resumes from, so the pauses begun before that
        # checkpoint was written count; the later ones fell in steps a killed
        # sitting lost, and go with them.
        paused_file = base + ".paused"
        pauses = []
        if resume and os.path.exists(paused_file):
            with open(paused_file, encoding="utf-8") as f:
                pauses = [p for p in json.load(f) if p[0] < os.path.getmtime(checkpoint)]

        def count(start, seconds):
            pauses.append([start, seconds])
            write_atomic(paused_file, json.dumps(pauses) + "\n")
        if CLOCK:
            CLOCK.on_pause = count
        try:
            out = run_program(program, ["--task", "g2p", "--dict", args.dict, *run.flags,
                                        "--checkpoint", checkpoint, "--checkpoint-every",
                                        str(size["checkpoint_every"]), *resume,
                                        "--curve", base + ".curve.csv", "--skip-test",
                                        "--save", base + ".model.npz", "--stats"], log,
                                       args.threads)
        finally:  # a failed run's file is not written for by later pauses
            if CLOCK:
                CLOCK.on_pause = None
        return out + f"grid_paused_seconds {sum(seconds for _, seconds in pauses)}\n"

    stats = read_stats(stage(base + ".train.stats", train))
    row = {"run": run.name, "encoder": run.encoder, "scoring": run.scoring,
           "size": run.width, "recipe": run.recipe, "seed": run.seed, "steps": int(stats["steps"]),
           "parameters": int(stats["parameters"]), "dev_wer": percent(stats["dev_wer"]),
           "wall_s": round(stats["train_seconds"], 1),
           "paused_s": round(stats.get("grid_paused_seconds", 0.0), 1),
           "steps_per_s": round(stats["steps"] / max(stats["train_seconds"], 1e-9), 3)}
    if run.test:
        model = base + ".model.npz"
        test_dict, test_words = (os.path.join(work, "test.dict"),
                                 os.path.join(work, "test.words"))
        greedy = read_stats(stage(base + ".greedy.stats", lambda: run_program(
            program, ["--load", model, "--evaluate", test_dict, "--alignment-reference",
                      os.path.join(work, "alignments.tsv"), "--stats"], log, args.threads)))
        beam = read_stats(stage(base + ".beam5.stats", lambda: run_program(
            program, ["--load", model, "--evaluate", test_dict, "--beam", "5", "--stats"], log,
            args.threads)))
        answers = os.path.join(args.results, "answers", run.name + ".tsv.gz")
        if not os.path.exists(answers):
            lines = run_program(program, ["--load", model, "--predict-file", test_words], log,
                                args.threads)
            text = "".join(f"{f[0]}\t{f[3]}\n" for f in
                           (line.split("\t") for line in lines.splitlines() if line))
            write_atomic(answers, gzip.compress(text.encode("utf-8"), mtime=0))
        row.update(test_wer=percent(greedy["eval_wer"]), test_per=percent(greedy["eval_per"]),
                   test_wer_beam5=percent(beam["eval_wer"]),
                   test_per_beam5=percent(beam["eval_per"]),
                   entropy=greedy["eval_entropy"], monotonic=greedy["eval_monotonic"],
                   alignment_agreement=greedy["eval_alignment_agreement"])
    with open(base + ".curve.csv", encoding="utf-8") as f:
        write_atomic(os.path.join(args.results, "curves", run.name + ".csv"), f.read())
    write_atomic(base + ".row.json", json.dumps(row, sort_keys=True) + "\n")
    if os.path.exists(checkpoint):
        os.remove(checkpoint)  # done: its row, model and results are kept


NUMBERS = set(COLUMNS) - {"run", "encoder", "scoring", "recipe", "size"}


def read_csv_rows(path):
    """runs.csv's rows, {run: row}, the numbers as numbers, empty cells left out."""
    rows = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8", newline="") as f:
            for line in csv.DictReader(f):
                row = {}
                for column, text in line.items():
                    if text in ("", None):
                        continue
                    row[column] = (text if column not in NUMBERS else
                                   int(text) if column in ("seed", "steps", "parameters")
                                   else float(text))
                rows[row["run"]] = row
    return rows


def read_rows(work, results):
    """The finished runs: results/runs.csv's (committed), then the work directory's."""
    rows = read_csv_rows(os.path.join(results, "runs.csv"))
    for name in os.listdir(work) if os.path.isdir(work) else []:
        if name.endswith(".row.json"):
            with open(os.path.join(work, name), encoding="utf-8") as f:
                row = json.load(f)
            rows[row["run"]] = row
    return rows


def write_runs_csv(results, runs, rows):
    """runs.csv from the rows: the plan's runs in plan order, then any others."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    names = [run.name for run in runs if run.name in rows]
    names += sorted(set(rows) - set(names))
    for name in names:
        writer.writerow({c: rows[name].get(c, "") for c in COLUMNS})
    write_atomic(os.path.join(results, "runs.csv"), out.getvalue())


def collect(args, size, dest):
    """The finished runs' rows, answers and curves from args.results into dest."""
    rows = read_rows(args.work, args.results)
    merged = read_csv_rows(os.path.join(dest, "runs.csv"))
    merged.update(rows)
    for directory in ("answers", "curves"):
        os.makedirs(os.path.join(dest, directory), exist_ok=True)
    copied = 0
    for name in rows:
        for part in (os.path.join("answers", name + ".tsv.gz"), os.path.join("curves", name + ".csv")):
            source = os.path.join(args.results, part)
            if os.path.exists(source) and os.path.realpath(source) != os.path.realpath(
                    os.path.join(dest, part)):
                with open(source, "rb") as f:
                    write_atomic(os.path.join(dest, part), f.read())
                copied += 1
    tuning, tests, _ = plan(size, merged)
    write_runs_csv(dest, tuning + tests, merged)
    print(f"compare_grid.py: {len(rows)} finished runs ({copied} files) into {dest}; "
          f"{len(merged)} rows in its runs.csv")


def set_up(args):
    """The test split and the alignments, once."""
    for name, command in [
            ("test.dict", [os.path.join(HERE, "g2p_test_split.py"), args.dict,
                           os.path.join(args.work, "test.dict.partial"),
                           os.path.join(args.work, "test.words.partial")]),
            ("alignments.tsv", [os.path.join(HERE, "g2p_align.py"), args.dict,
                                os.path.join(args.work, "alignments.tsv.partial")])]:
        path = os.path.join(args.work, name)
        if os.path.exists(path):
            continue
        print(f"compare_grid.py: {name} ({time.strftime('%H:%M')})", flush=True)
        subprocess.run(["/usr/bin/python3", *command], check=True, stdout=subprocess.DEVNULL)
        if name == "test.dict":
            os.replace(path.replace(".dict", ".words") + ".partial",
                       path.replace(".dict", ".words"))
        os.replace(path + ".partial", path)


def hours(seconds):
    return f"{seconds / 3600:.1f} h"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument("--size", choices=sorted(SIZES), default="grid")
    parser.add_argument("--only", help="only the runs whose name matches this regular expression")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--dict", help="the dictionary (default: the size's)")
    parser.add_argument("--work", help="models, checkpoints, logs (default compare-work/SIZE)")
    parser.add_argument("--results", help="default docs/compare (grid), compare-work/tiny/results")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--collect", metavar="DEST",
                        help="copy the finished runs' results into DEST (docs/compare) and stop")
    args = parser.parse_args()
    size = SIZES[args.size]
    args.dict = args.dict or size["dict"]
    args.work = args.work or os.path.join(ROOT, "compare-work", args.size)
    args.results = args.results or (os.path.join(ROOT, "docs", "compare") if args.size == "grid"
                                    else os.path.join(args.work, "results"))
    only = re.compile(args.only) if args.only else None
    global CLOCK
    CLOCK = PauseClock()
    program = os.path.join(args.build, "attograd-translate")

    if args.collect:
        collect(args, size, args.collect)
        return
    while True:
        rows = read_rows(args.work, args.results)
        tuning, tests, notes = plan(size, rows)
        runs = [r for r in tuning + tests if not only or only.search(r.name)]
        todo = [r for r in runs if r.name not in rows]
        if args.dry_run:
            print(f"size {args.size}, dictionary {args.dict}, work {args.work}, "
                  f"results {args.results}")
            total = 0.0
            for r in runs:
                state = "done" if r.name in rows else (
                    "resumes" if os.path.exists(os.path.join(args.work, r.name + ".ckpt.npz"))
                    else "to do")
                estimate = r.estimate_s(size)
                total += estimate if r.name not in rows else 0
                kind = "test" if r.test else "tuning"
                print(f"  {r.name:44} {kind:6} {state:8} ~{estimate / 60:5.1f} min  "
                      f"{' '.join(r.flags)}")
            for note, _ in notes:
                print("  (" + note + ")")
            waiting = [run for _, runs in notes for run in runs]
            waiting_s = sum(run.estimate_s(size) for run in waiting)
            print(f"{len(runs)} runs planned, {len(todo)} of them to do (~{hours(total)}); "
                  f"{len(waiting)} runs wait for tuning (~{hours(waiting_s)}); "
                  f"in all ~{hours(total + waiting_s)} on {args.threads} threads")
            return
        if not todo:
            print(f"compare_grid.py: all {len(runs)} runs done; "
                  f"scripts/compare_report.py {args.results} for the report")
            return
        if not os.path.isfile(program):
            sys.exit(f"compare_grid.py: no {program} (build it, or --build DIR)")
        for directory in (args.work, os.path.join(args.results, "answers"),
                          os.path.join(args.results, "curves")):
            os.makedirs(directory, exist_ok=True)
        set_up(args)
        run = todo[0]
        print(f"compare_grid.py: {run.name} ({time.strftime('%H:%M')}; {len(todo)} to do)",
              flush=True)
        do_run(run, args, size, program)
        rows = read_rows(args.work, args.results)
        tuning, tests, _ = plan(size, rows)
        write_runs_csv(args.results, tuning + tests, rows)


if __name__ == "__main__":
    main()
