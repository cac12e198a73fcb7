#!/usr/bin/python3
"""PyTorch's numbers for the exercises' graders (tutorials/exercises/).

Run with /usr/bin/python3 (Debian's python3-torch and numpy live there):

    /usr/bin/python3 scripts/make_exercise_fixtures.py

Writes tutorials/exercises/fixtures.npz: for exercise N, its inputs
(exN.<name>) and what PyTorch computes from them (exN.<name>), each grader's
"PyTorch's numbers" check. Seeded, so the file is reproducible; CI reads the
committed file and never needs torch.
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "tutorials", "exercises", "fixtures.npz"))
rng = np.random.default_rng(68)


def uniform(*shape):
    return torch.tensor(rng.uniform(-2.0, 2.0, size=shape), dtype=torch.float64)


def leaf(*shape):
    return uniform(*shape).requires_grad_()


def d2l_masked_softmax(X, valid_lens):
    """d2l's masked_softmax (PyTorch edition), as the book writes it."""
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1]).clone()
    mask = torch.arange(shape[-1])[None, :] < valid_lens[:, None]
    X[~mask] = -1e6
    return F.softmax(X.reshape(shape), dim=-1)


def main():
    out = {}

    # 1. a * b, broadcast: a [2, 1, 4], b [3, 1].
    a, b = leaf(2, 1, 4), leaf(3, 1)
    dc = uniform(2, 3, 4)
    (a * b).backward(dc)
    out.update({"ex1.a": a, "ex1.b": b, "ex1.dc": dc, "ex1.da": a.grad, "ex1.db": b.grad})

    # 2. softmax of large scores.
    x = torch.tensor([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 700.0]], dtype=torch.float64)
    out.update({"ex2.x": x, "ex2.y": F.softmax(x, dim=-1)})

    # 3. d2l's two demonstrations.
    X = uniform(2, 2, 4)
    lens1, lens2 = torch.tensor([2, 3]), torch.tensor([[1, 3], [2, 4]])
    out.update({"ex3.X": X, "ex3.lens1": lens1, "ex3.y1": d2l_masked_softmax(X, lens1),
                "ex3.lens2": lens2, "ex3.y2": d2l_masked_softmax(X, lens2)})

    # 4. the softmax's backward.
    x4 = leaf(3, 5)
    y4 = F.softmax(x4, dim=-1)
    dy4 = uniform(3, 5)
    y4.backward(dy4)
    out.update({"ex4.y": y4, "ex4.dy": dy4, "ex4.dx": x4.grad})

    # 5. bmm's backward.
    a5, b5 = leaf(2, 3, 4), leaf(2, 4, 5)
    dc5 = uniform(2, 3, 5)
    torch.bmm(a5, b5).backward(dc5)
    out.update({"ex5.a": a5, "ex5.b": b5, "ex5.dc": dc5, "ex5.da": a5.grad, "ex5.db": b5.grad})

    # 6. additive scores, forward and backward.
    q, k, w = leaf(2, 3, 4), leaf(2, 5, 4), leaf(4)
    ds = uniform(2, 3, 5)
    scores = (w * torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))).sum(-1)
    scores.backward(ds)
    out.update({"ex6.q": q, "ex6.k": k, "ex6.w": w, "ex6.ds": ds, "ex6.scores": scores,
                "ex6.dq": q.grad, "ex6.dk": k.grad, "ex6.dw": w.grad})

    # 7. scaled dot-product attention, lengths per row and causal, as one
    # boolean keep mask (Debian's torch 1.13 has no F.scaled_dot_product_attention:
    # its formula, in torch's ops).
    q7, k7, v7 = uniform(2, 4, 4), uniform(2, 4, 4), uniform(2, 4, 3)
    lens7 = torch.tensor([[1, 2, 2, 4], [4, 4, 1, 3]])
    keep = torch.arange(4)[None, None, :] < lens7[:, :, None]
    keep &= torch.ones(4, 4, dtype=torch.bool).tril()
    out.update({"ex7.q": q7, "ex7.k": k7, "ex7.v": v7, "ex7.lens": lens7,
                "ex7.out": F.softmax((q7 @ k7.transpose(1, 2) / 2.0).masked_fill(~keep, -1e6),
                                     dim=-1) @ v7})

    # 8. d2l's transpose_qkv, 4 heads.
    X8 = uniform(2, 3, 8)
    split = X8.reshape(2, 3, 4, -1).permute(0, 2, 1, 3).reshape(-1, 3, 2)
    out.update({"ex8.X": X8, "ex8.split": split})

    # 9. torch.nn.GRUCell, PyTorch's gates.
    cell = torch.nn.GRUCell(3, 4).double()
    with torch.no_grad():
        for p in cell.parameters():
            p.copy_(uniform(*p.shape))
    x9, h9 = uniform(2, 3), uniform(2, 4)
    out.update({"ex9.x": x9, "ex9.h": h9, "ex9.w_ih": cell.weight_ih, "ex9.w_hh": cell.weight_hh,
                "ex9.b_ih": cell.bias_ih, "ex9.b_hh": cell.bias_hh, "ex9.h_next": cell(x9, h9)})

    # 10. a beam step: the 4 best of 3 beams x 6 tokens, by torch.topk.
    s10 = uniform(3)
    p10 = F.log_softmax(uniform(3, 6), dim=-1)
    best = torch.topk((s10[:, None] + p10).reshape(-1), 4)
    out.update({"ex10.beam_log_probs": s10, "ex10.next_log_probs": p10,
                "ex10.log_probs": best.values, "ex10.beams": best.indices // 6,
                "ex10.tokens": best.indices % 6})

    np.savez(OUT, **{name: t.detach().numpy() for name, t in out.items()})
    print(f"make_exercise_fixtures.py: {len(out)} arrays in {OUT}")


if __name__ == "__main__":
    torch.manual_seed(68)
    main()
