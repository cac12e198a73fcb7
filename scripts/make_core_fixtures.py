#!/usr/bin/python3
"""PyTorch reference fixtures for attograd's core ops (tests/test_torch_parity.cpp).

Run with /usr/bin/python3 (Debian's python3-torch and numpy live there; the
`python3` first on PATH may lack them):

    /usr/bin/python3 scripts/make_core_fixtures.py

Each case is one expression of a few small float64 inputs (plus int64 or bool
ones: targets, masks). Everything is seeded, so the file is reproducible; CI
only reads the committed tests/fixtures/core.npz and never needs torch.

Entry names, for a case <case>:
    <case>.x0, <case>.x1, ...   inputs, in the order the expression takes them
    <case>.output               the expression's value
    <case>.w                    fixed random weights: the loss is sum(output * w)
    <case>.grad.x<i>            d loss / d x<i>, for every floating-point input

The C++ test has the same expression for every case name; keep them in step.
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "core.npz"))

rng = np.random.default_rng(20240601)


def uniform(*shape, low=-1.0, high=1.0):
    return torch.tensor(rng.uniform(low, high, size=shape), dtype=torch.float64)


def away_from_zero(*shape):
    """Values in +-[0.2, 1]: no input sits on relu's kink."""
    sign = rng.choice([-1.0, 1.0], size=shape)
    return torch.tensor(sign * rng.uniform(0.2, 1.0, size=shape), dtype=torch.float64)


def bools(*shape):
    return torch.tensor(rng.random(size=shape) < 0.5)


def int64(values):
    return torch.tensor(values, dtype=torch.int64)


# name -> (inputs, expression). The C++ test mirrors every expression.
CASES = {
    # ---- elementwise, with broadcasting -------------------------------------------------
    "broadcast_arith": (
        [uniform(2, 3, 1), uniform(3, 4), uniform(4)],
        lambda a, b, c: ((a + b) * c) / (c * c + 1.0) - a * 2.0,
    ),
    "exp": ([uniform(3, 4)], lambda x: torch.exp(x)),
    "log": ([uniform(3, 4, low=0.5, high=2.0)], lambda x: torch.log(x)),
    "tanh": ([uniform(3, 4, low=-2.0, high=2.0)], lambda x: torch.tanh(x)),
    "sigmoid": ([uniform(3, 4, low=-3.0, high=3.0)], lambda x: torch.sigmoid(x)),
    "relu": ([away_from_zero(3, 4)], lambda x: torch.relu(x)),
    "sqrt": ([uniform(3, 4, low=0.5, high=2.0)], lambda x: torch.sqrt(x)),
    "pow_scalar": ([uniform(3, 4, low=0.5, high=2.0)], lambda x: torch.pow(x, 2.5)),
    "pow_tensor": (
        [uniform(3, 4, low=0.5, high=2.0), uniform(4, low=-1.5, high=1.5)],
        lambda x, y: torch.pow(x, y),
    ),
    "unary_chain": (
        [uniform(2, 5, low=0.5, high=1.5)],
        lambda x: torch.sqrt(torch.exp(torch.tanh(x)) + torch.log(x) * torch.sigmoid(x)),
    ),
    # ---- reductions -------------------------------------------------------------------------
    "sum_dim_keepdim": ([uniform(2, 3, 4)], lambda x: torch.sum(x, 1, keepdim=True) * x),
    "sum_all": ([uniform(2, 3, 4)], lambda x: torch.sum(x * x)),
    "mean_dim": ([uniform(2, 3, 4)], lambda x: torch.mean(x, 0)),
    "mean_all": ([uniform(2, 3, 4)], lambda x: torch.mean(torch.exp(x))),
    "max_dim": ([uniform(2, 3, 4)], lambda x: torch.max(x, -1).values),
    "max_all": ([uniform(3, 4)], lambda x: torch.max(x) * x),
    # ---- softmax ------------------------------------------------------------------------------
    "softmax_dim0": ([uniform(2, 3, 4, low=-3, high=3)], lambda x: torch.softmax(x, 0)),
    "softmax_dim1": ([uniform(2, 3, 4, low=-3, high=3)], lambda x: torch.softmax(x, 1)),
    "softmax_last": ([uniform(2, 3, 4, low=-3, high=3)], lambda x: torch.softmax(x, -1)),
    "log_softmax_dim1": ([uniform(2, 3, 4, low=-3, high=3)], lambda x: torch.log_softmax(x, 1)),
    "log_softmax_last": ([uniform(2, 3, 4, low=-3, high=3)], lambda x: torch.log_softmax(x, -1)),
    "masked_fill_softmax": (
        [uniform(2, 3, 4), torch.tensor([[False, False, True, True], [False, True, False, True],
                                         [True, False, False, False]])],
        lambda x, mask: torch.softmax(x.masked_fill(mask, -1e6), -1),
    ),
    # ---- matmul family -----------------------------------------------------------------------
    "mm": ([uniform(3, 4), uniform(4, 5)], lambda a, b: torch.mm(a, b)),
    "matmul_batched_broadcast": (
        [uniform(2, 1, 3, 4), uniform(5, 4, 2)],
        lambda a, b: torch.matmul(a, b),
    ),
    "matmul_shared_weight": ([uniform(3, 2, 4), uniform(4, 5)], lambda a, b: torch.matmul(a, b)),
    "matmul_vector_batch": ([uniform(4), uniform(3, 4, 2)], lambda a, b: torch.matmul(a, b)),
    "matmul_dot": ([uniform(5), uniform(5)], lambda a, b: torch.matmul(a, b)),
    "bmm_transposed": (
        [uniform(2, 3, 4), uniform(2, 5, 4)],
        lambda q, k: torch.bmm(q, k.transpose(1, 2)),
    ),
    "linear": (
        [uniform(2, 3, 4), uniform(5, 4), uniform(5)],
        lambda x, w, b: F.linear(x, w, b),
    ),
    "linear_vector_no_bias": ([uniform(4), uniform(3, 4)], lambda x, w: F.linear(x, w)),
    # ---- selecting, joining, repeating -------------------------------------------------------
    "where": (
        [bools(3, 4), uniform(3, 4), uniform(4)],
        lambda cond, a, b: torch.where(cond, a, b),
    ),
    "cat_stack": (
        [uniform(2, 3), uniform(2, 2), uniform(2, 5)],
        lambda a, b, c: torch.stack([torch.cat([a, b], 1), c * 2.0], 0),
    ),
    "repeat_interleave": ([uniform(2, 3)], lambda x: torch.repeat_interleave(x, 2, dim=1)),
    "repeat_interleave_tensor": (
        [uniform(3, 2), int64([1, 0, 3])],
        lambda x, r: torch.repeat_interleave(x, r, dim=0),
    ),
    # ---- views --------------------------------------------------------------------------------
    "view_chain": (
        [uniform(2, 3, 4)],
        lambda x: x.transpose(0, 2).reshape(4, 6).permute(1, 0).unsqueeze(0) * 3.0,
    ),
    "view_chain_broadcast": (
        [uniform(3, 1, 4), uniform(4, 1, 2)],
        lambda x, y: x.expand(3, 2, 4).permute(2, 0, 1).reshape(4, 6).transpose(0, 1)
        @ y.squeeze(1),
    ),
    # ---- losses -------------------------------------------------------------------------------
    "mse_loss": ([uniform(3, 4), uniform(3, 4)], lambda a, b: F.mse_loss(a, b)),
    "cross_entropy": (
        [uniform(5, 4, low=-2, high=2), int64([0, 3, 1, 1, 2])],
        lambda logits, t: F.cross_entropy(logits, t),
    ),
}


def main():
    arrays = {}
    for name, (inputs, fn) in CASES.items():
        leaves = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
        out = fn(*leaves)
        w = uniform(*out.shape, low=0.5, high=1.5)
        (out * w).sum().backward()
        for i, leaf in enumerate(leaves):
            arrays[f"{name}.x{i}"] = leaf.detach().numpy()
            if leaf.is_floating_point():
                arrays[f"{name}.grad.x{i}"] = leaf.grad.numpy()
        arrays[f"{name}.output"] = out.detach().numpy()
        arrays[f"{name}.w"] = w.numpy()
    # C order: a view's .numpy() may be Fortran-ordered, which load_npz rejects.
    np.savez_compressed(OUT, **{k: np.array(v, order="C") for k, v in arrays.items()})
    print(f"wrote {len(CASES)} cases ({len(arrays)} arrays, {os.path.getsize(OUT)} bytes) to {OUT}")


if __name__ == "__main__":
    main()
