#!/usr/bin/python3
"""A model trained and saved by attograd-translate, loaded into d2l's PyTorch
model (scripts/d2l_torch.py) with load_state_dict(strict=True), gives the same
greedy outputs on held-out inputs as attograd-translate did: the seq2seq with
attention (any scoring function of attograd's table, and Bahdanau et al.'s
bidirectional encoder when the file says so: their twin is
scripts/bahdanau_torch.py), or the Transformer (--model
transformer; its look-ahead flag is read from the file too). g2p models
(letters to sounds) are checked on their test words, outputs compared as
phonemes joined by spaces.

  scripts/check_translate_torch.py BUILD_DIR [--model bahdanau] [--task dates]
                                   [--attention additive] [--encoder unidirectional]
                                   [--heads N] [--steps 1500] [--count 200] [--keep DIR]
  scripts/check_translate_torch.py BUILD_DIR --load MODEL.npz [--load MODEL2.npz ...]
                                   [--seed S] [--count 200]

Runs BUILD_DIR/attograd-translate --model M --task T [--attention A] --steps N --save M.npz
--dump-heldout COUNT H.tsv (or, with --load, --load MODEL.npz --seed S
--dump-heldout COUNT H.tsv: the held-out set of the seed it was trained
with), then decodes every held-out source of H.tsv with
d2l's predict_seq2seq (one sentence at a time, characters as tokens) and
compares with the program's output. Several --load files are an ensemble
(translate/ensemble.h): at every step the models' softmaxes averaged, the
argmax of the mean taken. Prints "agree K of COUNT" and exits 1
unless all agree. Run with /usr/bin/python3 (it has torch).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bahdanau_torch  # noqa: E402
import d2l_torch  # noqa: E402


def meta_text(npz, name):
    """A meta.* entry: int64 byte values -> str."""
    return bytes(npz[name].astype(np.uint8)).decode()


def load_translate_model(path):
    """The README's recipe: d2l's model from an attograd-translate .npz, strict=True."""
    npz = np.load(path)
    embed, hidden, layers, src_steps, tgt_steps = (int(v) for v in npz["meta.sizes"])
    dropout = float(npz["meta.dropout"][0])
    src_vocab = meta_text(npz, "meta.src_vocab").split("\n")
    tgt_vocab = meta_text(npz, "meta.tgt_vocab").split("\n")
    model = meta_text(npz, "meta.model")
    if model == "transformer":
        heads, ffn, blocks, causal = (int(v) for v in npz["meta.transformer"])
        net = d2l_torch.EncoderDecoder(
            d2l_torch.TransformerEncoder(len(src_vocab), hidden, ffn, heads, blocks, dropout),
            d2l_torch.TransformerDecoder(len(tgt_vocab), hidden, ffn, heads, blocks, dropout,
                                         causal=bool(causal)))
    else:
        assert model == "bahdanau", model
        attention = meta_text(npz, "meta.attention")
        bidirectional = ("meta.encoder" in npz.files and
                         meta_text(npz, "meta.encoder") == "bidirectional")
        heads = int(npz["meta.heads"][0]) if "meta.heads" in npz.files else 1
        if not bidirectional and attention in ("additive", "dot"):
            # d2l's own code, unchanged
            net = d2l_torch.EncoderDecoder(
                d2l_torch.Seq2SeqEncoder(len(src_vocab), embed, hidden, layers, dropout),
                d2l_torch.Seq2SeqAttentionDecoder(len(tgt_vocab), embed, hidden, layers, dropout,
                                                  attention=attention))
        else:
            net = bahdanau_torch.make_model(len(src_vocab), len(tgt_vocab), embed, hidden, layers,
                                            dropout, attention, bidirectional, heads)
    state = {k: torch.from_numpy(npz[k]) for k in npz.files if not k.startswith("meta.")}
    net.load_state_dict(state, strict=True)
    net.eval()
    return net, src_vocab, tgt_vocab, src_steps, tgt_steps, meta_text(npz, "meta.task")


def predict_seq2seq(nets, text, src_vocab, tgt_vocab, src_steps, tgt_steps, separator=""):
    """d2l's predict_seq2seq with characters as source tokens ('<pad>' 0, '<bos>' 1,
    '<eos>' 2); the output tokens joined by `separator` (g2p's phonemes: a space).
    More than one net: an ensemble, the argmax of the mean of their softmaxes."""
    src_index = {t: i for i, t in enumerate(src_vocab)}
    pad, bos, eos = src_index["<pad>"], tgt_vocab.index("<bos>"), tgt_vocab.index("<eos>")
    src_tokens = [src_index[c] for c in text] + [src_index["<eos>"]]
    enc_valid_len = torch.tensor([len(src_tokens)])
    src_tokens = (src_tokens + [pad] * src_steps)[:src_steps]  # truncate_pad
    enc_X = torch.tensor([src_tokens], dtype=torch.long)
    with torch.no_grad():
        states = [net.decoder.init_state(net.encoder(enc_X, enc_valid_len), enc_valid_len)
                  for net in nets]
        dec_X = torch.tensor([[bos]], dtype=torch.long)
        output = []
        for _ in range(tgt_steps):
            probs = 0
            for k, net in enumerate(nets):
                Y, states[k] = net.decoder(dec_X, states[k])
                probs = probs + torch.softmax(Y, dim=2)
            dec_X = (Y if len(nets) == 1 else probs).argmax(dim=2)
            pred = int(dec_X.item())
            if pred == eos:
                break
            output.append(pred)
    return separator.join(tgt_vocab[i] for i in output)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--model", default="bahdanau", choices=["bahdanau", "transformer"])
    parser.add_argument("--task", default="dates")
    parser.add_argument("--attention", default="additive",
                        help="a scoring function of attograd's table (bahdanau)")
    parser.add_argument("--encoder", default="unidirectional",
                        choices=["unidirectional", "bidirectional"])
    parser.add_argument("--heads", type=int, help="multihead's heads")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--keep", help="directory to keep the model and the dump in")
    parser.add_argument("--load", action="append",
                        help="a model attograd-translate saved (no training); repeated: an "
                             "ensemble")
    parser.add_argument("--seed", type=int, default=0, help="with --load: its training seed")
    args = parser.parse_args()
    torch.set_num_threads(1)
    work = args.keep or tempfile.mkdtemp(prefix="check_translate_")
    program = os.path.join(args.build_dir, "attograd-translate")
    if args.load:
        models = args.load
        dump = os.path.join(work, "+".join(os.path.basename(m) for m in models) + "_heldout.tsv")
        loads = [flag for m in models for flag in ("--load", m)]
        subprocess.run([program, *loads, "--seed", str(args.seed), "--dump-heldout",
                        str(args.count), dump], check=True)
    else:
        name = args.model if args.model == "transformer" else f"{args.attention}_{args.encoder}"
        models = [os.path.join(work, f"{args.task}_{name}.npz")]
        dump = os.path.join(work, f"{args.task}_{name}_heldout.tsv")
        options = []
        if args.model == "bahdanau":
            options = ["--attention", args.attention, "--encoder", args.encoder]
            if args.heads:
                options += ["--heads", str(args.heads)]
        subprocess.run([program, "--model", args.model, "--task", args.task, *options, "--steps",
                        str(args.steps), "--save", models[0], "--dump-heldout", str(args.count), dump],
                       check=True)
    loaded = [load_translate_model(m) for m in models]
    nets = [net for net, *_ in loaded]
    _, src_vocab, tgt_vocab, src_steps, tgt_steps, task = loaded[0]
    separator = " " if task == "g2p" else ""
    agree, lines = 0, open(dump).read().splitlines()
    for line in lines:
        source, target, ours = line.split("\t")
        theirs = predict_seq2seq(nets, source, src_vocab, tgt_vocab, src_steps, tgt_steps,
                                 separator)
        if theirs == ours:
            agree += 1
        else:
            print(f"differ: {source!r}: attograd {ours!r}, PyTorch {theirs!r} (target {target!r})")
    print(f"agree {agree} of {len(lines)} ({' + '.join(models)})")
    sys.exit(0 if agree == len(lines) and lines else 1)


if __name__ == "__main__":
    main()
