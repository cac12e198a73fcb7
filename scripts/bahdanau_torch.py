"""The PyTorch twin of attograd's bidirectional seq2seq (nn/seq2seq.h with
bidirectional = true): Bahdanau et al.'s encoder, a bidirectional GRU whose
annotations cat(forward h_t, backward h_t) are the attention's keys and
values, and the decoder's initial state from the backward direction,
s0 = tanh(W_s h_backward) for every layer (the paper's appendix A.2.2).
Everything else is d2l's code (scripts/d2l_torch.py), so that a model trained
by attograd-translate --encoder bidirectional loads here with strict=True
under the same state-dict names:

    encoder.embedding.weight, encoder.rnn.{weight,bias}_{ih,hh}_l{k}[_reverse],
    decoder.attention.{W_k,W_q,w_v}.weight, decoder.embedding.weight,
    decoder.rnn.*, decoder.dense.{weight,bias}, decoder.W_s.weight

Imported by make_seq2seq_fixtures.py and check_translate_torch.py.
"""
import torch
from torch import nn

import d2l_torch as d2l


class BiSeq2SeqEncoder(d2l.Encoder):
    """Embedding + bidirectional multi-layer GRU over the valid steps only
    (packed sequences): the backward direction starts at each source's last
    token, as attograd's GRU with lengths. The outputs at padded steps are
    zeros here and carried states in attograd; the attention masks them."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout,
                          bidirectional=True)

    def forward(self, X, valid_lens, *args):
        X = self.embedding(X).permute(1, 0, 2)  # [T, B, E]
        packed = nn.utils.rnn.pack_padded_sequence(X, valid_lens.cpu(), enforce_sorted=False)
        output, state = self.rnn(packed)  # state [2L, B, H]
        output, _ = nn.utils.rnn.pad_packed_sequence(output, total_length=X.shape[0])
        return output, state  # [T, B, 2H]


class BiSeq2SeqAttentionDecoder(d2l.Seq2SeqAttentionDecoder):
    """d2l's decoder with keys and values of 2H features and the paper's
    initial state."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super().__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout,
                         attention="additive", **kwargs)
        self.attention = d2l.AdditiveAttention(2 * num_hiddens, num_hiddens, num_hiddens, dropout)
        self.rnn = nn.GRU(embed_size + 2 * num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.W_s = nn.Linear(num_hiddens, num_hiddens, bias=False)

    def init_state(self, enc_outputs, enc_valid_lens, *args):
        outputs, state = enc_outputs  # [T, B, 2H], [2L, B, H]
        hidden_state = torch.tanh(self.W_s(state[1::2]))  # each layer's backward: [L, B, H]
        return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)


def make_bidirectional(src_vocab, tgt_vocab, embed_size, num_hiddens, num_layers, dropout=0):
    return d2l.EncoderDecoder(
        BiSeq2SeqEncoder(src_vocab, embed_size, num_hiddens, num_layers, dropout),
        BiSeq2SeqAttentionDecoder(tgt_vocab, embed_size, num_hiddens, num_layers, dropout))
