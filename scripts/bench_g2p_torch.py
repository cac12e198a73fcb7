#!/usr/bin/python3
"""Training steps per second of attograd-translate's default g2p model (letters
to sounds on CMUdict: Bahdanau et al.'s bidirectional encoder, additive
attention) against its PyTorch twin (scripts/bahdanau_torch.py), one thread
each, the same sizes, batch size and data, in one sitting; and attograd with
two threads against one.

  scripts/bench_g2p_torch.py [BUILD_DIR] [--steps 300] [--repeats 3] [--dict PATH]
                             [--coretypes SkylakeX,Haswell]

The model's sizes, vocabularies and the program's default batch and learning
rate are read from a model attograd-translate saves with --task g2p --steps 0.
A PyTorch step is attograd-translate's: minibatches of training pairs (words
whose crc32 % 20 >= 2, drawn at random), each cut to its longest source and
target as the program cuts them (the encoder packs the sources), whole or in
two parts by length as the program's one thread trains it (--parts; the
parts' gradients summed, the faster counts), teacher
forcing, d2l's MaskedSoftmaxCELoss summed and rescaled to tgt_steps as the
program's loss, backward, grad_clipping(1), Adam, training mode (dropout on).
One thread for torch and OpenBLAS (bench_attention_torch.set_threads).
torch at its best: it runs once per OpenBLAS kernel set in --coretypes, each
in a process of its own with ATen at AVX-512 where the CPU has it (at AVX2
with Haswell's kernels under ATTOGRAD_ISA=avx2, which attograd-translate
inherits), and the fastest counts (on this project's AMD EPYC, Zen 5, neither set was faster in
every sitting: torch ran 0.8 to 1.1 steps/s with either).
attograd-translate runs --steps N --eval-every 0 --threads 1, then
--threads 2. Best of --repeats.
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_attention_torch  # noqa: E402  (environment + OpenBLAS handle; imports torch)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import bahdanau_torch  # noqa: E402
import bench_seq2seq_torch  # noqa: E402
import d2l_torch  # noqa: E402


def training_pairs(path):
    """CMUdict's training pairs as attograd-translate reads them (cmudict.h)."""
    pairs = []
    for line in open(path, encoding="utf-8"):
        if line.startswith(";;;") or not line.strip():
            continue
        word, *phonemes = line.split()
        word = re.sub(r"\(\d+\)$", "", word)
        if re.fullmatch(r"[a-z']+", word) and zlib.crc32(word.encode()) % 20 >= 2:
            pairs.append((word, phonemes))
    return pairs


def length_parts(src_len, tgt_len, parts):
    """attograd's translate::length_parts (train.cpp): the rows ordered longest
    first (source + target), cut into `parts` runs so that the largest run's
    rows x (longest source + longest target) is the least it can be; each
    part's rows in batch order."""
    n = len(src_len)
    order = sorted(range(n), key=lambda r: -(src_len[r] + tgt_len[r]))  # stable: ties in order
    least = [[None] * (n + 1) for _ in range(parts + 1)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    least[0][0] = 0
    for s in range(1, parts + 1):
        for i in range(s, n - (parts - s) + 1):
            longest_src = longest_tgt = 0
            for j in range(i - 1, s - 2, -1):
                longest_src = max(longest_src, src_len[order[j]])
                longest_tgt = max(longest_tgt, tgt_len[order[j]])
                if least[s - 1][j] is None:
                    continue
                largest = max(least[s - 1][j], (i - j) * (longest_src + longest_tgt))
                if least[s][i] is None or largest < least[s][i]:
                    least[s][i], cut[s][i] = largest, j
    rows, i = [], n
    for s in range(parts, 0, -1):
        j = cut[s][i]
        rows.append(sorted(order[j:i]))
        i = j
    return rows[::-1]


def torch_steps_per_sec(npz, pairs, steps, batch, lr, parts):
    embed, hidden, layers, src_steps, tgt_steps = (int(v) for v in npz["meta.sizes"])
    dropout = float(npz["meta.dropout"][0])
    src_vocab, tgt_vocab = (bytes(npz[k].astype(np.uint8)).decode().split("\n")
                            for k in ("meta.src_vocab", "meta.tgt_vocab"))
    src_index = {t: i for i, t in enumerate(src_vocab)}
    tgt_index = {t: i for i, t in enumerate(tgt_vocab)}
    torch.manual_seed(0)
    net = bahdanau_torch.make_bidirectional(len(src_vocab), len(tgt_vocab), embed, hidden, layers,
                                            dropout)
    net.apply(d2l_torch.init_seq2seq)
    net.train()
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    loss = d2l_torch.MaskedSoftmaxCELoss()
    rng = random.Random(0)
    eos = 2

    def make_batch():
        """The batch's parts (the whole batch, or its length_parts), each cut
        to its own longest source and target."""
        chosen = [pairs[rng.randrange(len(pairs))] for _ in range(batch)]
        src = [[src_index[c] for c in w] + [eos] for w, _ in chosen]
        tgt = [[tgt_index[p] for p in ph] + [eos] for _, ph in chosen]
        pad = lambda rows, n: torch.tensor([r + [0] * (n - len(r)) for r in rows])  # noqa: E731
        cuts = [list(range(batch))] if parts == 1 else length_parts(
            [len(r) for r in src], [len(r) for r in tgt], parts)
        for rows in cuts:
            s, t = [src[r] for r in rows], [tgt[r] for r in rows]
            yield (pad(s, max(map(len, s))), torch.tensor([len(r) for r in s]),
                   pad(t, max(map(len, t))), torch.tensor([len(r) for r in t]))

    def step():
        optimizer.zero_grad()
        for X, X_valid_len, Y, Y_valid_len in make_batch():
            bos = torch.full((X.shape[0], 1), 1, dtype=torch.long)
            Y_hat, _ = net(X, torch.cat([bos, Y[:, :-1]], 1), X_valid_len)
            l = loss(Y_hat, Y, Y_valid_len).sum() * (Y.shape[1] / tgt_steps)
            l.backward()  # the parts' gradients add up to the batch's
        d2l_torch.grad_clipping(net, 1)
        optimizer.step()

    return bench_seq2seq_torch.steps_per_sec(step, steps, warmup=10)


def torch_child(args, shapes, batch, lr, coretype, parts):
    """torch's steps per second (wall, CPU) with OpenBLAS's `coretype` kernels
    and the batch in `parts`: in a process of its own, since OpenBLAS picks
    its kernels when it loads."""
    env = dict(os.environ, ATTOGRAD_TORCH_KEEP_ENV="1", OPENBLAS_CORETYPE=coretype)
    capability = bench_attention_torch.torch_kernels()[0]
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-only", shapes,
                          "--steps", str(args.steps), "--dict", args.dict, "--batch", str(batch),
                          "--lr", str(lr), "--parts", str(parts)], env=env, check=True,
                          capture_output=True,
                         text=True).stdout
    fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    return fields["what_ran"], float(fields["wall"]), float(fields["cpu"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir", nargs="?", default="build")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dict", default="/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict")
    parser.add_argument("--coretypes",
                        help="OpenBLAS kernels torch is timed with (each in its own process, "
                             "ATen at AVX-512 where the CPU has it); the best counts (default "
                             "SkylakeX,Haswell; Haswell alone with ATTOGRAD_ISA=avx2)")
    parser.add_argument("--parts", default="1,2",
                        help="torch steps with the batch whole (1) and cut by length into 2 "
                             "parts, as attograd-translate's one thread trains it; the best counts")
    parser.add_argument("--torch-only", metavar="SHAPES_NPZ", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--lr", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.coretypes is None:
        avx2 = bench_attention_torch.torch_kernels()[1] == "Haswell"
        args.coretypes = "Haswell" if avx2 else "SkylakeX,Haswell"
    bench_attention_torch.set_threads(1, 1)
    if args.torch_only:
        wall, cpu = torch_steps_per_sec(dict(np.load(args.torch_only)), training_pairs(args.dict),
                                        args.steps, args.batch, args.lr, int(args.parts))
        print(f"what_ran {bench_attention_torch.what_ran()}\nwall {wall}\ncpu {cpu}")
        return
    program = os.path.join(args.build_dir, "attograd-translate")
    common = ["--task", "g2p", "--dict", args.dict]
    with tempfile.TemporaryDirectory() as work:
        shapes = os.path.join(work, "shapes.npz")
        setup = bench_seq2seq_torch.attograd_stats(program, [*common, "--steps", "0", "--save",
                                                             shapes])
        npz = dict(np.load(shapes))
        batch, lr = int(setup["batch"]), float(setup["lr"])
        print(f"# g2p default model: embed/hidden/layers/src_steps/tgt_steps "
              f"{[int(v) for v in npz['meta.sizes']]}, dropout {float(npz['meta.dropout'][0])}, "
              f"batch {batch}, lr {lr}; {args.steps} steps, best of {args.repeats}")
        kinds = [(c, int(p)) for c in args.coretypes.split(",") for p in args.parts.split(",")]
        torch_best = {k: (0.0, 0.0) for k in kinds}
        ours_wall = ours_cpu = two_threads = 0.0
        flags = [*common, "--steps", str(args.steps), "--eval-every", "0"]
        for _ in range(args.repeats):
            for coretype, parts in kinds:
                what_ran, wall, cpu = torch_child(args, shapes, batch, lr, coretype, parts)
                best = torch_best[coretype, parts]
                torch_best[coretype, parts] = (max(best[0], wall), max(best[1], cpu))
            stat = bench_seq2seq_torch.attograd_stats(program, [*flags, "--threads", "1"])
            ours_wall = max(ours_wall, float(stat["steps_per_sec"]))
            ours_cpu = max(ours_cpu, float(stat["steps_per_cpu_sec"]))
            stat = bench_seq2seq_torch.attograd_stats(program, [*flags, "--threads", "2"])
            two_threads = max(two_threads, float(stat["steps_per_sec"]))
    for (coretype, parts), (wall, cpu) in torch_best.items():
        print(f"# torch with OPENBLAS_CORETYPE={coretype}, the batch in {parts} part(s): "
              f"{wall:.2f} steps/s, {cpu:.2f} steps per CPU s")
    print(f"# the best: {max(torch_best, key=lambda c: torch_best[c][0])}; last run: {what_ran}")
    torch_wall = max(wall for wall, _ in torch_best.values())
    torch_cpu = max(cpu for _, cpu in torch_best.values())
    bench_seq2seq_torch.print_ratios(torch_wall, torch_cpu, ours_wall, ours_cpu)
    print(f"attograd_two_threads_steps_per_sec {two_threads:.1f}")
    print(f"two_threads_ratio {two_threads / ours_wall:.2f}")


if __name__ == "__main__":
    main()
