#!/usr/bin/python3
"""A plain beam search over PyTorch twins' log probabilities, the reference
for attograd's translate::beam_search (translate/predict.h,
tests/test_beam_search.cpp).

Run with /usr/bin/python3 (Debian's python3-torch and numpy):
    /usr/bin/python3 scripts/make_beam_fixtures.py

Two seeded float64 models in eval mode: the bidirectional seq2seq
(scripts/bahdanau_torch.py; src vocab 11, tgt vocab 12, embed 8, hidden 8,
2 layers) and d2l's Transformer (scripts/d2l_torch.py; d 8, 2 heads, 2
blocks, FFN 16). attograd's reserved tokens: <pad> 0, <bos> 1, <eos> 2,
<unk> 3; a beam wider than one never extends a hypothesis with <pad>, <bos>
or <unk> (K = 1 is greedy search, over every token). Each
model's <eos> logit gets a bias (EOS_BIAS) so that some candidates finish
within the steps and some do not.

The search is written out as plainly as it can be: no batching, no state
cache; each hypothesis's next log probabilities come from the whole model run
on <bos> + its tokens (the last step's log_softmax). Each step keeps the K best
extensions (hypothesis, token) of every input by log P (ties: earlier
hypothesis, then lower token); those ending in <eos> are finished. Candidates
are scored log P / L^0.75 (L = tokens + 1 for <eos> when finished); finished
ones first, best score first, then the unfinished ones; K are kept.

Writes tests/fixtures/beam_search.npz. For MODEL in {bidirectional, transformer}:
    MODEL.param.NN.<name>   the state dict (float64), NN its position
    MODEL.src [B, T], MODEL.src_valid_len [B]     int64
    MODEL.kK.tokens [B, K, STEPS]   int64, each candidate's output, -1 after it
    MODEL.kK.finished [B, K]        int64 (1: ended in <eos>)
    MODEL.kK.log_prob, MODEL.kK.score [B, K]      float64
for K in 1, 3, 10, with STEPS = 6 output steps at most.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bahdanau_torch  # noqa: E402
import d2l_torch as d2l  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
PAD, BOS, EOS, UNK = 0, 1, 2, 3
STEPS, ALPHA = 6, 0.75
SRC = [[5, 6, 7, 8, 9, 2], [4, 10, 5, 2, 0, 0], [7, 2, 0, 0, 0, 0]]
SRC_VALID = [6, 4, 2]


def next_log_probs(net, src, valid, tokens):
    dec_in = torch.tensor([[BOS] + tokens])
    logits, _ = net(src, dec_in, valid)
    return torch.log_softmax(logits[0, -1], dim=-1).tolist()


def beam_search(net, src, valid, k):
    live, finished = [([], 0.0)], []
    for _ in range(STEPS):
        extensions = []
        for i, (tokens, log_p) in enumerate(live):
            for v, lp in enumerate(next_log_probs(net, src, valid, tokens)):
                if k > 1 and v in (PAD, BOS, UNK):
                    continue
                extensions.append((log_p + lp, i, v))
        extensions.sort(key=lambda e: (-e[0], e[1], e[2]))
        next_live = []
        for log_p, i, v in extensions[:k]:
            if v == EOS:
                finished.append((live[i][0], log_p))
            else:
                next_live.append((live[i][0] + [v], log_p))
        live = next_live
        if not live:
            break

    def scored(group, done):
        out = [(tokens, done, log_p, log_p / (len(tokens) + done) ** ALPHA)
               for tokens, log_p in group]
        return sorted(out, key=lambda c: -c[3])  # stable: ties keep their order
    return (scored(finished, 1) + scored(live, 0))[:k]


def write(entries, name, net, eos_bias):
    net.eval()
    with torch.no_grad():
        net.decoder.dense.bias[EOS] += eos_bias
    for i, (key, t) in enumerate(net.state_dict().items()):
        entries[f"{name}.param.{i:02d}.{key}"] = t.detach().numpy()
    entries[f"{name}.src"] = np.array(SRC, dtype=np.int64)
    entries[f"{name}.src_valid_len"] = np.array(SRC_VALID, dtype=np.int64)
    with torch.no_grad():
        for k in (1, 3, 10):
            B = len(SRC)
            tokens = -np.ones((B, k, STEPS), dtype=np.int64)
            finished = np.zeros((B, k), dtype=np.int64)
            log_prob, score = np.full((B, k), np.nan), np.full((B, k), np.nan)
            for b in range(B):
                src, valid = torch.tensor([SRC[b]]), torch.tensor([SRC_VALID[b]])
                for j, (out, done, lp, s) in enumerate(beam_search(net, src, valid, k)):
                    tokens[b, j, :len(out)] = out
                    finished[b, j], log_prob[b, j], score[b, j] = done, lp, s
            entries.update({f"{name}.k{k}.tokens": tokens, f"{name}.k{k}.finished": finished,
                            f"{name}.k{k}.log_prob": log_prob, f"{name}.k{k}.score": score})
            print(f"{name} K={k}: finished {int(finished.sum())} of "
                  f"{int(np.isfinite(score).sum())} candidates; best scores {score[:, 0]}")


def main():
    torch.set_default_dtype(torch.float64)
    entries = {}
    torch.manual_seed(31)
    seq2seq = bahdanau_torch.make_bidirectional(11, 12, 8, 8, 2)
    seq2seq.apply(d2l.init_seq2seq)
    write(entries, "bidirectional", seq2seq, eos_bias=0.0)
    torch.manual_seed(32)
    transformer = d2l.EncoderDecoder(d2l.TransformerEncoder(11, 8, 16, 2, 2, 0.0),
                                     d2l.TransformerDecoder(12, 8, 16, 2, 2, 0.0))
    write(entries, "transformer", transformer, eos_bias=0.5)
    path = os.path.join(OUT, "beam_search.npz")
    np.savez_compressed(path, **entries)
    print(f"{path}: {len(entries)} entries, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
