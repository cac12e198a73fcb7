#!/usr/bin/python3
"""Training steps per second of d2l's seq2seq with attention ("Bahdanau
Attention") or d2l's Transformer, PyTorch CPU (scripts/d2l_torch.py) against
attograd-translate, one thread each, the same batch, sizes and step counts,
in one sitting.

  scripts/bench_seq2seq_torch.py [BUILD_DIR] [--model bahdanau|transformer]
                                 [--task dates] [--attention additive]
                                 [--steps 500] [--repeats 3]

A PyTorch step is d2l's train_seq2seq step: teacher forcing, MaskedSoftmaxCELoss
summed, backward, grad_clipping(1), Adam (lr 0.005), in training mode (dropout
0.1), on batches of the task's shapes (batch 64; the model's sizes, src_steps,
tgt_steps and the vocabulary sizes are read from a model attograd-translate
saves with --steps 0, so both train the same shapes: the Transformer's d 32,
FFN 64, 4 heads, 2 blocks by default).
Token values are random (the cost does not depend on them). One thread:
torch.set_num_threads(1) and OpenBLAS held to one thread, as
bench_attention_torch.py does (importing it also sets the CPU capability
environment before torch loads). attograd-translate runs with --threads 1
--eval-every 0 and reports steps/s without evaluation. Best of --repeats.
Prints "torch_steps_per_sec", "attograd_steps_per_sec" and "ratio" (wall
clock, the bests), each repeat's pair's ratio and their median, and the same per CPU second ("..._per_cpu_sec", "ratio_cpu": process
CPU time, fair when other work shares the cores).
"""
import argparse
import statistics
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_attention_torch  # noqa: E402  (environment + OpenBLAS handle; imports torch)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import d2l_torch  # noqa: E402


def make_net(model, sizes, attention, transformer_sizes):
    """d2l's model of these sizes, initialised as d2l's train_seq2seq does."""
    embed, hidden, layers, src_steps, tgt_steps, src_vocab, tgt_vocab = sizes
    if model == "transformer":
        heads, ffn, blocks, causal = transformer_sizes
        encoder = d2l_torch.TransformerEncoder(src_vocab, hidden, ffn, heads, blocks, 0.1)
        decoder = d2l_torch.TransformerDecoder(tgt_vocab, hidden, ffn, heads, blocks, 0.1,
                                               causal=bool(causal))
    else:
        encoder = d2l_torch.Seq2SeqEncoder(src_vocab, embed, hidden, layers, 0.1)
        decoder = d2l_torch.Seq2SeqAttentionDecoder(tgt_vocab, embed, hidden, layers, 0.1,
                                                    attention=attention)
    net = d2l_torch.EncoderDecoder(encoder, decoder)
    net.apply(d2l_torch.init_seq2seq)
    return net


def torch_steps_per_sec(model, sizes, attention, transformer_sizes, steps, batch):
    embed, hidden, layers, src_steps, tgt_steps, src_vocab, tgt_vocab = sizes
    torch.manual_seed(0)
    net = make_net(model, sizes, attention, transformer_sizes)
    net.train()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.005)
    loss = d2l_torch.MaskedSoftmaxCELoss()
    X = torch.randint(4, src_vocab, (batch, src_steps))
    X_valid_len = torch.randint(src_steps // 2, src_steps + 1, (batch,))
    Y = torch.randint(4, tgt_vocab, (batch, tgt_steps))
    Y_valid_len = torch.full((batch,), tgt_steps)
    bos = torch.full((batch, 1), 1, dtype=torch.long)

    def step():
        optimizer.zero_grad()
        dec_input = torch.cat([bos, Y[:, :-1]], 1)
        Y_hat, _ = net(X, dec_input, X_valid_len)
        l = loss(Y_hat, Y, Y_valid_len)
        l.sum().backward()
        d2l_torch.grad_clipping(net, 1)
        optimizer.step()

    return steps_per_sec(step, steps, warmup=20)


def steps_per_sec(step, steps, warmup):
    """Calls step() warmup times, then `steps` times: steps per wall and per CPU second."""
    for _ in range(warmup):
        step()
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu_start)


def attograd_stats(program, flags):
    """attograd-translate FLAGS --stats, its "key value" lines as a dict of strings."""
    out = subprocess.run([program, *flags, "--stats"], check=True, capture_output=True,
                         text=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def print_ratios(torch_wall, torch_cpu, ours_wall, ours_cpu):
    # Per CPU second as well: on a machine shared with other work, the wall
    # clock counts the time the process waited for a core.
    print(f"torch_steps_per_sec {torch_wall:.1f}")
    print(f"attograd_steps_per_sec {ours_wall:.1f}")
    print(f"ratio {ours_wall / torch_wall:.2f}")
    print(f"torch_steps_per_cpu_sec {torch_cpu:.1f}")
    print(f"attograd_steps_per_cpu_sec {ours_cpu:.1f}")
    print(f"ratio_cpu {ours_cpu / torch_cpu:.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir", nargs="?", default="build")
    parser.add_argument("--model", default="bahdanau", choices=["bahdanau", "transformer"])
    parser.add_argument("--task", default="dates")
    parser.add_argument("--attention", default="additive")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bench_attention_torch.set_threads(1, 1)
    program = os.path.join(args.build_dir, "attograd-translate")
    common = ["--model", args.model, "--task", args.task, "--threads", "1", "--batch",
              str(args.batch)]
    if args.model == "bahdanau":
        common += ["--attention", args.attention]
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "shapes.npz")
        subprocess.run([program, *common, "--steps", "0", "--save", model], check=True,
                       capture_output=True)
        npz = np.load(model)
        sizes = [int(v) for v in npz["meta.sizes"]]
        sizes += [len(bytes(npz[k].astype(np.uint8)).decode().split("\n"))
                  for k in ("meta.src_vocab", "meta.tgt_vocab")]
        transformer_sizes = ([int(v) for v in npz["meta.transformer"]]
                             if args.model == "transformer" else None)
    model_text = (f"transformer heads/ffn/blocks/causal {transformer_sizes}"
                  if args.model == "transformer" else f"bahdanau, {args.attention} attention")
    print(f"# task {args.task}, {model_text}, batch {args.batch}, "
          f"embed/hidden/layers/src_steps/tgt_steps/src_vocab/tgt_vocab {sizes}, "
          f"{args.steps} steps, best of {args.repeats}, one thread "
          f"(OpenBLAS {'held to 1' if bench_attention_torch.OPENBLAS else 'not found'})")
    print(f"# {bench_attention_torch.what_ran()}")
    torch_wall, torch_cpu, ours_wall, ours_cpu = 0.0, 0.0, 0.0, 0.0
    pair_ratios = []  # each repeat is a pair: torch, then attograd
    for _ in range(args.repeats):
        wall, cpu = torch_steps_per_sec(args.model, sizes, args.attention, transformer_sizes,
                                        args.steps, args.batch)
        torch_wall, torch_cpu = max(torch_wall, wall), max(torch_cpu, cpu)
        stat = attograd_stats(program, [*common, "--steps", str(args.steps), "--eval-every", "0"])
        ours_wall = max(ours_wall, float(stat["steps_per_sec"]))
        ours_cpu = max(ours_cpu, float(stat["steps_per_cpu_sec"]))
        pair_ratios.append(float(stat["steps_per_sec"]) / wall)
    print_ratios(torch_wall, torch_cpu, ours_wall, ours_cpu)
    print(f"pair_ratios {' '.join(f'{r:.2f}' for r in pair_ratios)}")
    print(f"ratio_median_of_pairs {statistics.median(pair_ratios):.2f}")


if __name__ == "__main__":
    main()
