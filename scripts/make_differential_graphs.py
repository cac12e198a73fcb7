#!/usr/bin/python3
"""Random computation graphs, run by PyTorch, for differential testing (issue 25).

Run with /usr/bin/python3 (Debian's python3-torch 1.13 and numpy live there):

    /usr/bin/python3 scripts/make_differential_graphs.py                  # the committed set
    /usr/bin/python3 scripts/make_differential_graphs.py --count 20000 --seed 7 --out /tmp/g
    /usr/bin/python3 scripts/make_differential_graphs.py --count 400 --wide 0.25 --out /tmp/w
    ATTOGRAD_DIFFERENTIAL_DIR=/tmp/g build/attograd_tests --gtest_filter='Differential.*'    # runs those instead

tests/test_differential.cpp rebuilds every graph with attograd and compares
every node's forward value and every input's gradient with PyTorch's. The
committed set is tests/fixtures/differential_{0,1,2}.npz: the defaults below
(--count 3000 --seed 25), small sizes only (--wide 0: the sizes of matmul and
attention stay in 1..4, so the files stay small; --wide makes some of them
large enough for the kernels' blocked paths and flash attention's key blocks).

What a graph is
---------------
1 to 12 ops ("nodes") drawn from OPS below, over leaves (random inputs: float
tensors that require grad, bool keep masks, int64 lengths and indices). An op
takes its inputs from earlier nodes (mostly the newest unused one, so graphs
are deep) or from fresh leaves, with shapes that broadcast, views (transpose,
permute, expand, narrow, reshape, unsqueeze, squeeze) and masks of every kind
(valid lengths 1-D and per row, including 0; bool keep masks; additive float
masks with 0, biases, -1e9 and -inf; causal). A graph is float32 or float64
(`to` nodes may switch). The loss is sum over the float sinks k (nodes no
other node reads) of sum(w_k * sink_k), with the fixed weights
    w_k[i] = cos(0.37 i + 1.1 k + 0.5)    (i: row-major index)
computed in float64 and cast to the sink's dtype (the runner computes the
same). Stored: the inputs, PyTorch's value of every node, and the gradient of
the loss with respect to every float input.

Values stay where the ops are smooth, so that PyTorch and attograd may only
differ by rounding: relu/abs inputs are at least 0.05 away from 0, maximum's
operands 0.05 apart, max's winner 0.02 above the runner-up, log/sqrt/pow
bases >= 0.1, divisors |d| >= 0.2, exp inputs |x| <= 4, and a node whose
values leave [-1e4, 1e4] is rejected (the op is drawn again), as is a float64
attention row whose kept scores a -1e9 float mask shifts whole
(check_conditioning). float32 graphs are computed by PyTorch in float32, as
attograd computes them.

File format (one .npz per --per-file graphs; numpy.savez_compressed)
-------------------------------------------------------------------
    desc  int32 array: the character codes of the text below
    f32, f64, i64, b   flat pools of every stored value, by dtype
The text: one graph after another, one statement per line, tokens split by
spaces; a shape is "2,3" or "-" (0-d); an offset indexes the pool of the
tensor's dtype:
    graph <id>
    leaf <name> <dtype> <shape> <offset> <requires_grad 0|1>
    node <name> <dtype> <shape> <offset> <op> <arg>...   (PyTorch's value of the node)
    out <name>                                           (a float sink, k-th in order)
    grad <leaf> <offset>                                 (d loss / d leaf, the leaf's dtype/shape)
    end
Args are node/leaf names, integers, doubles (repr), lists "0,2,1", or "_" (none).

Adding an op
------------
When attograd gains a differentiable op, it gains a builder here (an @op
function: draw inputs with g.pick / g.leaf, compute PyTorch's value, return
the op's tokens) and a same-named entry in the runner's table
(tests/test_differential.cpp, kOps), then regenerate the committed files. The
ops not covered, and why, are listed in tests/README.md.
"""
import argparse
import math
import os
import random

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "fixtures")

DT = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64, "bool": torch.bool}
DT_NAME = {v: k for k, v in DT.items()}
OTHER_FLOAT = {"f32": "f64", "f64": "f32"}


class Reject(Exception):
    """The drawn op does not fit (shapes, or values near a kink): draw again."""


def shape_str(shape):
    return ",".join(str(s) for s in shape) if len(shape) else "-"


def num(x):
    return repr(float(x))


def lst(xs):
    return ",".join(str(int(x)) for x in xs) if len(xs) else "-"


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class Graph:
    def __init__(self, dtype, gid):
        self.dtype = dtype  # the graph's float dtype name
        self.gid = gid
        self.tensors = {}  # name -> torch tensor (leaves and nodes)
        self.kind = {}  # name -> "leaf" | "node"
        self.leaves = []
        self.nodes = []
        self.used = set()  # names some node reads
        self.n_leaves = 0
        self.node_tokens = {}  # node name -> [op, args...]

    # ---- leaves -----------------------------------------------------------------
    def leaf(self, shape, lo=-1.5, hi=1.5, dtype=None, grad=True, away=0.0, values=None):
        """A float leaf; |values| >= away when away > 0 (random signs)."""
        dtype = dtype or self.dtype
        if values is None:
            v = torch.empty(shape, dtype=torch.float64).uniform_(lo, hi)
            if away > 0:
                mag = torch.empty(shape, dtype=torch.float64).uniform_(away, hi)
                sign = torch.randint(0, 2, shape) * 2 - 1
                v = mag * sign
            values = v
        t = values.to(DT[dtype]).detach().clone()
        if grad:
            t.requires_grad_(True)
        return self._add_leaf(t, grad)

    def const(self, t):
        return self._add_leaf(t, False)

    def _add_leaf(self, t, grad):
        name = "x%d" % self.n_leaves
        self.n_leaves += 1
        self.tensors[name] = t
        self.kind[name] = "leaf"
        self.leaves.append((name, grad))
        return name

    def keep_mask(self, shape, p_keep=0.7, full_false_row=True):
        m = torch.rand(shape) < p_keep
        if full_false_row and len(shape) >= 1 and numel(shape) > 0 and random.random() < 0.3:
            idx = tuple(random.randrange(s) for s in shape[:-1])
            m[idx] = False
        return self.const(m)

    def lengths(self, shape, maxlen, allow_zero=True):
        lo = 0 if allow_zero else 1
        return self.const(torch.randint(lo, maxlen + 1, shape, dtype=torch.int64))

    # ---- picking inputs -----------------------------------------------------------
    def floats(self, dtype=None):
        dtype = dtype or self.dtype
        return [n for n in self.nodes if self.tensors[n].dtype == DT[dtype]]

    def pick(self, ok=lambda t: True, shape=None, dtype=None, fresh=None, p_existing=0.8):
        """An existing float node (the newest unused first) satisfying ok, else a fresh leaf."""
        dtype = dtype or self.dtype
        cands = [n for n in self.floats(dtype)
                 if (shape is None or tuple(self.tensors[n].shape) == tuple(shape))
                 and ok(self.tensors[n])]
        if cands and random.random() < p_existing:
            unused = [n for n in cands if n not in self.used]
            if unused and random.random() < 0.85:
                return unused[-1]
            return random.choice(cands)
        if fresh is not None:
            return fresh()
        if shape is None:
            shape = random_shape()
        return self.leaf(shape, dtype=dtype)

    def t(self, name):
        return self.tensors[name]

    # ---- recording ---------------------------------------------------------------
    def add_node(self, tokens, value):
        if value.dtype.is_floating_point:
            if not torch.isfinite(value).all() or (value.numel() and value.abs().max() > 1e4):
                raise Reject()
        name = "n%d" % len(self.nodes)
        for tok in tokens[1:]:
            if tok in self.tensors:
                self.used.add(tok)
        self.tensors[name] = value
        self.kind[name] = "node"
        self.nodes.append(name)
        self.node_tokens[name] = tokens
        return name


def random_shape(max_rank=4, max_numel=36):
    while True:
        rank = random.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        shape = [random.randint(1, 4) for _ in range(rank)]
        if numel(shape) <= max_numel:
            return shape


def broadcast_partner_shape(shape):
    """A shape that broadcasts with `shape` (to `shape`, or `shape` to a larger one)."""
    shape = list(shape)
    r = random.random()
    if r < 0.3:
        return shape
    if r < 0.55 and len(shape):  # drop leading dims
        return shape[random.randint(1, len(shape)):]
    if r < 0.85:  # some dims to 1
        return [1 if random.random() < 0.5 else s for s in shape]
    # the partner is bigger: a leading dim, or a 1 of ours becomes larger
    out = [1 if random.random() < 0.3 else s for s in shape]
    out = [random.randint(2, 3) if s == 1 and random.random() < 0.5 else s for s in out]
    if len(out) < 4 and random.random() < 0.5:
        out = [random.randint(1, 3)] + out
    return out


OPS = {}
WIDE = 0.0  # --wide: the chance that a matmul or attention size is large


def size(hi, keys=False):
    """A size in [1, hi]; with --wide, sometimes large enough for the kernels'
    blocked paths (keys: past flash attention's 512-key block)."""
    if WIDE > 0 and random.random() < WIDE:
        return random.randint(400, 700) if keys else random.randint(17, 90)
    return random.randint(1, hi)



def op(name, weight=1.0):
    def deco(fn):
        OPS[name] = (weight, fn)
        return fn
    return deco


def wdim(rank):
    """A dim in [-rank, rank), as attograd and PyTorch accept it."""
    return random.randint(-rank, rank - 1)


# ---- elementwise binary ------------------------------------------------------------------
def binary_operands(g, ok_b=lambda t: True, b_fresh=None):
    a = g.pick()
    sa = list(g.t(a).shape)
    sb = broadcast_partner_shape(sa)
    try:
        torch.broadcast_shapes(tuple(sa), tuple(sb))
    except RuntimeError:
        raise Reject()
    out = torch.broadcast_shapes(tuple(sa), tuple(sb))
    if numel(out) > 48:
        raise Reject()
    b = g.pick(ok=ok_b, shape=sb, fresh=(b_fresh and (lambda: b_fresh(sb))))
    swap = random.random() < 0.5  # drawn either way, so the stream of draws is fixed
    if swap and b_fresh is None:  # a fresh divisor or exponent stays second
        a, b = b, a
    return a, b


for _name, _fn in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul)]:
    def _make(name, fn):
        @op(name, 2.0)
        def _b(g):
            a, b = binary_operands(g)
            return [name, a, b], fn(g.t(a), g.t(b))
    _make(_name, _fn)


@op("div", 1.5)
def _div(g):
    a, b = binary_operands(g, ok_b=lambda t: t.numel() and t.abs().min() >= 0.2,
                           b_fresh=lambda s: g.leaf(s, hi=2.0, away=0.3))
    return ["div", a, b], g.t(a) / g.t(b)


@op("pow_t")
def _pow_t(g):
    a, b = binary_operands(g, ok_b=lambda t: False, b_fresh=lambda s: g.leaf(s, -1.5, 2.0))
    base = g.t(a)
    if base.numel() == 0 or base.min() < 0.1 or base.max() > 3:
        # a positive base made from the drawn one keeps the graph connected
        a = g.add_node(["sigmoid", a], torch.sigmoid(base))
        a = g.add_node(["add_s", a, num(0.2)], g.t(a) + 0.2)
    return ["pow_t", a, b], torch.pow(g.t(a), g.t(b))


@op("maximum")
def _maximum(g):
    a, b = binary_operands(g)
    ta, tb = torch.broadcast_tensors(g.t(a), g.t(b))
    if ta.numel() and (ta - tb).abs().min() < 0.05:
        raise Reject()
    return ["maximum", a, b], torch.maximum(g.t(a), g.t(b))


# ---- with a scalar ---------------------------------------------------------------------------
@op("add_s")
def _add_s(g):
    a, c = g.pick(), random.uniform(-2, 2)
    return ["add_s", a, num(c)], g.t(a) + c


@op("sub_s")
def _sub_s(g):
    a, c = g.pick(), random.uniform(-2, 2)
    return ["sub_s", a, num(c)], g.t(a) - c


@op("rsub_s")
def _rsub_s(g):
    a, c = g.pick(), random.uniform(-2, 2)
    return ["rsub_s", a, num(c)], c - g.t(a)


@op("mul_s")
def _mul_s(g):
    a, c = g.pick(), random.uniform(-2, 2)
    return ["mul_s", a, num(c)], g.t(a) * c


@op("div_s")
def _div_s(g):
    a, c = g.pick(), random.choice([-1, 1]) * random.uniform(0.3, 3)
    return ["div_s", a, num(c)], g.t(a) / c


@op("rdiv_s")
def _rdiv_s(g):
    a = g.pick(ok=lambda t: t.numel() and t.abs().min() >= 0.2,
               fresh=lambda: g.leaf(random_shape(), hi=2.0, away=0.3))
    c = random.uniform(-2, 2)
    return ["rdiv_s", a, num(c)], c / g.t(a)


@op("pow_s")
def _pow_s(g):
    a = g.pick(ok=lambda t: t.numel() and t.min() >= 0.1 and t.max() <= 3,
               fresh=lambda: g.leaf(random_shape(), 0.2, 2.0))
    c = random.choice([2.0, 3.0, 0.5, -1.0, 1.5, random.uniform(-2, 3)])
    return ["pow_s", a, num(c)], torch.pow(g.t(a), c)


# ---- elementwise unary -----------------------------------------------------------------------
@op("neg")
def _neg(g):
    a = g.pick()
    return ["neg", a], -g.t(a)


@op("exp")
def _exp(g):
    a = g.pick(ok=lambda t: t.numel() == 0 or t.abs().max() <= 4)
    return ["exp", a], torch.exp(g.t(a))


@op("log")
def _log(g):
    a = g.pick(ok=lambda t: t.numel() and t.min() >= 0.1, fresh=lambda: g.leaf(random_shape(), 0.2, 3.0))
    return ["log", a], torch.log(g.t(a))


@op("tanh", 1.5)
def _tanh(g):
    a = g.pick()
    return ["tanh", a], torch.tanh(g.t(a))


@op("sigmoid", 1.5)
def _sigmoid(g):
    a = g.pick()
    return ["sigmoid", a], torch.sigmoid(g.t(a))


def away_from_zero(t):
    return t.numel() and t.abs().min() >= 0.05


@op("relu")
def _relu(g):
    a = g.pick(ok=away_from_zero, fresh=lambda: g.leaf(random_shape(), away=0.1))
    return ["relu", a], torch.relu(g.t(a))


@op("sqrt")
def _sqrt(g):
    a = g.pick(ok=lambda t: t.numel() and t.min() >= 0.1, fresh=lambda: g.leaf(random_shape(), 0.2, 3.0))
    return ["sqrt", a], torch.sqrt(g.t(a))


@op("abs")
def _abs(g):
    a = g.pick(ok=away_from_zero, fresh=lambda: g.leaf(random_shape(), away=0.1))
    return ["abs", a], torch.abs(g.t(a))


# ---- reductions ------------------------------------------------------------------------------
@op("sum_all")
def _sum_all(g):
    a = g.pick()
    return ["sum_all", a], g.t(a).sum()


@op("mean_all")
def _mean_all(g):
    a = g.pick(ok=lambda t: t.numel() > 0)
    return ["mean_all", a], g.t(a).mean()


def pick_ranked(g, min_rank=1):
    return g.pick(ok=lambda t: t.dim() >= min_rank,
                  fresh=lambda: g.leaf([random.randint(1, 4) for _ in range(random.randint(min_rank, 3))]))


@op("sum_dim", 1.5)
def _sum_dim(g):
    a = pick_ranked(g)
    d, keep = wdim(g.t(a).dim()), random.random() < 0.5
    return ["sum_dim", a, str(d), str(int(keep))], g.t(a).sum(d, keepdim=keep)


@op("mean_dim")
def _mean_dim(g):
    a = pick_ranked(g)
    d, keep = wdim(g.t(a).dim()), random.random() < 0.5
    return ["mean_dim", a, str(d), str(int(keep))], g.t(a).mean(d, keepdim=keep)


def some_dims(rank):
    k = random.randint(0, rank)
    return sorted(random.sample(range(rank), k))


@op("sum_dims")
def _sum_dims(g):
    a = pick_ranked(g)
    dims, keep = some_dims(g.t(a).dim()), random.random() < 0.5
    ref = g.t(a).sum(dims, keepdim=keep) if dims else g.t(a) * 1
    return ["sum_dims", a, lst(dims), str(int(keep))], ref


@op("mean_dims")
def _mean_dims(g):
    a = pick_ranked(g, 2)
    dims, keep = some_dims(g.t(a).dim()), random.random() < 0.5
    if not dims:
        raise Reject()  # torch.mean(x, []) reduces everything; attograd reduces nothing
    return ["mean_dims", a, lst(dims), str(int(keep))], g.t(a).mean(dims, keepdim=keep)


def clear_max(t, dim=None):
    """The maximum is at least 0.02 above the runner-up (along dim, or overall)."""
    if t.numel() == 0:
        return False
    x = t.reshape(-1) if dim is None else t.movedim(dim, -1)
    if x.shape[-1] < 2:
        return True
    top = torch.topk(x, 2, dim=-1).values
    return bool(((top[..., 0] - top[..., 1]) >= 0.02).all())


@op("max_all")
def _max_all(g):
    a = g.pick(ok=clear_max, fresh=lambda: g.leaf(random_shape(), values=spread(random_shape())))
    if not clear_max(g.t(a)):
        raise Reject()
    return ["max_all", a], g.t(a).max()


def spread(shape):
    """Values whose sorted order has gaps of at least 0.1 (distinct maxima everywhere)."""
    n = numel(shape)
    v = (torch.randperm(n).to(torch.float64) * 0.1 - 0.05 * n)
    return v.reshape(shape)


@op("max_dim", 1.5)
def _max_dim(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    if not clear_max(g.t(a), d):
        shape = list(g.t(a).shape)
        a = g.leaf(shape, values=spread(shape))
    keep = random.random() < 0.5
    return ["max_dim", a, str(d), str(int(keep))], g.t(a).max(d, keepdim=keep).values


@op("max_indices", 0.3)
def _max_indices(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    if not clear_max(g.t(a), d):
        raise Reject()
    keep = random.random() < 0.5
    return ["max_indices", a, str(d), str(int(keep))], g.t(a).max(d, keepdim=keep).indices


@op("argmax", 0.3)
def _argmax(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    if not clear_max(g.t(a), d):
        raise Reject()
    keep = random.random() < 0.5
    return ["argmax", a, str(d), str(int(keep))], g.t(a).argmax(d, keepdim=keep)


# ---- shapes and views ------------------------------------------------------------------------
def factor_shape(n):
    """A random shape with n elements."""
    dims = []
    while n > 1 and len(dims) < 3:
        divs = [d for d in range(2, n + 1) if n % d == 0]
        d = random.choice(divs)
        dims.append(d)
        n //= d
    if n > 1:
        dims.append(n)
    while random.random() < 0.3 and len(dims) < 4:
        dims.insert(random.randint(0, len(dims)), 1)
    random.shuffle(dims)
    return dims


@op("reshape", 1.5)
def _reshape(g):
    a = g.pick()
    shape = factor_shape(g.t(a).numel())
    tok = list(shape)
    if tok and random.random() < 0.3:
        tok[random.randrange(len(tok))] = -1
    return ["reshape", a, lst(tok) if tok else "-"], g.t(a).reshape(shape)


@op("view", 0.7)
def _view(g):
    a = g.pick(ok=lambda t: t.is_contiguous())
    if not g.t(a).is_contiguous():
        raise Reject()
    shape = factor_shape(g.t(a).numel())
    return ["view", a, lst(shape) if shape else "-"], g.t(a).view(shape)


@op("flatten", 0.7)
def _flatten(g):
    a = g.pick()
    r = g.t(a).dim()
    if r == 0:
        return ["flatten", a, "0", "-1"], g.t(a).flatten()
    s = random.randint(0, r - 1)
    e = random.randint(s, r - 1)
    s_tok = s - r if random.random() < 0.3 else s
    return ["flatten", a, str(s_tok), str(e)], g.t(a).flatten(s, e)


@op("transpose", 2.0)
def _transpose(g):
    a = pick_ranked(g, 2)
    r = g.t(a).dim()
    d0, d1 = wdim(r), wdim(r)
    return ["transpose", a, str(d0), str(d1)], g.t(a).transpose(d0, d1)


@op("permute", 1.5)
def _permute(g):
    a = pick_ranked(g, 2)
    p = list(range(g.t(a).dim()))
    random.shuffle(p)
    return ["permute", a, lst(p)], g.t(a).permute(p)


@op("unsqueeze")
def _unsqueeze(g):
    a = g.pick(ok=lambda t: t.dim() < 4)
    if g.t(a).dim() >= 4:
        raise Reject()
    d = wdim(g.t(a).dim() + 1)
    return ["unsqueeze", a, str(d)], g.t(a).unsqueeze(d)


@op("squeeze_all", 0.5)
def _squeeze_all(g):
    a = g.pick(ok=lambda t: 1 in t.shape)
    return ["squeeze_all", a], g.t(a).squeeze()


@op("squeeze_dim")
def _squeeze_dim(g):
    a = g.pick(ok=lambda t: 1 in t.shape, fresh=lambda: g.leaf(factor_shape(6) + [1]))
    r = g.t(a).dim()
    if r == 0:
        raise Reject()
    d = wdim(r)
    return ["squeeze_dim", a, str(d)], g.t(a).squeeze(d)


def expanded_shape(shape):
    out = [random.randint(2, 3) if s == 1 and random.random() < 0.7 else s for s in shape]
    if len(out) < 4 and random.random() < 0.4:
        out = [random.randint(2, 3)] + out
    return out


@op("expand", 1.5)
def _expand(g):
    a = g.pick(ok=lambda t: 1 in t.shape or t.dim() < 3)
    shape = expanded_shape(list(g.t(a).shape))
    if numel(shape) > 64:
        raise Reject()
    lead = len(shape) - g.t(a).dim()
    tok = [(-1 if (i >= lead and g.t(a).shape[i - lead] == s and random.random() < 0.3) else s)
           for i, s in enumerate(shape)]
    return ["expand", a, lst(tok) if tok else "-"], g.t(a).expand(shape)


@op("broadcast_to", 0.7)
def _broadcast_to(g):
    a = g.pick(ok=lambda t: 1 in t.shape or t.dim() < 3)
    shape = expanded_shape(list(g.t(a).shape))
    if numel(shape) > 64:
        raise Reject()
    return ["broadcast_to", a, lst(shape) if shape else "-"], torch.broadcast_to(g.t(a), shape)


@op("contiguous", 0.5)
def _contiguous(g):
    a = g.pick()
    return ["contiguous", a], g.t(a).contiguous()


@op("clone", 0.5)
def _clone(g):
    a = g.pick()
    return ["clone", a], g.t(a).clone()


@op("to", 0.7)
def _to(g):
    a = g.pick(dtype=random.choice(["f32", "f64"]))
    target = OTHER_FLOAT[DT_NAME[g.t(a).dtype]]
    return ["to", a, target], g.t(a).to(DT[target])


# ---- indexing, joining, selecting ----------------------------------------------------------------
@op("cat")
def _cat(g):
    a = pick_ranked(g)
    shape = list(g.t(a).shape)
    d = wdim(len(shape))
    parts = [a]
    for _ in range(random.randint(1, 2)):
        s = list(shape)
        s[d] = random.randint(1, 3)
        parts.append(g.pick(shape=s))
    random.shuffle(parts)
    return ["cat", str(d)] + parts, torch.cat([g.t(p) for p in parts], d)


@op("stack")
def _stack(g):
    a = g.pick()
    shape = list(g.t(a).shape)
    parts = [a] + [g.pick(shape=shape) for _ in range(random.randint(1, 2))]
    d = wdim(len(shape) + 1)
    return ["stack", str(d)] + parts, torch.stack([g.t(p) for p in parts], d)


@op("repeat_interleave", 0.7)
def _repeat_interleave(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    r = random.randint(1, 3)
    return ["repeat_interleave", a, str(r), str(d)], torch.repeat_interleave(g.t(a), r, d)


@op("repeat_interleave_t", 0.7)
def _repeat_interleave_t(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    reps = torch.randint(0, 3, (g.t(a).shape[d],), dtype=torch.int64)
    rn = g.const(reps)
    return ["repeat_interleave_t", a, rn, str(d)], torch.repeat_interleave(g.t(a), reps, d)


@op("masked_fill")
def _masked_fill(g):
    a = g.pick()
    ms = [1 if random.random() < 0.4 else s for s in g.t(a).shape]
    m = g.keep_mask(ms, 0.5, False)
    v = random.choice([0.0, -1.0, 2.5, -1e6 if random.random() < 0.1 else 0.5])
    return ["masked_fill", a, m, num(v)], g.t(a).masked_fill(g.t(m), v)


@op("where")
def _where(g):
    a, b = binary_operands(g)
    out = torch.broadcast_shapes(g.t(a).shape, g.t(b).shape)
    cs = [1 if random.random() < 0.3 else s for s in out]
    c = g.keep_mask(cs, 0.5, False)
    return ["where", c, a, b], torch.where(g.t(c), g.t(a), g.t(b))


@op("where_s", 0.5)
def _where_s(g):
    a = g.pick()
    cs = [1 if random.random() < 0.3 else s for s in g.t(a).shape]
    c = g.keep_mask(cs, 0.5, False)
    v = random.uniform(-2, 2)
    ref = torch.where(g.t(c), g.t(a), torch.tensor(v, dtype=g.t(a).dtype))
    return ["where_s", c, a, num(v)], ref


@op("narrow", 1.5)
def _narrow(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    n = g.t(a).shape[d]
    start = random.randint(0, n - 1)
    length = random.randint(1, n - start)
    start_tok = start - n if random.random() < 0.3 else start
    return ["narrow", a, str(d), str(start_tok), str(length)], g.t(a).narrow(d, start, length)


@op("index_select")
def _index_select(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    n = g.t(a).shape[d]
    idx = torch.randint(0, n, (random.randint(1, 4),), dtype=torch.int64)  # repeats accumulate
    i = g.const(idx)
    return ["index_select", a, str(d), i], g.t(a).index_select(d, idx)


# ---- matmul family ------------------------------------------------------------------------------
@op("matmul", 2.0)
def _matmul(g):
    k = size(4)
    case = random.choice(["1x1", "2x1", "1x2", "2x2", "3x3", "3x2", "2x3", "4x3", "1x3", "3x1"])
    ra, rb = int(case[0]), int(case[2])
    batch = [random.randint(1, 3) for _ in range(max(ra, rb) - 2)]
    def side(r, last2):
        if r == 1:
            return [last2[0] if last2[0] == k else last2[1]]
        b = batch[len(batch) - (r - 2):] if r > 2 else []
        b = [1 if random.random() < 0.3 else s for s in b]
        return b + last2
    n, m = size(4), size(4)
    sa = [k] if ra == 1 else side(ra, [n, k])
    sb = [k] if rb == 1 else side(rb, [k, m])
    a, b = g.pick(shape=sa), g.pick(shape=sb)
    return ["matmul", a, b], torch.matmul(g.t(a), g.t(b))


@op("bmm")
def _bmm(g):
    B, n, k, m = random.randint(1, 3), size(3), size(3), size(3)
    a, b = g.pick(shape=[B, n, k]), g.pick(shape=[B, k, m])
    return ["bmm", a, b], torch.bmm(g.t(a), g.t(b))


@op("mm")
def _mm(g):
    n, k, m = [size(4) for _ in range(3)]
    a, b = g.pick(shape=[n, k]), g.pick(shape=[k, m])
    return ["mm", a, b], torch.mm(g.t(a), g.t(b))


@op("linear", 1.5)
def _linear(g):
    x = g.pick(ok=lambda t: t.dim() >= 1, fresh=lambda: g.leaf(random_shape()[:3] + [random.randint(1, 4)]))
    if g.t(x).dim() == 0:
        raise Reject()
    fin, fout = g.t(x).shape[-1], size(4)
    w = g.pick(shape=[fout, fin])
    b = g.pick(shape=[fout]) if random.random() < 0.6 else "_"
    ref = F.linear(g.t(x), g.t(w), None if b == "_" else g.t(b))
    return ["linear", x, w, b], ref


# ---- softmax family -------------------------------------------------------------------------------
@op("softmax", 2.0)
def _softmax(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    return ["softmax", a, str(d)], torch.softmax(g.t(a), d)


@op("log_softmax", 1.5)
def _log_softmax(g):
    a = pick_ranked(g)
    d = wdim(g.t(a).dim())
    return ["log_softmax", a, str(d)], torch.log_softmax(g.t(a), d)


def clamp_fill(fill, dtype):
    lo = torch.finfo(dtype).min
    return max(fill, lo)


def masked_softmax_ref(x, keep, fill, zero_masked):
    """attograd's masked_softmax_last as composed ops (its documented reference)."""
    fill = clamp_fill(fill, x.dtype)
    w = torch.softmax(torch.where(keep, x, torch.tensor(fill, dtype=x.dtype)), -1)
    return torch.where(keep, w, torch.zeros((), dtype=x.dtype)) if zero_masked else w


FILLS = [-1e6, -1e9, -math.inf, float(np.finfo(np.float64).min)]


@op("masked_softmax_last", 1.5)
def _masked_softmax_last(g):
    a = pick_ranked(g)
    shape = list(g.t(a).shape)
    ks = [1 if random.random() < 0.4 else s for s in shape]
    if len(ks) > 1 and random.random() < 0.3:
        ks = ks[random.randint(1, len(ks) - 1):]
    keep = g.keep_mask(ks)
    fill, zero = random.choice(FILLS), random.random() < 0.5
    return (["masked_softmax_last", a, keep, num(fill), str(int(zero))],
            masked_softmax_ref(g.t(a), g.t(keep), fill, zero))


# ---- attention --------------------------------------------------------------------------------------
@op("additive_scores")
def _additive_scores(g):
    B, Tq, Tk, h = random.randint(1, 4), size(4), size(4), size(4)
    q, k, w = g.pick(shape=[B, Tq, h]), g.pick(shape=[B, Tk, h]), g.pick(shape=[h])
    ref = (g.t(w) * torch.tanh(g.t(q).unsqueeze(2) + g.t(k).unsqueeze(1))).sum(-1)
    return ["additive_scores", q, k, w], ref


def attention_shapes():
    batch = random.choice([[], [2], [3], [2, 2], [1, 3]])
    L, S, E, Ev = size(4), size(4, keys=True), size(4), size(4)
    def vary(b):
        return [1 if random.random() < 0.25 else s for s in b]
    return batch, L, S, E, Ev, vary


def scores_batch(g, q, k, v):
    return list(torch.broadcast_shapes(g.t(q).shape[:-2], g.t(k).shape[:-2], g.t(v).shape[:-2]))


def keep_shape(batch, L, S):
    return random.choice([[L, S], batch + [L, S], batch[:1] + [1] * (len(batch) > 1) + [1, S]
                          if batch else [1, S], [S]])


def additive_mask(g, shape, dtype, grad):
    v = torch.randn(shape, dtype=torch.float64) * 0.5
    r = torch.rand(shape)
    v[r < 0.2] = -1e9
    if not grad:
        v[(r >= 0.2) & (r < 0.35)] = -math.inf
    return g.leaf(shape, dtype=dtype, grad=grad, values=v)


def check_conditioning(scores, keep, raw):
    """Rejects a float64 row whose kept scores all sit near -1e9 (a float mask
    shifting the whole row): there a score's rounding (float64's spacing at 1e9
    is 1.2e-7) moves the weights, and the two engines round in different orders
    (q k^T scale + mask against (q scale) k^T + mask). In float32 such a row is
    exactly uniform (the spacing at 1e9 is 64: the raw scores vanish), and it
    stays (it found a flash attention bug) unless a raw score there is near
    half that spacing."""
    if scores.numel() == 0:
        return
    k = torch.ones(scores.shape, dtype=torch.bool) if keep is None else torch.broadcast_to(
        keep, scores.shape)
    row_max = torch.where(k, scores, torch.tensor(-math.inf, dtype=scores.dtype)).amax(-1)
    shifted = (row_max > -math.inf) & (row_max < -1e3)
    if not shifted.any():
        return
    if scores.dtype == torch.float64 or torch.broadcast_to(raw, scores.shape)[shifted].abs().max() > 8:
        raise Reject()


def sdpa_reference(q, k, v, scale, keep, additive):
    """softmax(q k^T scale + additive) v where keep; rows with no key left -> 0 (attograd)."""
    scores = torch.matmul(q * scale, k.transpose(-2, -1))
    # the weights have the batch dims of all three inputs
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    scores = raw = torch.broadcast_to(scores, tuple(batch) + tuple(scores.shape[-2:]))
    if additive is not None:
        finite = torch.isfinite(additive)
        keep = finite if keep is None else keep & finite
        scores = scores + torch.where(finite, additive, torch.zeros((), dtype=q.dtype))
    check_conditioning(scores, keep, raw)
    if keep is None:
        w = torch.softmax(scores, -1)
    else:
        keep = torch.broadcast_to(keep, scores.shape)
        w = masked_softmax_ref(scores, keep, -math.inf, True)
    return torch.matmul(w, v), w


def sdpa_case(g, grad_mask_allowed):
    batch, L, S, E, Ev, vary = attention_shapes()
    dt = g.dtype
    q = g.pick(shape=vary(batch) + [L, E])
    k = g.pick(shape=vary(batch) + [S, E])
    v = g.pick(shape=vary(batch) + [S, Ev])
    batch = scores_batch(g, q, k, v)
    mask, keep, add = "_", None, None
    r = random.random()
    if r < 0.35:
        mask = g.keep_mask(keep_shape(batch, L, S))
        keep = g.t(mask)
    elif r < 0.7:
        mask = additive_mask(g, keep_shape(batch, L, S), dt, grad_mask_allowed and random.random() < 0.5)
        add = g.t(mask)
    causal = random.random() < 0.3
    if causal:
        cm = torch.ones(L, S, dtype=torch.bool).tril()
        keep = cm if keep is None else keep & cm
    scale = "_" if random.random() < 0.5 else num(random.uniform(0.2, 1.5))
    s = 1 / math.sqrt(E) if scale == "_" else float(scale)
    return [q, k, v, mask, str(int(causal)), scale], sdpa_reference(g.t(q), g.t(k), g.t(v), s, keep, add)


@op("sdpa", 2.0)
def _sdpa(g):
    args, (out, _) = sdpa_case(g, True)
    return ["sdpa"] + args, out


@op("sdpa_weights_out")
def _sdpa_w_out(g):
    args, (out, _) = sdpa_case(g, True)
    return ["sdpa_weights_out"] + args, out


@op("sdpa_weights")
def _sdpa_w(g):
    args, (_, w) = sdpa_case(g, True)
    return ["sdpa_weights"] + args, w


@op("flash_attention", 2.0)
def _flash(g):
    batch, L, S, E, Ev, vary = attention_shapes()
    q = g.pick(shape=vary(batch) + [L, E])
    k = g.pick(shape=vary(batch) + [S, E])
    v = g.pick(shape=vary(batch) + [S, Ev])
    scale = random.uniform(0.2, 1.5)
    keep = add = lens = "_"
    keep_t = None
    batch = scores_batch(g, q, k, v)
    scores_shape = batch + [L, S]
    if random.random() < 0.4:
        keep = g.keep_mask(keep_shape(batch, L, S))
        keep_t = g.t(keep)
    if random.random() < 0.3:
        add = additive_mask(g, keep_shape(batch, L, S), g.dtype, False)
    if random.random() < 0.4:
        ls = random.choice([scores_shape[:-1], [L], [1] * (len(scores_shape) - 2) + [L]])
        lens = g.lengths(ls, S)
        lk = torch.arange(S) < g.t(lens).unsqueeze(-1)
        keep_t = lk if keep_t is None else keep_t & lk
    causal = random.random() < 0.3
    if causal:
        cm = torch.ones(L, S, dtype=torch.bool).tril()
        keep_t = cm if keep_t is None else keep_t & cm
    uniform = random.random() < 0.4
    addt = None if add == "_" else g.t(add)
    # the math: masked keys get the lowest score; rows with no key left give 0,
    # or with masked_rows_uniform the mean of v (a constant row's softmax)
    scores = raw = torch.matmul(g.t(q), g.t(k).transpose(-2, -1)) * scale
    kt = keep_t
    if addt is not None:
        fin = torch.isfinite(addt)
        kt = fin if kt is None else kt & fin
        scores = scores + torch.where(fin, addt, torch.zeros((), dtype=scores.dtype))
    check_conditioning(scores, kt, raw)
    if kt is None:
        w = torch.softmax(scores, -1)
    else:
        w = masked_softmax_ref(scores, torch.broadcast_to(kt, scores.shape), -math.inf, not uniform)
    ref = torch.matmul(w, g.t(v))
    return (["flash_attention", q, k, v, num(scale), keep, add, lens, str(int(causal)),
             str(int(uniform))], ref)


def d2l_masked_softmax(X, valid_lens, value):
    if valid_lens is None:
        return torch.softmax(X, -1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, numel(shape[1:-1]))
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1])
    keep = torch.arange(shape[-1])[None, :] < valid_lens[:, None]
    X = torch.where(keep, X, torch.tensor(clamp_fill(value, X.dtype), dtype=X.dtype))
    return torch.softmax(X.reshape(shape), -1)


@op("masked_softmax", 2.0)
def _masked_softmax(g):
    a = pick_ranked(g, 2)
    shape = list(g.t(a).shape)
    r = random.random()
    lens = "_"
    if r < 0.45:
        lens = g.lengths([shape[0]], shape[-1])
    elif r < 0.9:
        lens = g.lengths(shape[:-1], shape[-1])
    value = random.choice([-1e6, -1e6, -1e9, -math.inf])
    ref = d2l_masked_softmax(g.t(a), None if lens == "_" else g.t(lens), value)
    return ["masked_softmax", a, lens, num(value)], ref


@op("masked_softmax_keep", 1.5)
def _masked_softmax_keep(g):
    a = pick_ranked(g)
    shape = list(g.t(a).shape)
    ks = [1 if random.random() < 0.4 else s for s in shape]
    keep = g.keep_mask(ks)
    zero = random.random() < 0.5
    value = random.choice([float(np.finfo(np.float64).min), -1e6])
    return (["masked_softmax_keep", a, keep, str(int(zero)), num(value)],
            masked_softmax_ref(g.t(a), g.t(keep), value, zero))


@op("attention_softmax", 1.5)
def _attention_softmax(g):
    a = pick_ranked(g, 2)
    shape = list(g.t(a).shape)
    L, S = shape[-2], shape[-1]
    keep = None
    lens = mask = "_"
    scores = raw = g.t(a)
    if random.random() < 0.5:
        lens = g.lengths([shape[0]] if random.random() < 0.5 else shape[:-1], S)
        lt = g.t(lens)
        if lt.dim() == 1 and len(shape) > 1:
            lt = lt.reshape([shape[0]] + [1] * (len(shape) - 2))
        keep = torch.arange(S) < lt.unsqueeze(-1)
    r = random.random()
    if r < 0.35:
        mask = g.keep_mask(keep_shape(shape[:-2], L, S))
        keep = g.t(mask) if keep is None else keep & g.t(mask)
    elif r < 0.7:
        mask = additive_mask(g, keep_shape(shape[:-2], L, S), g.dtype, random.random() < 0.5)
        fin = torch.isfinite(g.t(mask))
        keep = fin if keep is None else keep & fin
        scores = scores + torch.where(fin, g.t(mask), torch.zeros((), dtype=scores.dtype))
    causal = random.random() < 0.3
    if causal:
        cm = torch.ones(L, S, dtype=torch.bool).tril()
        keep = cm if keep is None else keep & cm
    zero = random.random() < 0.4
    value = random.choice([-1e6, float(np.finfo(np.float64).min)])
    check_conditioning(scores, keep, raw)
    if keep is None:
        ref = torch.softmax(scores, -1)
    else:
        ref = masked_softmax_ref(scores, torch.broadcast_to(keep, scores.shape), value, zero)
    return ["attention_softmax", a, lens, mask, str(int(causal)), str(int(zero)), num(value)], ref


@op("transpose_qkv", 0.5)
def _transpose_qkv(g):
    B, T, H = random.randint(1, 3), random.randint(1, 3), random.choice([1, 2, 3])
    h = H * random.randint(1, 2)
    x = g.pick(shape=[B, T, h])
    ref = g.t(x).reshape(B, T, H, -1).permute(0, 2, 1, 3).reshape(B * H, T, -1)
    return ["transpose_qkv", x, str(H)], ref


@op("transpose_output", 0.5)
def _transpose_output(g):
    B, T, H = random.randint(1, 3), random.randint(1, 3), random.choice([1, 2, 3])
    d = random.randint(1, 2)
    x = g.pick(shape=[B * H, T, d])
    ref = g.t(x).reshape(-1, H, T, d).permute(0, 2, 1, 3).reshape(B, T, -1)
    return ["transpose_output", x, str(H)], ref


# ---- dropout and losses ----------------------------------------------------------------------------
@op("dropout", 0.5)
def _dropout(g):
    a = g.pick()
    p, training = random.choice([(0.0, True), (0.0, False), (0.3, False), (0.9, False)])
    return ["dropout", a, num(p), str(int(training))], F.dropout(g.t(a), p, training)


@op("mse_loss")
def _mse(g):
    a = g.pick(ok=lambda t: t.numel() > 0)
    b = g.pick(shape=list(g.t(a).shape))
    return ["mse_loss", a, b], F.mse_loss(g.t(a), g.t(b))


@op("cross_entropy")
def _cross_entropy(g):
    a = g.pick(ok=lambda t: t.dim() in (1, 2) and t.numel() > 0,
               fresh=lambda: g.leaf([random.randint(1, 4), random.randint(2, 5)]))
    C = g.t(a).shape[-1]
    tshape = [g.t(a).shape[0]] if g.t(a).dim() == 2 else []
    tgt = g.const(torch.randint(0, C, tshape, dtype=torch.int64))
    return ["cross_entropy", a, tgt], F.cross_entropy(g.t(a), g.t(tgt))


@op("masked_softmax_ce_loss")
def _masked_softmax_ce_loss(g):
    """nn::masked_softmax_ce_loss against d2l's MaskedSoftmaxCELoss: logits
    [B, T, V], labels [B, T], valid_len [B] in 0..T (0: a zero loss)."""
    a = g.pick(ok=lambda t: t.dim() == 3 and t.numel() > 0,
               fresh=lambda: g.leaf([random.randint(1, 3), random.randint(1, 4), random.randint(2, 5)]))
    B, T, V = g.t(a).shape
    labels = g.const(torch.randint(0, V, (B, T), dtype=torch.int64))
    lens = g.lengths([B], T)
    weights = (torch.arange(T)[None, :] < g.t(lens)[:, None]).to(g.t(a).dtype)
    ce = F.cross_entropy(g.t(a).permute(0, 2, 1), g.t(labels), reduction="none")
    return ["masked_softmax_ce_loss", a, labels, lens], (ce * weights).mean(dim=1)


# ---- normalization, recurrent cells, embeddings ------------------------------------------------
def layer_norm_args(g):
    x = pick_ranked(g)
    shape = list(g.t(x).shape)
    ns = shape[len(shape) - random.randint(1, min(2, len(shape))):]
    rows = g.t(x).reshape(-1, numel(ns))
    if numel(ns) > 1 and rows.var(dim=1, unbiased=False).min() < 0.01:
        raise Reject()  # a near-constant row: 1/std amplifies rounding
    if numel(ns) == 1 and g.t(x).dtype == torch.float32:
        # One-element rows: y = bias exactly, but PyTorch's float32 kernel
        # rounds x - mean to ~1e-7 (not 0), times 1/sqrt(eps) ~ 316: its y is
        # off by ~5e-6 (0.8 of the tolerance in seed 25's graph 1311), where
        # attograd's is exact. Kept in float64 (PyTorch's noise ~1e-14 there).
        raise Reject()
    return x, ns, random.choice([1e-5, 1e-3, 0.1])


@op("layer_norm")
def _layer_norm(g):
    """ag::layer_norm over the last 1 or 2 dims, weight and bias each optional
    (one-element rows included: y = bias, dy/dx = 0)."""
    x, ns, eps = layer_norm_args(g)
    w = g.pick(shape=ns) if random.random() < 0.6 else "_"
    b = g.pick(shape=ns) if random.random() < 0.6 else "_"
    ref = F.layer_norm(g.t(x), ns, None if w == "_" else g.t(w), None if b == "_" else g.t(b), eps)
    return ["layer_norm", x, lst(ns), w, b, num(eps)], ref


@op("LayerNorm", 0.4)
def _layer_norm_module(g):
    """nn::LayerNorm with the graph's weight and bias as its parameters."""
    x, ns, eps = layer_norm_args(g)
    w, b = g.pick(shape=ns), g.pick(shape=ns)
    return ["LayerNorm", x, lst(ns), w, b, num(eps)], F.layer_norm(g.t(x), ns, g.t(w), g.t(b), eps)


def gru_cell_ref(gi, gh, h):
    """torch.nn.GRU's gate math (gates r, z, n), as ag::gru_cell documents it."""
    gi_r, gi_z, gi_n = gi.chunk(3, dim=1)
    gh_r, gh_z, gh_n = gh.chunk(3, dim=1)
    r = torch.sigmoid(gi_r + gh_r)
    z = torch.sigmoid(gi_z + gh_z)
    n = torch.tanh(gi_n + r * gh_n)
    return (1 - z) * n + z * h


@op("gru_cell")
def _gru_cell(g):
    gi = g.pick(ok=lambda t: t.dim() == 2 and t.shape[1] % 3 == 0 and t.numel() > 0,
                fresh=lambda: g.leaf([size(4), 3 * size(4)]))
    B, H = g.t(gi).shape[0], g.t(gi).shape[1] // 3
    gh = g.pick(shape=[B, 3 * H])
    h = g.pick(shape=[B, H])
    return ["gru_cell", gi, gh, h], gru_cell_ref(g.t(gi), g.t(gh), g.t(h))


@op("gru", 0.7)
def _gru(g):
    """nn::GRU (1 or 2 layers, h0 given or zeros) with the graph's tensors as
    its parameters: the output or h_n. PyTorch's value is the composition
    of gru_cell_ref (differentiable through the leaves), checked here
    against torch.nn.GRU itself."""
    x = g.pick(ok=lambda t: t.dim() == 3 and t.numel() > 0,
               fresh=lambda: g.leaf([random.randint(1, 3), random.randint(1, 3), random.randint(1, 3)]))
    T, B, inp = g.t(x).shape
    H, layers = random.randint(1, 3), random.randint(1, 2)
    h0 = g.pick(shape=[layers, B, H]) if random.random() < 0.5 else "_"
    params = []
    for layer in range(layers):
        fan_in = inp if layer == 0 else H
        params += [g.pick(shape=[3 * H, fan_in]), g.pick(shape=[3 * H, H]),
                   g.pick(shape=[3 * H]), g.pick(shape=[3 * H])]
    p = [g.t(n) for n in params]
    layer_in, last = g.t(x), []
    for layer in range(layers):
        w_ih, w_hh, b_ih, b_hh = p[4 * layer:4 * layer + 4]
        h = g.t(h0)[layer] if h0 != "_" else torch.zeros(B, H, dtype=g.t(x).dtype)
        steps = []
        for t in range(T):
            h = gru_cell_ref(F.linear(layer_in[t], w_ih, b_ih), F.linear(h, w_hh, b_hh), h)
            steps.append(h)
        layer_in = torch.stack(steps)
        last.append(h)
    output, h_n = layer_in, torch.stack(last)
    with torch.no_grad():
        torch_gru = torch.nn.GRU(inp, H, layers).to(g.t(x).dtype)
        for layer in range(layers):
            for k, name in enumerate(["weight_ih", "weight_hh", "bias_ih", "bias_hh"]):
                getattr(torch_gru, "%s_l%d" % (name, layer)).copy_(p[4 * layer + k])
        ref_out, ref_h = torch_gru(g.t(x), None if h0 == "_" else g.t(h0))
        tol = 1e-4 if g.t(x).dtype == torch.float32 else 1e-10
        assert torch.allclose(ref_out, output, rtol=tol, atol=tol), "gru: not torch.nn.GRU's value"
        assert torch.allclose(ref_h, h_n, rtol=tol, atol=tol), "gru: not torch.nn.GRU's h_n"
    which = random.random() < 0.5  # 1: h_n
    return ["gru", x, h0, str(layers), str(int(which))] + params, h_n if which else output


@op("embedding")
def _embedding(g):
    """nn::Embedding (index_select of weight's rows) with the graph's weight;
    the indices (0-d to 2-d) always repeat some row, whose gradients add."""
    w = g.pick(ok=lambda t: t.dim() == 2 and t.numel() > 0,
               fresh=lambda: g.leaf([random.randint(1, 5), random.randint(1, 4)]))
    V = g.t(w).shape[0]
    shape = random.choice([[], [random.randint(2, 5)], [random.randint(1, 3), random.randint(2, 4)]])
    ids = torch.randint(0, V, shape, dtype=torch.int64)
    if ids.dim():
        flat = ids.view(-1)
        flat[random.randrange(1, flat.numel())] = flat[0]  # a repeat
    i = g.const(ids)
    return ["embedding", w, i], F.embedding(g.t(i), g.t(w))


# ---- masks (not differentiable: their values are compared) ------------------------------------------
@op("sequence_mask", 0.3)
def _sequence_mask(g):
    n, maxlen = random.randint(1, 4), random.randint(0, 4)
    lens = g.lengths([n], maxlen)
    return ["sequence_mask", lens, str(maxlen)], torch.arange(maxlen)[None, :] < g.t(lens)[:, None]


@op("causal_mask", 0.2)
def _causal_mask(g):
    L, S = random.randint(0, 4), random.randint(0, 4)
    return ["causal_mask", str(L), str(S)], torch.ones(L, S, dtype=torch.bool).tril()


@op("keep_to_additive", 0.3)
def _keep_to_additive(g):
    m = g.keep_mask(random_shape(3, 24), 0.6, False)
    dt = g.dtype
    ref = torch.where(g.t(m), torch.zeros((), dtype=DT[dt]), torch.tensor(-1e9, dtype=DT[dt]))
    return ["keep_to_additive", m, dt], ref


def sink_weights(shape, k, dtype):
    n = numel(shape)
    i = np.arange(n, dtype=np.float64)
    return torch.from_numpy(np.cos(0.37 * i + 1.1 * k + 0.5)).reshape(shape).to(dtype)


def build_graph(gid, n_ops):
    dtype = "f64" if random.random() < 0.5 else "f32"
    for _attempt in range(50):
        g = Graph(dtype, gid)
        names, weights = zip(*[(k, w) for k, (w, _) in OPS.items()])
        tries = 0
        while len(g.nodes) < n_ops and tries < 400:
            tries += 1
            name = random.choices(names, weights)[0]
            snapshot = (dict(g.tensors), dict(g.kind), list(g.leaves), list(g.nodes), set(g.used),
                        g.n_leaves, dict(g.node_tokens))
            try:
                tokens, value = OPS[name][1](g)
                g.add_node(tokens, value)
                if len(g.nodes) > n_ops:
                    raise Reject()
            except (Reject, RuntimeError, IndexError, ValueError):
                (g.tensors, g.kind, g.leaves, g.nodes, g.used, g.n_leaves, g.node_tokens) = snapshot
        if len(g.nodes) >= 1:
            return g
    raise RuntimeError("could not build graph %d" % gid)


class Pools:
    def __init__(self):
        self.data = {"f32": [], "f64": [], "i64": [], "bool": []}
        self.size = {"f32": 0, "f64": 0, "i64": 0, "bool": 0}

    def put(self, t):
        dt = DT_NAME[t.dtype]
        off = self.size[dt]
        arr = t.detach().contiguous().reshape(-1).numpy()
        self.data[dt].append(arr)
        self.size[dt] += arr.size
        return dt, off


def write_graph(g, pools, lines):
    lines.append("graph %d" % g.gid)
    for name, grad in g.leaves:
        t = g.t(name)
        dt, off = pools.put(t)
        lines.append("leaf %s %s %s %d %d" % (name, dt, shape_str(t.shape), off, int(grad)))
    consumed = set()
    for n in g.nodes:
        for tok in g.node_tokens[n][1:]:
            if tok in g.kind:
                consumed.add(tok)
    for n in g.nodes:
        t = g.t(n)
        dt, off = pools.put(t)
        lines.append("node %s %s %s %d %s" % (n, dt, shape_str(t.shape), off, " ".join(g.node_tokens[n])))
    sinks = [n for n in g.nodes if n not in consumed and g.t(n).dtype.is_floating_point
             and g.t(n).requires_grad]
    loss = None
    for k, n in enumerate(sinks):
        lines.append("out %s" % n)
        term = (g.t(n) * sink_weights(list(g.t(n).shape), k, g.t(n).dtype)).sum().to(torch.float64)
        loss = term if loss is None else loss + term
    grad_leaves = [name for name, grad in g.leaves if grad]
    if loss is not None and grad_leaves:
        grads = torch.autograd.grad(loss, [g.t(n) for n in grad_leaves], allow_unused=True)
    else:
        grads = [None] * len(grad_leaves)
    for name, gr in zip(grad_leaves, grads):
        if gr is None:
            gr = torch.zeros_like(g.t(name))
        _, off = pools.put(gr)
        lines.append("grad %s %d" % (name, off))
    lines.append("end")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=3000, help="graphs in total")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--per-file", type=int, default=1000, help="graphs per .npz")
    ap.add_argument("--out", default=DEFAULT_OUT, help="directory of differential_<i>.npz")
    ap.add_argument("--wide", type=float, default=0.0,
                    help="chance that a matmul or attention size is large (17-90; keys 400-700)"
                         " so the kernels' blocked paths run; 0 in the committed set (size)")
    args = ap.parse_args()
    global WIDE
    WIDE = args.wide
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    n_files = (args.count + args.per_file - 1) // args.per_file
    hist, op_count = {}, {}
    for f in range(n_files):
        pools, lines = Pools(), []
        for gid in range(f * args.per_file, min(args.count, (f + 1) * args.per_file)):
            g = build_graph(gid, random.randint(1, 12))
            write_graph(g, pools, lines)
            hist[len(g.nodes)] = hist.get(len(g.nodes), 0) + 1
            for n in g.nodes:
                op_count[g.node_tokens[n][0]] = op_count.get(g.node_tokens[n][0], 0) + 1
        text = "\n".join(lines) + "\n"
        out = {"desc": np.frombuffer(text.encode("ascii"), dtype=np.uint8).astype(np.int32)}
        for dt, key, npdt in [("f32", "f32", np.float32), ("f64", "f64", np.float64),
                              ("i64", "i64", np.int64), ("bool", "b", np.bool_)]:
            parts = pools.data[dt]
            out[key] = np.concatenate(parts).astype(npdt) if parts else np.zeros(0, npdt)
        path = os.path.join(args.out, "differential_%d.npz" % f)
        np.savez_compressed(path, **out)
        print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))
    print("ops per graph:", " ".join("%d:%d" % kv for kv in sorted(hist.items())))
    print("op uses:", " ".join("%s:%d" % kv for kv in sorted(op_count.items())))
    missing = sorted(set(OPS) - set(op_count))
    if missing:
        print("never drawn:", " ".join(missing))


if __name__ == "__main__":
    main()
