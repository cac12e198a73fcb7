#!/usr/bin/python3
"""PyTorch reference fixtures for attograd's Transformer (tests/test_transformer.cpp).

Run with /usr/bin/python3 (Debian's python3-torch and numpy live there):

    /usr/bin/python3 scripts/make_transformer_fixtures.py

The reference is d2l's PyTorch code of "The Transformer Architecture"
(scripts/d2l_torch.py, with its two documented changes for step-by-step
prediction) and torch.nn.LayerNorm. Everything is float64 and seeded.

Writes
  tests/fixtures/transformer_blocks.npz
    layer_norm.<case>.{x, weight, bias, w, output, grad.x, grad.weight, grad.bias}
        torch.nn.LayerNorm; the loss is sum(output * w). Cases: "last" (x [2, 3, 4],
        normalized [4]), "two" (x [2, 3, 4], normalized [3, 4], eps 1e-3).
    ffn.{x, dense1.weight, ..., w, output, grad.<x or parameter>}   PositionWiseFFN
    addnorm.{X, Y, ln.weight, ln.bias, w, output, grad.<...>}       AddNorm (dropout 0)
    pos_encoding.P        PositionalEncoding(6, 0, max_len=10).P   [1, 10, 6]
  tests/fixtures/transformer_model.npz
    A Transformer (src vocab 12, tgt vocab 11, d 8, 2 heads, 2 blocks, FFN 16,
    dropout 0, training mode), on a batch with padding:
    param.NN.<name>       the state dict, NN its position in torch's order
    src, src_valid_lens, tgt_in, labels, tgt_valid_lens           the batch (int64)
    logits [B, Tout, V]; loss = sum of d2l's MaskedSoftmaxCELoss over the batch
    grad.<name>           d loss / d parameter
    enc_weights.<i> [B, H, T, T], dec_self_weights.<i> [B, H, Tout, Tout],
    dec_cross_weights.<i> [B, H, Tout, T]                         per block i
    logits_no_causal      the same model's logits without the look-ahead mask
    greedy_logits [B, S, V], greedy_tokens [B, S]   eval mode, one step at a
                          time from <bos> = 1 with the key/value cache, S steps
    adam_losses [20]      the loss before each of 20 torch.optim.Adam(lr=0.01)
                          steps on the batch, from the saved state dict
  tests/fixtures/transformer_pre_ln.npz
    The same entries for the same model with norm_first (pre-LN blocks and a
    final LayerNorm per stack, scripts/d2l_torch.py), every LayerNorm's weight
    and bias drawn at random so that mixing two of them up shows. Before
    writing it, each of its blocks is checked against PyTorch's own
    torch.nn.TransformerEncoderLayer / TransformerDecoderLayer(norm_first=True)
    given the same weights (zero attention biases: d2l's attention has none).

    make_transformer_fixtures.py [blocks|model|pre_ln ...]   (default: all three)
"""
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import d2l_torch as d2l  # noqa: E402

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def np64(t):
    return t.detach().numpy().astype(np.float64) if t.is_floating_point() else t.detach().numpy()


def save(file, entries):
    path = os.path.join(OUT, file)
    np.savez_compressed(path, **entries)
    print("wrote", path, sum(v.nbytes for v in entries.values()), "bytes raw")


def module_case(entries, prefix, module, inputs, run):
    """Runs `run(*inputs)`, loss = sum(output * w); records inputs, params, output, grads."""
    inputs = [x.clone().requires_grad_() for x in inputs]
    out = run(*inputs)
    w = torch.randn_like(out)
    (out * w).sum().backward()
    entries[prefix + ".w"] = np64(w)
    entries[prefix + ".output"] = np64(out)
    for name, x in zip(module._input_names, inputs):
        entries[prefix + "." + name] = np64(x)
        entries[prefix + ".grad." + name] = np64(x.grad)
    for name, p in module.named_parameters():
        entries[prefix + "." + name] = np64(p)
        entries[prefix + ".grad." + name] = np64(p.grad)


def blocks():
    torch.manual_seed(0)
    e = {}
    for case, shape, normalized, eps in [("last", (2, 3, 4), [4], 1e-5),
                                          ("two", (2, 3, 4), [3, 4], 1e-3)]:
        ln = nn.LayerNorm(normalized, eps=eps)
        with torch.no_grad():  # not the ones/zeros init, so the gradients mean something
            ln.weight.copy_(torch.randn(normalized))
            ln.bias.copy_(torch.randn(normalized))
        ln._input_names = ["x"]
        module_case(e, "layer_norm." + case, ln, [torch.randn(shape) * 3 + 1], ln)
    ffn = d2l.PositionWiseFFN(5, 7, 4)
    ffn._input_names = ["x"]
    module_case(e, "ffn", ffn, [torch.randn(2, 3, 5)], ffn)
    addnorm = d2l.AddNorm(4, 0.0)
    with torch.no_grad():
        addnorm.ln.weight.copy_(torch.randn(4))
        addnorm.ln.bias.copy_(torch.randn(4))
    addnorm._input_names = ["X", "Y"]
    module_case(e, "addnorm", addnorm, [torch.randn(2, 3, 4), torch.randn(2, 3, 4)], addnorm)
    e["pos_encoding.P"] = np64(d2l.PositionalEncoding(6, 0.0, max_len=10).P)
    save("transformer_blocks.npz", e)


def make_model(causal=True, norm_first=False):
    torch.manual_seed(1)
    d, ffn, heads, blks = 8, 16, 2, 2
    encoder = d2l.TransformerEncoder(12, d, ffn, heads, blks, 0.0, norm_first=norm_first)
    decoder = d2l.TransformerDecoder(11, d, ffn, heads, blks, 0.0, causal, norm_first)
    net = d2l.EncoderDecoder(encoder, decoder)
    if norm_first:
        with torch.no_grad():
            for m in net.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.copy_(1 + 0.3 * torch.randn_like(m.weight))
                    m.bias.copy_(0.3 * torch.randn_like(m.bias))
    return net


def torch_layer_weights(layer, attentions, ffn, lns):
    """Copies a d2l block's weights into torch.nn.TransformerEncoderLayer or
    DecoderLayer: attentions (self_attn[, multihead_attn]) from d2l's
    MultiHeadAttention (in_proj = [W_q; W_k; W_v], zero biases), the FFN,
    and norm1.. from the sublayers' LayerNorms."""
    with torch.no_grad():
        for name, mha in attentions:
            target = getattr(layer, name)
            target.in_proj_weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight,
                                                   mha.W_v.weight]))
            target.in_proj_bias.zero_()
            target.out_proj.weight.copy_(mha.W_o.weight)
            target.out_proj.bias.zero_()
        layer.linear1.load_state_dict(ffn.dense1.state_dict())
        layer.linear2.load_state_dict(ffn.dense2.state_dict())
        for k, ln in enumerate(lns, 1):
            getattr(layer, "norm%d" % k).load_state_dict(ln.state_dict())


def check_pre_ln_blocks(net):
    """Each pre-LN block of `net` against PyTorch's norm_first layers, on
    random inputs with padding: to 1e-12 (float64), or the script stops."""
    torch.manual_seed(2)
    B, T, Tout, d, heads = 3, 5, 4, 8, 2
    X, memory = torch.randn(B, T, d), torch.randn(B, T, d)
    valid = torch.tensor([5, 3, 2])
    padding = torch.arange(T)[None, :] >= valid[:, None]  # True: a padded key
    for blk in net.encoder.blks:
        layer = nn.TransformerEncoderLayer(d, heads, 16, dropout=0.0, batch_first=True,
                                           norm_first=True)
        torch_layer_weights(layer, [("self_attn", blk.attention)], blk.ffn,
                            [blk.addnorm1.ln, blk.addnorm2.ln])
        layer.train()  # (eval mode may take a fast path that zeroes padded positions)
        ours, theirs = blk(X, valid), layer(X, src_key_padding_mask=padding)
        assert torch.allclose(ours, theirs, atol=1e-12, rtol=0), (ours - theirs).abs().max()
    Y = torch.randn(B, Tout, d)
    causal = nn.Transformer.generate_square_subsequent_mask(Tout)  # float -inf above the diagonal
    for blk in net.decoder.blks:
        layer = nn.TransformerDecoderLayer(d, heads, 16, dropout=0.0, batch_first=True,
                                           norm_first=True)
        torch_layer_weights(layer, [("self_attn", blk.attention1), ("multihead_attn",
                                                                     blk.attention2)],
                            blk.ffn, [blk.addnorm1.ln, blk.addnorm2.ln, blk.addnorm3.ln])
        layer.train()
        ours = blk(Y, [memory, valid, [None] * len(net.decoder.blks)])[0]
        theirs = layer(Y, memory, tgt_mask=causal, memory_key_padding_mask=padding)
        assert torch.allclose(ours, theirs, atol=1e-12, rtol=0), (ours - theirs).abs().max()
    print("pre-LN blocks = torch.nn.TransformerEncoderLayer/DecoderLayer(norm_first=True)")


def model(norm_first=False):
    e = {}
    net = make_model(norm_first=norm_first)
    if norm_first:
        check_pre_ln_blocks(net)
    net.train()
    for i, (name, p) in enumerate(net.state_dict().items()):
        e["param.%02d.%s" % (i, name)] = np64(p)
    # B 3, T 5, Tout 4; padding (token 0) beyond the valid lengths.
    src = torch.tensor([[3, 4, 5, 6, 2], [7, 8, 2, 0, 0], [9, 2, 0, 0, 0]])
    src_valid_lens = torch.tensor([5, 3, 2])
    tgt_in = torch.tensor([[1, 3, 4, 5], [1, 6, 7, 0], [1, 8, 0, 0]])
    labels = torch.tensor([[3, 4, 5, 2], [6, 7, 2, 0], [8, 2, 0, 0]])
    tgt_valid_lens = torch.tensor([4, 3, 2])
    for name, t in [("src", src), ("src_valid_lens", src_valid_lens), ("tgt_in", tgt_in),
                    ("labels", labels), ("tgt_valid_lens", tgt_valid_lens)]:
        e[name] = np64(t)
    logits, _ = net(src, tgt_in, src_valid_lens)
    loss = d2l.MaskedSoftmaxCELoss()(logits, labels, tgt_valid_lens).sum()
    loss.backward()
    e["logits"] = np64(logits)
    e["loss"] = np64(loss)
    for name, p in net.named_parameters():
        e["grad." + name] = np64(p.grad)
    B, H = src.shape[0], 2
    for i, w in enumerate(net.encoder.attention_weights):
        e["enc_weights.%d" % i] = np64(w.reshape(B, H, w.shape[1], w.shape[2]))
    for kind, ws in [("dec_self_weights", net.decoder._attention_weights[0]),
                     ("dec_cross_weights", net.decoder._attention_weights[1])]:
        for i, w in enumerate(ws):
            e["%s.%d" % (kind, i)] = np64(w.reshape(B, H, w.shape[1], w.shape[2]))

    # 20 Adam steps on the same batch from the same weights: the loss before each.
    trained = make_model(norm_first=norm_first)
    trained.load_state_dict(net.state_dict(), strict=True)
    trained.train()
    adam = torch.optim.Adam(trained.parameters(), lr=0.01)
    losses = []
    for _ in range(20):
        adam.zero_grad()
        step_loss = d2l.MaskedSoftmaxCELoss()(trained(src, tgt_in, src_valid_lens)[0], labels,
                                               tgt_valid_lens).sum()
        step_loss.backward()
        adam.step()
        losses.append(step_loss.item())
    e["adam_losses"] = np.array(losses)

    unmasked = make_model(causal=False, norm_first=norm_first)
    unmasked.load_state_dict(net.state_dict(), strict=True)
    e["logits_no_causal"] = np64(unmasked(src, tgt_in, src_valid_lens)[0])

    # Greedy prediction, eval mode, one step at a time with the cache.
    net.eval()
    steps = 5
    with torch.no_grad():
        enc_outputs = net.encoder(src, src_valid_lens)
        state = net.decoder.init_state(enc_outputs, src_valid_lens)
        token = torch.ones(B, 1, dtype=torch.long)  # <bos> = 1
        all_logits, tokens = [], []
        for _ in range(steps):
            step_logits, state = net.decoder(token, state)
            token = step_logits.argmax(dim=2)
            all_logits.append(step_logits)
            tokens.append(token)
    e["greedy_logits"] = np64(torch.cat(all_logits, dim=1))
    e["greedy_tokens"] = np64(torch.cat(tokens, dim=1))
    save("transformer_pre_ln.npz" if norm_first else "transformer_model.npz", e)


if __name__ == "__main__":
    parts = {"blocks": blocks, "model": model, "pre_ln": lambda: model(norm_first=True)}
    for part in sys.argv[1:] or list(parts):
        parts[part]()
