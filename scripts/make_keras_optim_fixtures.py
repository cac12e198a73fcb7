#!/usr/bin/python3
"""Writes the PyTorch reference fixtures of tests/test_keras.cpp,
tests/test_optim.cpp and tests/test_state_dict.cpp (seeded, so reruns give
the same files):

  tests/fixtures/keras_attention.npz   Keras' Attention ("dot", "concat") and
      AdditiveAttention, their math written out in float64 PyTorch (there is
      no TensorFlow here): outputs, attention weights and gradients w.r.t.
      query, key, value and the parameters, for every mask case.
  tests/fixtures/optim_steps.npz        torch.optim.SGD (with and without
      momentum) and torch.optim.Adam (default and custom betas/eps): the
      parameters of a small linear model after each of 5 steps, float64.
  tests/fixtures/state_dict_d2l_additive.npz, state_dict_d2l_mha.npz,
  state_dict_d2l_mha_bias.npz      numpy.savez of d2l modules' state_dict()s.
  tests/fixtures/state_dict_d2l_io.npz  their inputs, outputs and weights.

Run with /usr/bin/python3 (the python with torch + numpy):
  /usr/bin/python3 scripts/make_keras_optim_fixtures.py
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import d2l_torch  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def np64(t):
    return t.detach().to(torch.float64).numpy()


# ---- Keras' attention layers, written out ------------------------------------
# Keras (keras/src/layers/attention/attention.py and additive_attention.py):
#   scores = _calculate_scores(query, key)
#   scores_mask = value_mask[:, None, :] and causal (row i >= column j)
#   scores -= 1e9 * cast(not scores_mask)
#   weights = softmax(scores); result = weights @ value
#   result *= cast(query_mask[..., None])

def additive_scores(scale):
    def scores(q, k):
        features = torch.tanh(q[:, :, None, :] + k[:, None, :, :])
        return torch.sum((scale if scale is not None else 1.0) * features, dim=-1)
    return scores


def dot_scores(scale):
    def scores(q, k):
        s = q @ k.transpose(1, 2)
        return s * scale if scale is not None else s
    return scores


def concat_scores(scale, weight):
    def scores(q, k):
        features = q[:, :, None, :] + k[:, None, :, :]
        if scale is not None:
            features = scale * features
        return weight * torch.sum(torch.tanh(features), dim=-1)
    return scores


def keras_attention(score_fn, q, v, k=None, query_mask=None, value_mask=None, causal=False):
    k = v if k is None else k
    scores = score_fn(q, k)
    keep = None
    if value_mask is not None:
        keep = value_mask[:, None, :]
    if causal:
        Tq, Tv = scores.shape[-2:]
        rows = torch.cumsum(torch.ones(1, Tq, Tv, dtype=torch.int32), dim=-2)
        cols = torch.cumsum(torch.ones(1, Tq, Tv, dtype=torch.int32), dim=-1)
        c = rows >= cols
        keep = c if keep is None else keep & c
    if keep is not None:
        scores = scores - 1e9 * (~keep).to(scores.dtype)
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    if query_mask is not None:
        out = out * query_mask[..., None].to(out.dtype)
    return out, weights


# name -> (key given, query mask, value mask, use_causal_mask, use_scale)
KERAS_CASES = {
    "plain": (True, False, False, False, True),
    "query_mask": (True, True, False, False, True),
    "value_mask": (True, False, True, False, True),
    "both_masks": (True, True, True, False, True),
    "causal": (True, False, False, True, True),
    "causal_value_mask": (True, True, True, True, True),
    "no_key": (False, False, False, False, True),
    "no_scale": (True, True, True, False, False),
}


def make_keras():
    torch.manual_seed(0)
    B, Tq, Tv, d = 2, 3, 4, 4
    f = {}
    q = torch.randn(B, Tq, d, dtype=torch.float64)
    k = torch.randn(B, Tv, d, dtype=torch.float64)
    v = torch.randn(B, Tv, d, dtype=torch.float64)
    g = torch.randn(B, Tq, d, dtype=torch.float64)  # dL/doutput: L = sum(output * g)
    query_mask = torch.tensor([[True, False, True], [True, True, False]])
    # Key 0 is kept in both rows, so no row is fully masked, even with causal.
    value_mask = torch.tensor([[True, True, True, False], [True, False, True, False]])
    limit = (3.0 / d) ** 0.5  # Keras' glorot_uniform on [dim]
    params = {
        "additive_scale": (torch.rand(d, dtype=torch.float64) * 2 - 1) * limit,
        "dot_scale": torch.tensor(0.75, dtype=torch.float64),
        "concat_scale": torch.tensor(0.6, dtype=torch.float64),
        "concat_concat_score_weight": torch.tensor(1.3, dtype=torch.float64),
    }
    f.update(q=q, k=k, v=v, g=g, query_mask=query_mask, value_mask=value_mask)
    f.update(params)
    for case, (has_key, has_qm, has_vm, causal, use_scale) in KERAS_CASES.items():
        for layer in ("additive", "dot", "concat"):
            qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
            leaves = {}
            scale = None
            if use_scale:
                scale = params[layer + "_scale"].clone().requires_grad_()
                leaves["scale"] = scale
            if layer == "additive":
                fn = additive_scores(scale)
            elif layer == "dot":
                fn = dot_scores(scale)
            else:
                weight = params["concat_concat_score_weight"].clone().requires_grad_()
                leaves["concat_score_weight"] = weight
                fn = concat_scores(scale, weight)
            out, weights = keras_attention(fn, qq, vv, kk if has_key else None,
                                           query_mask if has_qm else None,
                                           value_mask if has_vm else None, causal)
            (out * g).sum().backward()
            prefix = f"{layer}_{case}_"
            f[prefix + "out"] = out
            f[prefix + "weights"] = weights
            f[prefix + "dq"] = qq.grad
            f[prefix + "dv"] = vv.grad
            if has_key:
                f[prefix + "dk"] = kk.grad
            for name, leaf in leaves.items():
                f[prefix + "d" + name] = leaf.grad
    np.savez_compressed(os.path.join(OUT, "keras_attention.npz"),
                        **{n: (t.numpy() if t.dtype == torch.bool else np64(t)) for n, t in f.items()})


# ---- optimizers ------------------------------------------------------------------
# Model: y = x W^T + b, loss_t = mse(y, target) (+ 0.5 sum(c^2) on even steps t,
# so `c` has no gradient on odd steps and must be skipped there).
OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adam_custom": lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.5, 0.9), eps=1e-3),
}
OPTIM_STEPS = 5


def make_optim():
    torch.manual_seed(1)
    f = {}
    x = torch.randn(6, 4, dtype=torch.float64)
    target = torch.randn(6, 3, dtype=torch.float64)
    W0 = torch.randn(3, 4, dtype=torch.float64)
    b0 = torch.randn(3, dtype=torch.float64)
    c0 = torch.randn(2, dtype=torch.float64)
    f.update(x=x, target=target, W=W0, b=b0, c=c0)
    for name, make in OPTIMIZERS.items():
        W, b, c = (t.clone().requires_grad_() for t in (W0, b0, c0))
        opt = make([W, b, c])
        for t in range(OPTIM_STEPS):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(torch.nn.functional.linear(x, W, b), target)
            if t % 2 == 0:
                loss = loss + 0.5 * (c * c).sum()
            loss.backward()
            opt.step()
            for pname, p in (("W", W), ("b", b), ("c", c)):
                f[f"{name}_step{t}_{pname}"] = p.detach().clone()
    np.savez_compressed(os.path.join(OUT, "optim_steps.npz"), **{n: np64(t) for n, t in f.items()})


# ---- d2l state dicts -------------------------------------------------------------------

def make_state_dicts():
    torch.manual_seed(2)
    io = {}
    # d2l's toy additive example: queries [2, 1, 20], keys [2, 10, 2], values [2, 10, 4].
    queries = torch.normal(0, 1, (2, 1, 20))
    keys = torch.ones((2, 10, 2))
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6])
    additive = d2l_torch.AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    additive.eval()
    # Random keys too (d2l's all-ones keys give uniform weights, a weak check).
    keys = keys + torch.normal(0, 1, keys.shape)
    out = additive(queries, keys, values, valid_lens)
    io.update(additive_queries=queries, additive_keys=keys, additive_values=values,
              additive_valid_lens=valid_lens, additive_out=out,
              additive_weights=additive.attention_weights)
    np.savez(os.path.join(OUT, "state_dict_d2l_additive.npz"),
             **{n: t.numpy() for n, t in additive.state_dict().items()})

    # d2l's multi-head example at a smaller width: X [2, 4, 16], Y [2, 6, 16], valid_lens [3, 2].
    X = torch.randn(2, 4, 16)
    Y = torch.randn(2, 6, 16)
    mha_lens = torch.tensor([3, 2])
    io.update(mha_X=X, mha_Y=Y, mha_valid_lens=mha_lens)
    for name, bias in (("mha", False), ("mha_bias", True)):
        mha = d2l_torch.MultiHeadAttention(16, 16, 16, 16, num_heads=4, dropout=0.5, bias=bias)
        mha.eval()
        out = mha(X, Y, Y, mha_lens)
        io[name + "_out"] = out
        io[name + "_weights"] = mha.attention.attention_weights.reshape(2, 4, 4, 6)
        np.savez(os.path.join(OUT, f"state_dict_d2l_{name}.npz"),
                 **{n: t.numpy() for n, t in mha.state_dict().items()})
    np.savez(os.path.join(OUT, "state_dict_d2l_io.npz"), **{n: t.detach().numpy() for n, t in io.items()})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    make_keras()
    make_optim()
    make_state_dicts()
    for name in sorted(os.listdir(OUT)):
        if name.startswith(("keras_", "optim_", "state_dict_")):
            print(f"{name}: {os.path.getsize(os.path.join(OUT, name))} bytes")
