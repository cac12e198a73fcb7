#!/usr/bin/python3
"""PyTorch reference fixtures for attograd's seq2seq with attention
(nn/seq2seq.h, tests/test_seq2seq.cpp): d2l's own PyTorch code of "Bahdanau
Attention" (scripts/d2l_torch.py: Seq2SeqEncoder, Seq2SeqAttentionDecoder,
EncoderDecoder, MaskedSoftmaxCELoss, grad_clipping, the xavier init of
train_seq2seq), on a small seeded model and one padded batch.

Run with /usr/bin/python3 (the python with torch + numpy):
    /usr/bin/python3 scripts/make_seq2seq_fixtures.py

Writes tests/fixtures/seq2seq_additive.npz (the book's AdditiveAttention),
tests/fixtures/seq2seq_dot.npz (DotProductAttention, Luong-style) and
tests/fixtures/seq2seq_bidirectional.npz (Bahdanau et al.'s bidirectional
encoder and initial state, scripts/bahdanau_torch.py), and for the other
scoring functions with that encoder tests/fixtures/seq2seq_general.npz
(Luong's q^T W_a k), seq2seq_multihead.npz (d2l's MultiHeadAttention, 2
heads), seq2seq_general_scaled.npz (q^T W_a k / sqrt(k)) and
seq2seq_dot_bidirectional.npz (dot with the encoder's directions H/2 = 4
wide each, so that its keys have the queries' width). Entries:
    param.NN.<name>       the state dict, float64, NN its position in
                          state_dict() (so the test can check the order)
    src [B, T], src_valid_len [B], dec_input [B, Tout] (bos + labels[:, :-1]),
    labels [B, Tout], tgt_valid_len [B]          int64
    logits [B, Tout, V]   the teacher-forced forward, float64
    hidden [L, B, H]      the decoder's hidden state after it
    attention_weights [B, Tout, T]  each step's weights (d2l's
                          decoder.attention_weights, stacked over the steps)
    loss_per_seq [B], loss []       MaskedSoftmaxCELoss and its sum
    grad.<name>           d loss / d that parameter, float64
    adam_losses [20]      float32: the summed loss before each of 20 steps of
                          d2l's train_seq2seq loop on this batch (Adam,
                          lr 0.005, grad_clipping(net, 1)), starting from the
                          state dict cast to float32
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import d2l_torch as d2l  # noqa: E402
import bahdanau_torch  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")

SRC_VOCAB, TGT_VOCAB, EMBED, HIDDENS, LAYERS = 11, 12, 8, 8, 2
BOS = 2  # d2l's vocabularies: <unk> 0, <pad> 1, <bos> 2, <eos> 3
ADAM_STEPS, LR = 20, 0.005

# Padded with <pad> = 1 after <eos> = 3, as d2l's truncate_pad.
SRC = [[5, 6, 7, 8, 9, 3], [4, 10, 5, 3, 1, 1], [7, 3, 1, 1, 1, 1]]
SRC_VALID = [6, 4, 2]
LABELS = [[4, 5, 6, 7, 3], [8, 9, 3, 1, 1], [10, 11, 4, 3, 1]]
TGT_VALID = [5, 3, 4]


HEADS = 2
SEEDS = {"additive": 7, "dot": 8, "bidirectional": 9, "general": 10, "multihead": 11,
         "general_scaled": 12, "dot_bidirectional": 13}


def make_model(attention, dtype):
    if attention == "bidirectional":
        return bahdanau_torch.make_bidirectional(SRC_VOCAB, TGT_VOCAB, EMBED, HIDDENS,
                                                 LAYERS).to(dtype)
    if attention in ("general", "multihead", "general_scaled"):
        return bahdanau_torch.make_model(SRC_VOCAB, TGT_VOCAB, EMBED, HIDDENS, LAYERS, 0,
                                         attention, bidirectional=True,
                                         num_heads=HEADS).to(dtype)
    if attention == "dot_bidirectional":
        return bahdanau_torch.make_model(SRC_VOCAB, TGT_VOCAB, EMBED, HIDDENS, LAYERS, 0, "dot",
                                         bidirectional=True,
                                         encoder_hiddens=HIDDENS // 2).to(dtype)
    encoder = d2l.Seq2SeqEncoder(SRC_VOCAB, EMBED, HIDDENS, LAYERS)
    decoder = d2l.Seq2SeqAttentionDecoder(TGT_VOCAB, EMBED, HIDDENS, LAYERS, attention=attention)
    return d2l.EncoderDecoder(encoder, decoder).to(dtype)


def run(net, src, src_valid, dec_input, labels, tgt_valid):
    logits, state = net(src, dec_input, src_valid)
    loss_per_seq = d2l.MaskedSoftmaxCELoss()(logits, labels, tgt_valid)
    return logits, state, loss_per_seq


def write(attention):
    torch.manual_seed(SEEDS[attention])
    net = make_model(attention, torch.float64)
    net.apply(d2l.init_seq2seq)
    state = {name: p.detach().clone() for name, p in net.state_dict().items()}

    src = torch.tensor(SRC)
    src_valid = torch.tensor(SRC_VALID)
    labels = torch.tensor(LABELS)
    tgt_valid = torch.tensor(TGT_VALID)
    bos = torch.tensor([BOS] * labels.shape[0]).reshape(-1, 1)
    dec_input = torch.cat([bos, labels[:, :-1]], 1)  # teacher forcing

    entries = {f"param.{i:02d}.{name}": t.numpy() for i, (name, t) in enumerate(state.items())}
    entries.update(src=src.numpy(), src_valid_len=src_valid.numpy(),
                   dec_input=dec_input.numpy(), labels=labels.numpy(),
                   tgt_valid_len=tgt_valid.numpy())

    # float64: logits, weights, loss, gradients.
    net.train()
    logits, dec_state, loss_per_seq = run(net, src, src_valid, dec_input, labels, tgt_valid)
    loss = loss_per_seq.sum()
    loss.backward()
    weights = torch.cat(net.decoder.attention_weights, dim=1)  # Tout x [B, 1, T] -> [B, Tout, T]
    entries.update(logits=logits.detach().numpy(), hidden=dec_state[1].detach().numpy(),
                   attention_weights=weights.detach().numpy(),
                   loss_per_seq=loss_per_seq.detach().numpy(), loss=loss.detach().numpy())
    for name, p in net.named_parameters():
        entries[f"grad.{name}"] = p.grad.numpy()

    # float32: d2l's train_seq2seq loop on this one batch.
    net32 = make_model(attention, torch.float32)
    net32.load_state_dict({name: t.to(torch.float32) for name, t in state.items()})
    optimizer = torch.optim.Adam(net32.parameters(), lr=LR)
    net32.train()
    losses = []
    for _ in range(ADAM_STEPS):
        optimizer.zero_grad()
        _, _, l = run(net32, src, src_valid, dec_input, labels, tgt_valid)
        l.sum().backward()
        d2l.grad_clipping(net32, 1)
        optimizer.step()
        losses.append(l.sum().item())
    entries["adam_losses"] = np.array(losses, dtype=np.float32)

    path = os.path.join(OUT, f"seq2seq_{attention}.npz")
    np.savez_compressed(path, **entries)
    print(f"{path}: loss {loss.item():.6f}, adam {losses[0]:.5f} -> {losses[-1]:.5f}")


if __name__ == "__main__":
    # make_seq2seq_fixtures.py [KIND...]: the fixtures of those kinds (default: all)
    os.makedirs(OUT, exist_ok=True)
    for kind in sys.argv[1:] or SEEDS:
        write(kind)
