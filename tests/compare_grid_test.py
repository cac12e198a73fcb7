#!/usr/bin/env python3
"""scripts/compare_grid.py's bookkeeping, with a stand-in for
attograd-translate (a few lines of Python that answer its command lines with
figures made up from the run's flags), standard library only:

    tests/compare_grid_test.py SOURCE_DIR

1. The tiny grid, uninterrupted: every run once, in plan order; each cell's
   test runs at the recipe of its lowest dev WER (the stand-in's dev WER
   favours label smoothing 0.1 for additive, 0 for every other function);
   runs.csv, answers/RUN.tsv.gz and curves/RUN.csv as docs/compare/README.md
   says; then the confirmation at full size: the two cells of lowest dev WER
   (a tie: the first two in plan order) and bidirectional dot, each tuned
   over the rule's learning rates (the stand-in favours the higher) and
   tested at its best. The Transformer: every recipe's first seed, then
   published's second and the second of the recipe of lowest first-seed
   dev WER (the stand-in favours the higher dropout: cosine-dropout0.3).
2. The same grid killed (SIGKILL, by the stand-in, of the script itself)
   once in the middle of a training run, right after a checkpoint, and once
   in the middle of a test run's scoring, then started again each time: the
   training resumes from its checkpoint (--resume), the scoring goes on
   without training again, and the results are the uninterrupted run's, byte
   for byte, but for the killed training run's paused_s: a pause of its
   first sitting (its WORK/RUN.paused) begun before the checkpoint it
   resumes from is carried into its row, one begun after it is not.
3. --dry-run: the plan, each run's state, the total.
4. A new machine: --collect copies the finished runs into another results
   directory (the repository's docs/compare); with it and an empty work
   directory, every run is done: nothing is trained or scored again.
"""
import csv
import gzip
import json
import os
import subprocess
import sys
import tempfile

from script_checks import Checks, source_dir_argument

STAND_IN = r'''#!/usr/bin/python3
import json, os, signal, sys
args = sys.argv[1:]
def value(flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
kill = os.environ.get("STUB_KILL", "")  # "training:NAME:STEP" or "beam:NAME"
def killed(what):
    if kill and kill == what:
        os.kill(os.getppid(), signal.SIGKILL)
        sys.exit(1)
if "--save" in args:  # training
    steps, every = int(value("--steps")), int(value("--eval-every"))
    lr, ls = float(value("--lr")), float(value("--label-smoothing", "0"))
    attention, seed = value("--attention", "transformer"), int(value("--seed"))
    checkpoint = value("--checkpoint")
    name = os.path.basename(checkpoint)[:-len(".ckpt.npz")]
    start = int(open(value("--resume")).read()) if "--resume" in args else 0
    for step in range(start + 1, steps + 1):
        if step % int(value("--checkpoint-every")) == 0:
            with open(checkpoint + ".partial", "w") as f:
                f.write(str(step))
            os.replace(checkpoint + ".partial", checkpoint)
            killed(f"training:{name}:{step}")
    good = (ls == 0.1) == (attention == "additive")
    dropout = float([a for i, a in enumerate(args) if i and args[i - 1] == "--dropout"][-1])
    dev = 0.31 - 0.05 * good - 0.001 * seed - lr - 0.1 * dropout
    with open(value("--curve"), "w") as f:
        f.write("step,dev_wer\n" + "".join(f"{s},{100 * (dev + 0.1 * (steps - s) / steps)}\n"
                                           for s in range(every, steps + 1, every)))
    open(value("--save"), "w").write(name)
    print(f"steps {steps}\nparameters {1000 + len(attention)}\ndev_wer {dev}\n"
          f"train_seconds {steps / 10}")
elif "--evaluate" in args:
    name = open(value("--load")).read()
    beam = "--beam" in args
    if beam:
        killed(f"beam:{name}")
    print(f"eval_wer {0.25 - 0.01 * beam}\neval_per {0.06}")
    if not beam:
        print("eval_entropy 0.5\neval_monotonic 0.99\neval_alignment_agreement 0.8")
elif "--predict-file" in args:
    for word in open(value("--predict-file")).read().split():
        print(f"{word}\t1\t1.0\tK AE T\tmodel")
'''

check = Checks("compare_grid_test")


def run_grid(source, build, work, kill="", dry_run=False, more=()):
    env = dict(os.environ, STUB_LOG=os.path.join(work, "stub.log"), STUB_KILL=kill)
    command = [sys.executable, os.path.join(source, "scripts", "compare_grid.py"), "--size",
               "tiny", "--build", build, "--work", work, *more]
    return subprocess.run(command + (["--dry-run"] if dry_run else []), env=env,
                          capture_output=True, text=True)


def last_flag(call, flag):
    """The value after the last `flag` of a command line, or None."""
    values = [a for i, a in enumerate(call) if i and call[i - 1] == flag]
    return values[-1] if values else None


def calls(work):
    with open(os.path.join(work, "stub.log")) as f:
        return [json.loads(line) for line in f]


def results(work):
    """Every file of the results directory: {relative path: bytes}."""
    out, top = {}, os.path.join(work, "results")
    for folder, _, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, top)] = f.read()
    return out


def main():
    source = source_dir_argument("compare_grid_test")
    with tempfile.TemporaryDirectory() as tmp:
        build = os.path.join(tmp, "build")
        os.makedirs(build)
        program = os.path.join(build, "attograd-translate")
        with open(program, "w") as f:
            f.write(STAND_IN)
        os.chmod(program, 0o755)

        # 1. Uninterrupted.
        whole = os.path.join(tmp, "whole")
        os.makedirs(whole)
        done = run_grid(source, build, whole)
        check(done.returncode == 0, f"the grid failed: {done.stderr[-2000:]}")
        files = results(whole)
        rows = list(csv.DictReader(files["runs.csv"].decode().splitlines()))
        check(len(rows) == 46, f"{len(rows)} rows, expected 20 tuning + 10 test + 7 Transformers "
              "+ 3 x (2 tuning + 1 test) at full size")
        check(not any(f.endswith(".partial") for f in files), "a .partial file was left")
        training = [c for c in calls(whole) if "--save" in c]
        check(len(training) == 46, f"{len(training)} trainings, expected one a run")
        check(not any("--resume" in c for c in training), "an uninterrupted run resumed")
        tests = {(r["size"], r["encoder"], r["scoring"]): r["recipe"]
                 for r in rows if r["test_wer"]}
        for (size, encoder, scoring), recipe in tests.items():
            if scoring != "transformer":
                lr = "lr0.01" if size == "half" else "lr0.02"
                expected = lr + ("-ls0.1" if scoring == "additive" else "-ls0")
                check(recipe == expected,
                      f"{size} {encoder} {scoring} chose {recipe}, not {expected}")
        check(len(tests) == 14, f"{len(tests)} cells with test runs, expected 14")
        transformers = {(r["recipe"], r["seed"]): r["steps"]
                        for r in rows if r["scoring"] == "transformer"}
        check(transformers == {("published", "1"): "40", ("budget", "1"): "50",
                               ("cosine", "1"): "50", ("cosine-dropout0.3", "1"): "50",
                               ("cosine-40000-average5", "1"): "60",
                               ("published", "2"): "40", ("cosine-dropout0.3", "2"): "50"},
              f"the Transformer's recipes, seeds and step caps: {transformers}")
        # The Transformer's warm-up runs by checkpoint file; a flag's last
        # value is the one the program keeps.
        warm = {os.path.basename(last_flag(c, "--checkpoint")): c
                for c in training if "--warmup" in c}
        schedules = {name: last_flag(c, "--lr-schedule") for name, c in warm.items()}
        check(schedules == {"transformer-published-s1.ckpt.npz": None,
                            "transformer-budget-s1.ckpt.npz": None,
                            "transformer-cosine-s1.ckpt.npz": "cosine",
                            "transformer-cosine-dropout0.3-s1.ckpt.npz": "cosine",
                            "transformer-cosine-40000-average5-s1.ckpt.npz": "cosine",
                            "transformer-published-s2.ckpt.npz": None,
                            "transformer-cosine-dropout0.3-s2.ckpt.npz": "cosine"},
              f"the Transformer's warm-up runs and their decays: {schedules}")
        dropouts = {name: last_flag(c, "--dropout") for name, c in warm.items()}
        check(dropouts == {"transformer-published-s1.ckpt.npz": "0.1",
                           "transformer-budget-s1.ckpt.npz": "0.1",
                           "transformer-cosine-s1.ckpt.npz": "0.1",
                           "transformer-cosine-dropout0.3-s1.ckpt.npz": "0.3",
                           "transformer-cosine-40000-average5-s1.ckpt.npz": "0.1",
                           "transformer-published-s2.ckpt.npz": "0.1",
                           "transformer-cosine-dropout0.3-s2.ckpt.npz": "0.3"},
              f"the Transformer's warm-up runs and their dropout: {dropouts}")
        averaged = {name: last_flag(c, "--average-last") for name, c in warm.items()
                    if "--average-last" in c}
        check(averaged == {"transformer-cosine-40000-average5-s1.ckpt.npz": "5"},
              f"the Transformer's runs that average their last evaluations: {averaged}")
        full = sorted((e, s) for size, e, s in tests if size == "full" and s != "transformer")
        check(full == [("bidirectional", "dot"), ("unidirectional", "additive"),
                       ("unidirectional", "dot")], f"the cells confirmed at full size: {full}")
        check(all(r["run"].startswith("full-") == (r["size"] == "full")
                  for r in rows if r["scoring"] != "transformer"),
              "the full-size runs, and only they, are named full-...")
        tuning = [r for r in rows if not r["test_wer"]]
        check(len(tuning) == 26 and all(r["seed"] == "0" for r in tuning),
              "the tuning runs are the 26 seed-0 rows without test figures")
        full_bi_dot = [c for c in training if any("full-bi-dot" in a for a in c)]
        check(len(full_bi_dot) == 3 and all(
            c[c.index("--hidden") + 1] == "12" and c[c.index("--encoder-hidden") + 1] == "6"
            for c in full_bi_dot), "the full-size cells train at the confirmation's widths")
        bi_dot = [c for c in training if "dot" in c and "bidirectional" in c and
                  not any("full-" in a for a in c)]
        check(all(c[c.index("--encoder-hidden") + 1] == "4" for c in bi_dot),
              "the bidirectional cells' encoder is half the hidden width")
        row = next(r for r in rows if r["run"] == "bi-additive-lr0.01-ls0.1-s1")
        check(row["test_wer"] == "25.0" and row["test_wer_beam5"] == "24.0" and
              row["alignment_agreement"] == "0.8" and row["steps"] == "30",
              f"bi-additive's test row: {row}")
        answers = gzip.decompress(files["answers/bi-additive-lr0.01-ls0.1-s1.tsv.gz"]).decode()
        test_words = open(os.path.join(whole, "test.words")).read().split()
        check(answers == "".join(f"{w}\tK AE T\n" for w in test_words),
              "the answers are word<TAB>phonemes, every test word once")
        curve = files["curves/uni-dot-lr0.01-ls0-s0.csv"].decode().splitlines()
        check(curve[0] == "step,dev_wer" and len(curve) == 4, f"a curve: {curve}")

        # 2. Killed twice, then finished.
        killed = os.path.join(tmp, "killed")
        os.makedirs(killed)
        first = run_grid(source, build, killed, kill="training:uni-general-lr0.01-ls0.1-s0:20")
        check(first.returncode != 0, "the first sitting was not killed")
        # two pauses in the first sitting of the run it killed, as the pause
        # clock keeps them ([start, seconds]): one begun before its last
        # checkpoint (in the time it carries), one after (lost with the steps
        # after it): only the first counts
        saved = os.path.getmtime(os.path.join(killed, "uni-general-lr0.01-ls0.1-s0.ckpt.npz"))
        with open(os.path.join(killed, "uni-general-lr0.01-ls0.1-s0.paused"), "w") as f:
            json.dump([[saved - 60, 7.5], [saved + 1, 100.0]], f)
        second = run_grid(source, build, killed, kill="beam:bi-dot-lr0.01-ls0-s1")
        check(second.returncode != 0, "the second sitting was not killed")
        third = run_grid(source, build, killed)
        check(third.returncode == 0, f"the third sitting failed: {third.stderr[-2000:]}")
        got = results(killed)
        rows_killed = list(csv.DictReader(got.pop("runs.csv").decode().splitlines()))
        paused = {r["run"]: r.pop("paused_s") for r in rows_killed}
        check(paused["uni-general-lr0.01-ls0.1-s0"] == "7.5" and
              set(paused.values()) == {"7.5", "0.0"},
              "the resumed run's paused_s is not its earlier sitting's pause")
        for r in rows:
            r.pop("paused_s")
        check(rows_killed == rows and got == {k: v for k, v in files.items() if k != "runs.csv"},
              "the killed grid's results differ from the whole one's")
        trained = [c for c in calls(killed) if "--save" in c]
        resumed = [c for c in trained if "--resume" in c]
        check(len(resumed) == 1 and "uni-general-lr0.01-ls0.1-s0" in resumed[0][
            resumed[0].index("--resume") + 1], f"resumed: {resumed}")
        bi_dot_s1 = [c for c in trained if any("bi-dot-lr0.01-ls0-s1.ckpt" in a for a in c)]
        check(len(bi_dot_s1) == 1, "the run killed while scored was trained again")
        check(not any(name.endswith(".ckpt.npz") for name in os.listdir(killed)),
              "a finished run's checkpoint was left")

        # 3. The plan.
        plan = run_grid(source, build, killed, dry_run=True)
        check(plan.returncode == 0 and "46 runs planned, 0 of them to do" in plan.stdout and
              "bi-multihead-lr0.01-ls0-s1" in plan.stdout, f"--dry-run: {plan.stdout[-500:]}")
        fresh = run_grid(source, build, os.path.join(tmp, "fresh"), dry_run=True)
        check("26 runs planned, 26 of them to do" in fresh.stdout and
              "20 runs wait for tuning" in fresh.stdout,
              f"--dry-run before anything: {fresh.stdout[-500:]}")

        # 4. Collected into a repository's results, carried to an empty work directory.
        repo = os.path.join(tmp, "repo")
        collected = run_grid(source, build, killed, more=["--collect", repo])
        check(collected.returncode == 0 and "46 finished runs" in collected.stdout,
              f"--collect: {collected.stdout[-500:]} {collected.stderr[-500:]}")
        copied = {}
        for folder, _, names in os.walk(repo):
            for name in names:
                with open(os.path.join(folder, name), "rb") as f:
                    copied[os.path.relpath(os.path.join(folder, name), repo)] = f.read()
        check(copied == results(killed), "the collected results differ from the grid's")
        new = os.path.join(tmp, "new")
        os.makedirs(new)
        plan = run_grid(source, build, new, dry_run=True, more=["--results", repo])
        check("46 runs planned, 0 of them to do" in plan.stdout,
              f"--dry-run on a new machine: {plan.stdout[-500:]}")
        again = run_grid(source, build, new, more=["--results", repo])
        check(again.returncode == 0 and not os.path.exists(os.path.join(new, "stub.log")),
              f"a new machine ran something: {again.stderr[-500:]}")
    check.finish()


if __name__ == "__main__":
    main()
