#!/usr/bin/python3
"""PyTorch reference fixtures for attograd's attention code (tests/test_nn_parity.cpp).

Run with /usr/bin/python3 (Debian's python3-torch and numpy live there; the
`python3` first on PATH may lack them):

    /usr/bin/python3 scripts/make_nn_fixtures.py

Everything is float64 and seeded, so the files are reproducible. The reference
is d2l's own PyTorch code ("Attention Scoring Functions", "Multi-Head
Attention"), extended the way attograd extends it: an optional attn_mask
(bool keep mask or float additive mask) combined with valid_lens. For
scaled_dot_product_attention the reference is the math that PyTorch 2's
documentation gives for F.scaled_dot_product_attention (the installed torch
1.13 predates that function).

Writes tests/fixtures/nn_<name>.npz. Entry names:
    queries, keys, values            inputs
    W_q.weight, ...                  parameters, named as attograd's state dicts
    <case>.valid_lens, <case>.mask   the masks of a case (when it has them)
    <case>.output, <case>.weights    results (weights after softmax, before dropout)
    <case>.w                         fixed random weights: the loss is sum(output * w)
    <case>.grad.<input or parameter> d loss / d that tensor
"""
import math
import os

import numpy as np
import torch
from torch import nn

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


# ---- d2l's reference code (PyTorch), with an optional attn_mask --------------------------
def sequence_mask(X, valid_len, value=0):
    maxlen = X.size(1)
    mask = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens, attn_mask=None):
    """d2l's masked_softmax; attn_mask (bool keep or float additive) is attograd's extension."""
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        X = X + attn_mask  # additive: added to the scores
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        X = X.masked_fill(~attn_mask, -1e6)  # bool keep: masked like d2l's padding
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None, attn_mask=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens, attn_mask)
        return torch.bmm(self.dropout(self.attention_weights), values)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None, attn_mask=None):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens, attn_mask)
        return torch.bmm(self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, key_size, query_size, value_size, num_hiddens, num_heads, dropout,
                 bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens=None, attn_mask=None):
        queries = transpose_qkv(self.W_q(queries), self.num_heads)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)
        values = transpose_qkv(self.W_v(values), self.num_heads)
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        if attn_mask is not None:
            # attograd's rule: a 3-D mask is [B, Tq, Tk], shared by the heads.
            B, Tq, Tk = queries.shape[0] // self.num_heads, queries.shape[1], keys.shape[1]
            m = attn_mask.unsqueeze(1) if attn_mask.dim() == 3 else attn_mask
            attn_mask = m.expand(B, self.num_heads, Tq, Tk).reshape(-1, Tq, Tk)
        output = self.attention(queries, keys, values, valid_lens, attn_mask)
        self.attention_weights = self.attention.attention_weights.reshape(
            -1, self.num_heads, *self.attention.attention_weights.shape[1:])
        return self.W_o(transpose_output(output, self.num_heads))


# ---- PyTorch 2's scaled_dot_product_attention, as its documentation writes it ------------
def sdpa(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype)
    if is_causal:
        assert attn_mask is None
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    return attn_weight @ value, attn_weight


# ---- helpers ------------------------------------------------------------------------------
def np64(t):
    return t.detach().numpy().astype(np.float64) if t.is_floating_point() else t.numpy()


def record_case(entries, name, run, inputs, params, masks):
    """Runs `run()` -> (output, weights), stores them and d sum(output * w) / d everything."""
    for t in list(inputs.values()) + list(params.values()):
        t.grad = None
    output, weights = run()
    w = torch.rand(output.shape) + 0.5
    (output * w).sum().backward()
    entries[f"{name}.output"] = np64(output)
    entries[f"{name}.weights"] = np64(weights)
    entries[f"{name}.w"] = np64(w)
    for key, value in masks.items():
        entries[f"{name}.{key}"] = np64(value)
    for key, t in list(inputs.items()) + list(params.items()):
        entries[f"{name}.grad.{key}"] = np64(t.grad)


def save(file, entries):
    path = os.path.join(OUT, file)
    np.savez_compressed(path, **entries)
    print(f"{file}: {len(entries)} entries, {os.path.getsize(path)} bytes")


def qkv(B, Tq, Tk, dq, dk, dv):
    inputs = {"queries": torch.randn(B, Tq, dq), "keys": torch.randn(B, Tk, dk),
              "values": torch.randn(B, Tk, dv)}
    for t in inputs.values():
        t.requires_grad_()
    return inputs


def mask_cases(B, Tq, Tk):
    """Every mask kind, with rows that keep one key and rows that keep none."""
    lens1 = torch.tensor([1, Tk - 1])                                # one length per item
    lens2 = torch.tensor([[1, 0, Tk][:Tq], [2, Tk, 0][:Tq]])         # one per row; 0 = none
    keep = torch.rand(B, Tq, Tk) > 0.4
    keep[0, 0] = False                                               # a fully masked row
    keep[1, 0] = False
    keep[1, 0, 2] = True                                             # a single kept key
    additive = torch.zeros(B, Tq, Tk)
    additive[torch.rand(B, Tq, Tk) > 0.6] = -1e9
    additive[..., 0] = 0  # no row all -1e9: float32 and float64 disagree there (see functional.h)
    additive[0, 1] = torch.randn(Tk) * 0.5                           # a small learned-style bias
    causal = torch.ones(Tq, Tk, dtype=torch.bool).tril()
    return {
        "none": {},
        "lens1": {"valid_lens": lens1},
        "lens2": {"valid_lens": lens2},
        "bool": {"mask": keep},
        "additive": {"mask": additive},
        "causal": {"mask": causal},
        "lens_and_bool": {"valid_lens": lens1, "mask": keep},
    }


def module_fixture(file, module, inputs):
    entries = {k: np64(v) for k, v in inputs.items()}
    params = dict(module.named_parameters())
    for k, v in params.items():
        entries[k] = np64(v)
    B, Tq, Tk = inputs["queries"].shape[0], inputs["queries"].shape[1], inputs["keys"].shape[1]
    for name, masks in mask_cases(B, Tq, Tk).items():
        def run():
            out = module(inputs["queries"], inputs["keys"], inputs["values"],
                         masks.get("valid_lens"), masks.get("mask"))
            return out, module.attention_weights
        record_case(entries, name, run, inputs, params, masks)
    if isinstance(module, MultiHeadAttention):  # a per-head mask [B, H, Tq, Tk]
        head_keep = torch.rand(B, module.num_heads, Tq, Tk) > 0.3
        head_keep[..., 0] = True
        def run():
            out = module(inputs["queries"], inputs["keys"], inputs["values"], None, head_keep)
            return out, module.attention_weights
        record_case(entries, "head_bool", run, inputs, params, {"mask": head_keep})
    save(file, entries)


def main():
    torch.manual_seed(2024)
    os.makedirs(OUT, exist_ok=True)

    # masked_softmax on d2l's demonstration shapes, plus a row of length 0.
    entries = {}
    X = torch.rand(2, 2, 4, requires_grad=True)
    entries["X"] = np64(X)
    for name, lens in [("none", None), ("lens1", torch.tensor([2, 3])),
                       ("lens2", torch.tensor([[1, 3], [2, 4]])),
                       ("lens_zero", torch.tensor([[0, 3], [4, 0]]))]:
        X.grad = None
        out = masked_softmax(X.clone(), lens)  # d2l writes into its input
        w = torch.rand(out.shape) + 0.5
        (out * w).sum().backward()
        entries[f"{name}.output"] = np64(out)
        entries[f"{name}.w"] = np64(w)
        entries[f"{name}.grad.X"] = np64(X.grad)
        if lens is not None:
            entries[f"{name}.valid_lens"] = lens.numpy()
    save("nn_masked_softmax.npz", entries)

    module_fixture("nn_dot.npz", DotProductAttention(0.0).eval(), qkv(2, 3, 5, 4, 4, 3))
    # key_size != query_size
    module_fixture("nn_additive.npz", AdditiveAttention(3, 5, 6, 0.0).eval(), qkv(2, 3, 5, 5, 3, 2))
    module_fixture("nn_mha.npz", MultiHeadAttention(5, 4, 3, 8, 2, 0.0).eval(),
                   qkv(2, 3, 5, 4, 5, 3))
    module_fixture("nn_mha_bias.npz", MultiHeadAttention(5, 4, 3, 8, 2, 0.0, bias=True).eval(),
                   qkv(2, 3, 5, 4, 5, 3))

    # scaled_dot_product_attention with heads as a batch dim: [B, H, L, E].
    inputs = {"queries": torch.randn(2, 2, 3, 4), "keys": torch.randn(2, 2, 5, 4),
              "values": torch.randn(2, 2, 5, 3)}
    for t in inputs.values():
        t.requires_grad_()
    entries = {k: np64(v) for k, v in inputs.items()}
    keep = torch.rand(2, 1, 3, 5) > 0.4
    keep[..., 0] = True  # PyTorch would give NaN for a fully masked row
    additive = torch.randn(3, 5) * 0.5
    additive[torch.rand(3, 5) > 0.6] = -1e9
    additive[:, 0] = 0
    cases = {
        "none": ({}, dict()),
        "bool": ({"mask": keep}, dict(attn_mask=keep)),
        "additive": ({"mask": additive}, dict(attn_mask=additive)),
        "causal": ({}, dict(is_causal=True)),
        "scale": ({}, dict(scale=0.3)),
        "bool_scale": ({"mask": keep}, dict(attn_mask=keep, scale=1.7)),
    }
    for name, (masks, kwargs) in cases.items():
        def run():
            return sdpa(inputs["queries"], inputs["keys"], inputs["values"], **kwargs)
        record_case(entries, name, run, inputs, {}, masks)
    save("nn_sdpa.npz", entries)


if __name__ == "__main__":
    main()
