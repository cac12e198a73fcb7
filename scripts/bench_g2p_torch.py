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
target as the program cuts them (the encoder packs the sources), teacher
forcing, d2l's MaskedSoftmaxCELoss summed and rescaled to tgt_steps as the
program's loss, backward, grad_clipping(1), Adam, training mode (dropout on).
One thread for torch and OpenBLAS (bench_attention_torch.set_threads).
torch at its best: it runs once per OpenBLAS kernel set in --coretypes, each
in a process of its own with ATen at AVX-512 where the CPU has it, and the
fastest counts (on this project's AMD EPYC, Zen 5, neither set was faster in
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


def torch_steps_per_sec(npz, pairs, steps, batch, lr):
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
        chosen = [pairs[rng.randrange(len(pairs))] for _ in range(batch)]
        src = [[src_index[c] for c in w] + [eos] for w, _ in chosen]
        tgt = [[tgt_index[p] for p in ph] + [eos] for _, ph in chosen]
        S, T = max(map(len, src)), max(map(len, tgt))
        pad = lambda rows, n: torch.tensor([r + [0] * (n - len(r)) for r in rows])  # noqa: E731
        return (pad(src, S), torch.tensor([len(r) for r in src]), pad(tgt, T),
                torch.tensor([len(r) for r in tgt]))

    bos = torch.full((batch, 1), 1, dtype=torch.long)

    def step():
        X, X_valid_len, Y, Y_valid_len = make_batch()
        optimizer.zero_grad()
        Y_hat, _ = net(X, torch.cat([bos, Y[:, :-1]], 1), X_valid_len)
        l = loss(Y_hat, Y, Y_valid_len).sum() * (Y.shape[1] / tgt_steps)
        l.backward()
        d2l_torch.grad_clipping(net, 1)
        optimizer.step()

    return bench_seq2seq_torch.steps_per_sec(step, steps, warmup=10)


def torch_child(args, shapes, batch, lr, coretype):
    """torch's steps per second (wall, CPU) with OpenBLAS's `coretype` kernels:
    in a process of its own, since OpenBLAS picks its kernels when it loads."""
    env = dict(os.environ, ATTOGRAD_TORCH_KEEP_ENV="1", OPENBLAS_CORETYPE=coretype)
    if bench_attention_torch.has_avx512f():
        env["ATEN_CPU_CAPABILITY"] = "avx512"
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-only", shapes,
                          "--steps", str(args.steps), "--dict", args.dict, "--batch", str(batch),
                          "--lr", str(lr)], env=env, check=True, capture_output=True,
                         text=True).stdout
    fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    return fields["what_ran"], float(fields["wall"]), float(fields["cpu"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir", nargs="?", default="build")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dict", default="/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict")
    parser.add_argument("--coretypes", default="SkylakeX,Haswell",
                        help="OpenBLAS kernels torch is timed with (each in its own process, "
                             "ATen at AVX-512 where the CPU has it); the best counts")
    parser.add_argument("--torch-only", metavar="SHAPES_NPZ", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--lr", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    bench_attention_torch.set_threads(1, 1)
    if args.torch_only:
        wall, cpu = torch_steps_per_sec(dict(np.load(args.torch_only)), training_pairs(args.dict),
                                        args.steps, args.batch, args.lr)
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
        coretypes = args.coretypes.split(",")
        torch_best = {c: (0.0, 0.0) for c in coretypes}
        ours_wall = ours_cpu = two_threads = 0.0
        flags = [*common, "--steps", str(args.steps), "--eval-every", "0"]
        for _ in range(args.repeats):
            for coretype in coretypes:
                what_ran, wall, cpu = torch_child(args, shapes, batch, lr, coretype)
                best = torch_best[coretype]
                torch_best[coretype] = (max(best[0], wall), max(best[1], cpu))
            stat = bench_seq2seq_torch.attograd_stats(program, [*flags, "--threads", "1"])
            ours_wall = max(ours_wall, float(stat["steps_per_sec"]))
            ours_cpu = max(ours_cpu, float(stat["steps_per_cpu_sec"]))
            stat = bench_seq2seq_torch.attograd_stats(program, [*flags, "--threads", "2"])
            two_threads = max(two_threads, float(stat["steps_per_sec"]))
    for coretype, (wall, cpu) in torch_best.items():
        print(f"# torch with OPENBLAS_CORETYPE={coretype}: {wall:.2f} steps/s, "
              f"{cpu:.2f} steps per CPU s")
    print(f"# the best: {max(torch_best, key=lambda c: torch_best[c][0])}; last run: {what_ran}")
    torch_wall = max(wall for wall, _ in torch_best.values())
    torch_cpu = max(cpu for _, cpu in torch_best.values())
    bench_seq2seq_torch.print_ratios(torch_wall, torch_cpu, ours_wall, ours_cpu)
    print(f"attograd_two_threads_steps_per_sec {two_threads:.1f}")
    print(f"two_threads_ratio {two_threads / ours_wall:.2f}")


if __name__ == "__main__":
    main()
