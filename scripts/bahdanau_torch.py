"""The PyTorch twin of attograd's seq2seq with any of its scoring functions
(nn/scoring.h) and of its bidirectional encoder (nn/seq2seq.h with
bidirectional = true): Bahdanau et al.'s encoder, a bidirectional GRU whose
annotations cat(forward h_t, backward h_t) are the attention's keys and
values, and the decoder's initial state from the backward direction,
s0 = tanh(W_s h_backward) for every layer (the paper's appendix A.2.2).
Everything else is d2l's code (scripts/d2l_torch.py), so that a model trained
by attograd-translate loads here with strict=True under the same state-dict
names (the encoder's hidden size per direction may differ from the
decoder's, encoder_hiddens: H/2 gives keys of the queries' width, which dot
reads):

    encoder.embedding.weight, encoder.rnn.{weight,bias}_{ih,hh}_l{k}[_reverse],
    decoder.attention.* (additive: {W_k,W_q,w_v}.weight; general: W_a.weight;
    multihead: {W_q,W_k,W_v,W_o}.weight; dot: none), decoder.embedding.weight,
    decoder.rnn.*, decoder.dense.{weight,bias}, decoder.W_s.weight (bidirectional)

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


class GeneralAttention(nn.Module):
    """Luong et al.'s general score, q^T W_a k (attograd's scoring_general.cpp),
    in d2l's attention shape: W_a = nn.Linear(key_size, query_size), unscaled;
    or times `scale` (general_scaled: 1 / sqrt(key_size))."""

    def __init__(self, key_size, query_size, dropout, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.W_a = nn.Linear(key_size, query_size, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.scale = scale

    def forward(self, queries, keys, values, valid_lens):
        if self.scale != 1.0:
            queries = queries * self.scale
        scores = torch.bmm(queries, self.W_a(keys).transpose(1, 2))  # [B, Tq, Tk]
        self.attention_weights = d2l.masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(d2l.MultiHeadAttention):
    """d2l's MultiHeadAttention (bias=False); attention_weights is the mean of
    the heads' weights [B, Tq, Tk], the alignment attograd draws."""

    def forward(self, queries, keys, values, valid_lens):
        output = super().forward(queries, keys, values, valid_lens)
        weights = self.attention.attention_weights  # [B * heads, Tq, Tk]
        self.attention_weights = weights.reshape(-1, self.num_heads, *weights.shape[1:]).mean(1)
        return output


def make_attention(name, key_size, query_size, num_hiddens, num_heads, dropout):
    """attograd's scoring function `name` (nn/src/scoring_table.cpp) and the
    width of the context it returns."""
    if name == "additive":
        return d2l.AdditiveAttention(key_size, query_size, num_hiddens, dropout), key_size
    if name == "dot":
        assert key_size == query_size, "dot needs queries and keys of one width"
        return d2l.DotProductAttention(dropout), key_size
    if name == "general":
        return GeneralAttention(key_size, query_size, dropout), key_size
    if name == "general_scaled":
        return GeneralAttention(key_size, query_size, dropout, key_size ** -0.5), key_size
    if name == "multihead":
        return MultiHeadAttention(key_size, query_size, key_size, num_hiddens, num_heads,
                                  dropout), num_hiddens
    raise ValueError(f"unknown scoring function {name!r}")


class ScoredSeq2SeqDecoder(d2l.Seq2SeqAttentionDecoder):
    """d2l's decoder with any scoring function; bidirectional: keys and values
    of 2 He features (He the encoder's hidden size per direction, H unless
    encoder_hiddens) and the paper's initial state."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0,
                 attention="additive", bidirectional=False, num_heads=1, encoder_hiddens=None,
                 **kwargs):
        super().__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout,
                         attention="additive", **kwargs)
        encoder_hiddens = encoder_hiddens or num_hiddens
        key_size = 2 * encoder_hiddens if bidirectional else num_hiddens
        self.attention, context = make_attention(attention, key_size, num_hiddens, num_hiddens,
                                                 num_heads, dropout)
        self.rnn = nn.GRU(embed_size + context, num_hiddens, num_layers, dropout=dropout)
        self.bidirectional = bidirectional
        if bidirectional:
            self.W_s = nn.Linear(encoder_hiddens, num_hiddens, bias=False)

    def init_state(self, enc_outputs, enc_valid_lens, *args):
        if not self.bidirectional:
            return super().init_state(enc_outputs, enc_valid_lens)
        outputs, state = enc_outputs  # [T, B, 2H], [2L, B, H]
        hidden_state = torch.tanh(self.W_s(state[1::2]))  # each layer's backward: [L, B, H]
        return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)


def make_model(src_vocab, tgt_vocab, embed_size, num_hiddens, num_layers, dropout=0,
               attention="additive", bidirectional=False, num_heads=1, encoder_hiddens=None):
    encoder = (BiSeq2SeqEncoder if bidirectional else d2l.Seq2SeqEncoder)(
        src_vocab, embed_size, encoder_hiddens or num_hiddens, num_layers, dropout)
    return d2l.EncoderDecoder(
        encoder, ScoredSeq2SeqDecoder(tgt_vocab, embed_size, num_hiddens, num_layers, dropout,
                                      attention, bidirectional, num_heads, encoder_hiddens))


def make_bidirectional(src_vocab, tgt_vocab, embed_size, num_hiddens, num_layers, dropout=0):
    return make_model(src_vocab, tgt_vocab, embed_size, num_hiddens, num_layers, dropout,
                      "additive", bidirectional=True)
