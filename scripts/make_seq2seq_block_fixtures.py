#!/usr/bin/python3
"""PyTorch reference fixtures for the building blocks of d2l's seq2seq models
(tests/test_embedding.cpp, tests/test_gru.cpp, tests/test_seq2seq_losses.cpp).

Run with /usr/bin/python3 (Debian's python3-torch and numpy live there; the
`python3` first on PATH may lack them):

    /usr/bin/python3 scripts/make_seq2seq_block_fixtures.py

Everything is float64 and seeded, so the files are reproducible. The
references are torch.nn.Embedding, torch.nn.GRU, torch.nn.utils.clip_grad_norm_
and d2l's MaskedSoftmaxCELoss ("Sequence to Sequence Learning").

Writes tests/fixtures/seq2seq_<name>.npz (seq2seq_bigru.npz: the
bidirectional GRU, with gru()'s entries and a case "packed": a batch of
lengths [5, 2, 3] through pack_padded_sequence, output zero past each
length). Entry names:
    <parameter>                    parameters under torch's state-dict names
                                   (weight, weight_ih_l0, ..., bias_hh_l1)
    <input>                        inputs (indices, x, h0, logits, ...)
    <case>.<result>                results of a case (output, h_n, loss, ...)
    <case>.w*                      fixed random weights: the loss is sum(result * w)
    <case>.grad.<input or param>   d loss / d that tensor
seq2seq_gru_state.npz is torch's GRU state_dict() exactly as saved by
numpy.savez, for the strict load_state_dict test.
"""
import os

import numpy as np
import torch
from torch import nn

from d2l_torch import sequence_mask

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def np64(t):
    t = t.detach()
    return t.numpy() if t.dtype in (torch.int64, torch.bool) else t.double().numpy()


def save(file, entries, compressed=True):
    path = os.path.join(OUT, file)
    (np.savez_compressed if compressed else np.savez)(path, **entries)
    print(f"{file}: {len(entries)} entries, {os.path.getsize(path)} bytes")


# ---- d2l's MaskedSoftmaxCELoss ("Sequence to Sequence Learning") ------------------------
class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    """The softmax cross-entropy loss with masks."""
    # `pred` shape: (`batch_size`, `num_steps`, `vocab_size`)
    # `label` shape: (`batch_size`, `num_steps`)
    # `valid_len` shape: (`batch_size`,)
    def forward(self, pred, label, valid_len):
        weights = torch.ones_like(label)
        weights = sequence_mask(weights, valid_len)
        self.reduction = 'none'
        unweighted_loss = super(MaskedSoftmaxCELoss, self).forward(pred.permute(0, 2, 1), label)
        weighted_loss = (unweighted_loss * weights).mean(dim=1)
        return weighted_loss


def embedding():
    emb = nn.Embedding(7, 3)
    indices = torch.tensor([[0, 3, 3, 6], [2, 0, 5, 3]])  # repeats: their gradients add up
    out = emb(indices)
    w = torch.randn(out.shape)
    (out * w).sum().backward()
    save("seq2seq_embedding.npz", {"weight": np64(emb.weight), "indices": np64(indices),
                                   "output": np64(out), "w": np64(w),
                                   "grad.weight": np64(emb.weight.grad)})


def gru_cases(bidirectional):
    """torch.nn.GRU(4, 6, 2[, bidirectional]): its parameters, x, h0, and the
    cases "h0" and "zeros" (h0 given or not): output, h_n and every gradient
    of sum(output * w_out) + sum(h_n * w_h)."""
    T, B, I, H, L = 5, 3, 4, 6, 2
    g = nn.GRU(I, H, num_layers=L, bidirectional=bidirectional)
    params = dict(g.named_parameters())
    x = torch.randn(T, B, I, requires_grad=True)
    h0 = torch.randn(L * (2 if bidirectional else 1), B, H, requires_grad=True)
    entries = {k: np64(v) for k, v in params.items()}
    entries["x"], entries["h0"] = np64(x), np64(h0)
    for case, h in (("h0", h0), ("zeros", None)):
        for t in [x, h0] + list(params.values()):
            t.grad = None
        output, h_n = g(x, h)
        w_out, w_h = torch.randn(output.shape), torch.randn(h_n.shape)
        ((output * w_out).sum() + (h_n * w_h).sum()).backward()
        entries.update({f"{case}.output": np64(output), f"{case}.h_n": np64(h_n),
                        f"{case}.w_out": np64(w_out), f"{case}.w_h": np64(w_h),
                        f"{case}.grad.x": np64(x.grad)})
        if h is not None:
            entries[f"{case}.grad.h0"] = np64(h0.grad)
        for k, v in params.items():
            entries[f"{case}.grad.{k}"] = np64(v.grad)
    return g, params, x, entries


def gru():
    g, _, _, entries = gru_cases(bidirectional=False)
    save("seq2seq_gru.npz", entries)
    # What a PyTorch user would save: the state dict as it is, uncompressed.
    save("seq2seq_gru_state.npz", {k: v.numpy() for k, v in g.state_dict().items()},
         compressed=False)


def bigru():
    """torch.nn.GRU(bidirectional=True): gru()'s entries, and a case "packed"."""
    g, params, x, entries = gru_cases(bidirectional=True)
    T = x.shape[0]
    # Packed sequences (lengths): the valid steps of the output and h_n.
    lengths = torch.tensor([5, 2, 3])
    for t in [x] + list(params.values()):
        t.grad = None
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
    out_packed, h_n = g(packed)
    output, _ = nn.utils.rnn.pad_packed_sequence(out_packed, total_length=T)
    w_out, w_h = torch.randn(output.shape), torch.randn(h_n.shape)
    ((output * w_out).sum() + (h_n * w_h).sum()).backward()
    entries.update({"packed.lengths": np64(lengths), "packed.output": np64(output),
                    "packed.h_n": np64(h_n), "packed.w_out": np64(w_out),
                    "packed.w_h": np64(w_h), "packed.grad.x": np64(x.grad)})
    for k, v in params.items():
        entries[f"packed.grad.{k}"] = np64(v.grad)
    save("seq2seq_bigru.npz", entries)


def losses():
    B, T, V = 3, 4, 5
    logits = torch.randn(B, T, V, requires_grad=True)
    labels = torch.randint(0, V, (B, T))
    valid_len = torch.tensor([2, 0, 4])  # a sequence with nothing valid: its loss is 0
    loss = MaskedSoftmaxCELoss()(logits, labels, valid_len)
    w = torch.randn(B)
    (loss * w).sum().backward()
    entries = {"logits": np64(logits), "labels": np64(labels), "valid_len": np64(valid_len),
               "ce.loss": np64(loss), "ce.w": np64(w), "ce.grad.logits": np64(logits.grad)}
    # The same loss with torch's label_smoothing (no new random draws: the
    # fixtures after this one stay as they were).
    smoothed_logits = logits.detach().clone().requires_grad_()
    smoothed = MaskedSoftmaxCELoss(label_smoothing=0.1)(smoothed_logits, labels, valid_len)
    (smoothed * w).sum().backward()
    entries.update({"ce_smooth.epsilon": np.array(0.1), "ce_smooth.loss": np64(smoothed),
                    "ce_smooth.grad.logits": np64(smoothed_logits.grad)})

    # clip_grad_norm_: three parameters with gradients and one without.
    grads = [torch.randn(2, 3), torch.randn(4), torch.randn(3, 1)]
    for case, max_norm in (("clip", 1.0), ("noclip", 100.0)):
        params = [torch.zeros(g.shape, requires_grad=True) for g in grads]
        params.append(torch.zeros(2, requires_grad=True))  # .grad stays None: skipped
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = nn.utils.clip_grad_norm_(params, max_norm)
        entries[f"{case}.max_norm"] = np.array(max_norm)
        entries[f"{case}.total_norm"] = np64(total)
        for i, p in enumerate(params[:len(grads)]):
            entries[f"{case}.grad{i}"] = np64(p.grad)
    for i, g in enumerate(grads):
        entries[f"grad{i}"] = np64(g)
    save("seq2seq_losses.npz", entries)


def main():
    torch.manual_seed(21)
    embedding()
    gru()
    losses()
    bigru()


if __name__ == "__main__":
    main()
