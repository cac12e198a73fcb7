"""d2l's PyTorch attention code (Dive into Deep Learning, "Attention Scoring
Functions", "Multi-Head Attention", "The Encoder-Decoder Architecture",
"Sequence to Sequence Learning", "Bahdanau Attention" and "The Transformer
Architecture", the edition with explicit sizes), as the reference for
attograd's nn::AdditiveAttention, nn::DotProductAttention,
nn::MultiHeadAttention, the seq2seq models of nn/seq2seq.h and the
Transformer of nn/transformer.h (PositionWiseFFN, AddNorm, PositionalEncoding,
the encoder and decoder blocks, TransformerEncoder, TransformerDecoder).
Parameter names and shapes are what attograd's state dicts must match.

Imported by make_keras_optim_fixtures.py, make_seq2seq_fixtures.py,
make_transformer_fixtures.py, check_state_dict_roundtrip.py and
bench_attention_torch.py (run them with
/usr/bin/python3, which has torch).
"""
import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    """X [N, T]: entries at or beyond valid_len[n] become `value`."""
    maxlen = X.size(1)
    mask = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    """Softmax over the last axis of X [B, Tq, Tk], masking with -1e6."""
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        # [B, Tq, 1, h] + [B, 1, Tk, h] -> [B, Tq, Tk, h]
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)  # [B, Tq, Tk]
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    """[B, T, h] -> [B * heads, T, h / heads]"""
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    """[B * heads, T, h / heads] -> [B, T, h]"""
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, key_size, query_size, value_size, num_hiddens, num_heads, dropout,
                 bias=False, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        queries = transpose_qkv(self.W_q(queries), self.num_heads)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)
        values = transpose_qkv(self.W_v(values), self.num_heads)
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)
        return self.W_o(transpose_output(output, self.num_heads))


# ---- "The Encoder-Decoder Architecture" -------------------------------------------------
class Encoder(nn.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def forward(self, X, *args):
        raise NotImplementedError


class Decoder(nn.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def init_state(self, enc_outputs, *args):
        raise NotImplementedError

    def forward(self, X, state):
        raise NotImplementedError


class EncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X, dec_X, *args):
        enc_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_outputs, *args)
        return self.decoder(dec_X, dec_state)


# ---- "Sequence to Sequence Learning" ----------------------------------------------------
class Seq2SeqEncoder(Encoder):
    """Embedding + multi-layer GRU; the valid lengths are not used."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X, *args):
        X = self.embedding(X)  # [B, T] -> [B, T, E]
        X = X.permute(1, 0, 2)  # time-major: [T, B, E]
        output, state = self.rnn(X)  # [T, B, H], [L, B, H]
        return output, state


class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    """pred [B, T, V], label [B, T], valid_len [B] -> [B]: the mean over T of
    the cross-entropy, zero at padded steps."""

    def forward(self, pred, label, valid_len):
        weights = torch.ones_like(label)
        weights = sequence_mask(weights, valid_len)
        self.reduction = "none"
        unweighted_loss = super().forward(pred.permute(0, 2, 1), label)
        weighted_loss = (unweighted_loss * weights).mean(dim=1)
        return weighted_loss


def grad_clipping(net, theta):
    """d2l's clipping: scale every gradient by theta / norm when norm > theta."""
    params = [p for p in net.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm


def init_seq2seq(module):
    """d2l's xavier_init_weights of train_seq2seq: Xavier-uniform Linear
    weights and GRU weights (biases and embeddings keep PyTorch's init).
    Applied with net.apply(init_seq2seq)."""
    if type(module) == nn.Linear:
        nn.init.xavier_uniform_(module.weight)
    if type(module) == nn.GRU:
        for param in module._flat_weights_names:
            if "weight" in param:
                nn.init.xavier_uniform_(module._parameters[param])


# ---- "Bahdanau Attention" ---------------------------------------------------------------
class AttentionDecoder(Decoder):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    @property
    def attention_weights(self):
        raise NotImplementedError


class Seq2SeqAttentionDecoder(AttentionDecoder):
    """attention="dot" is attograd's Luong-style variant (DotProductAttention,
    no attention parameters); "additive" is the book's."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0,
                 attention="additive", **kwargs):
        super().__init__(**kwargs)
        if attention == "additive":
            self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)
        else:
            self.attention = DotProductAttention(dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens, *args):
        # outputs [T, B, H] -> [B, T, H]; hidden_state [L, B, H]
        outputs, hidden_state = enc_outputs
        return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)

    def forward(self, X, state):
        # enc_outputs [B, T, H], hidden_state [L, B, H]
        enc_outputs, hidden_state, enc_valid_lens = state
        X = self.embedding(X).permute(1, 0, 2)  # [Tout, B, E]
        outputs, self._attention_weights = [], []
        for x in X:
            query = torch.unsqueeze(hidden_state[-1], dim=1)  # [B, 1, H]
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)  # [B, 1, H]
            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)  # [B, 1, H + E]
            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)  # [1, B, H]
            outputs.append(out)
            self._attention_weights.append(self.attention.attention_weights)
        outputs = self.dense(torch.cat(outputs, dim=0))  # [Tout, B, V]
        return outputs.permute(1, 0, 2), [enc_outputs, hidden_state, enc_valid_lens]

    @property
    def attention_weights(self):
        return self._attention_weights


# ---- "The Transformer Architecture" ------------------------------------------------------
# The book's edition with TransformerEncoderBlock(num_hiddens, ffn_num_hiddens,
# num_heads, dropout, use_bias). Where the book uses nn.LazyLinear the input
# size is given explicitly (the parameters are the same). Two deliberate
# changes, both about prediction one step at a time:
#  * PositionalEncoding.forward takes `offset`, the position of X's first step:
#    the book adds P[:, :1] to every step it decodes, so step t is encoded as
#    position 0 and the cached decoder disagrees with the full-sequence one;
#  * the decoder block's self-attention masks the future whenever `causal`
#    (the book: only in training mode), with lengths offset + 1 .. offset + T;
#    one step after the cache sees every key, as the book's unmasked call.
# And an option the book has not, norm_first (torch.nn.TransformerEncoderLayer's
# name): pre-LN blocks, X + dropout(sublayer(ln(X))) with the book's addnormK.ln
# as each sublayer's LayerNorm, and a final LayerNorm "norm" closing each stack
# (torch.nn.Transformer's encoder.norm / decoder.norm). make_transformer_fixtures.py
# checks these blocks against torch.nn.TransformerEncoderLayer/DecoderLayer.


class PositionWiseFFN(nn.Module):
    """dense2(relu(dense1(X))) over the last axis."""

    def __init__(self, ffn_num_input, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    """Residual connection followed by layer normalization: ln(dropout(Y) + X)."""

    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class PositionalEncoding(nn.Module):
    """X + P[:, offset:offset + T] (sin on even features, cos on odd), then dropout."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # The book builds P in float32; float64 here, so that parity is to 1e-10.
        self.P = torch.zeros((1, max_len, num_hiddens), dtype=torch.float64)
        X = torch.arange(max_len, dtype=torch.float64).reshape(-1, 1) / torch.pow(
            10000, torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens)
        self.P[:, :, 0::2] = torch.sin(X)
        self.P[:, :, 1::2] = torch.cos(X)

    def forward(self, X, offset=0):
        X = X + self.P[:, offset:offset + X.shape[1], :].to(X.dtype)
        return self.dropout(X)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False,
                 norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.attention = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens,
                                            num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        if self.norm_first:
            N = self.addnorm1.ln(X)
            Y = X + self.addnorm1.dropout(self.attention(N, N, N, valid_lens))
            return Y + self.addnorm2.dropout(self.ffn(self.addnorm2.ln(Y)))
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class TransformerEncoder(nn.Module):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout,
                 use_bias=False, norm_first=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block" + str(i), TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias, norm_first))
        self.norm = nn.LayerNorm(num_hiddens) if norm_first else None

    def forward(self, X, valid_lens):
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[i] = blk.attention.attention.attention_weights
        return X if self.norm is None else self.norm(X)


class TransformerDecoderBlock(nn.Module):
    # The i-th block in the Transformer decoder
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, i, causal=True,
                 norm_first=False):
        super().__init__()
        self.i = i
        self.causal = causal
        self.norm_first = norm_first
        self.attention1 = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens,
                                             num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens,
                                             num_heads, dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def forward(self, X, state):
        enc_outputs, enc_valid_lens = state[0], state[1]
        # state[2][i]: the keys and values of self-attention of the steps
        # decoded so far (None before the first call): this block's inputs,
        # or with norm_first their addnorm1.ln.
        Q = self.addnorm1.ln(X) if self.norm_first else X
        offset = 0 if state[2][self.i] is None else state[2][self.i].shape[1]
        if state[2][self.i] is None:
            key_values = Q
        else:
            key_values = torch.cat((state[2][self.i], Q), dim=1)
        state[2][self.i] = key_values
        if self.causal:
            batch_size, num_steps, _ = X.shape
            # dec_valid_lens [B, T]: every row is [offset + 1, ..., offset + T]
            dec_valid_lens = torch.arange(offset + 1, offset + num_steps + 1).repeat(batch_size, 1)
        else:
            dec_valid_lens = None
        if self.norm_first:
            Y = X + self.addnorm1.dropout(self.attention1(Q, key_values, key_values,
                                                          dec_valid_lens))
            N = self.addnorm2.ln(Y)
            Z = Y + self.addnorm2.dropout(self.attention2(N, enc_outputs, enc_outputs,
                                                          enc_valid_lens))
            return Z + self.addnorm3.dropout(self.ffn(self.addnorm3.ln(Z))), state
        X2 = self.attention1(X, key_values, key_values, dec_valid_lens)  # self-attention
        Y = self.addnorm1(X, X2)
        Y2 = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens)  # encoder-decoder
        Z = self.addnorm2(Y, Y2)
        return self.addnorm3(Z, self.ffn(Z)), state


class TransformerDecoder(nn.Module):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout,
                 causal=True, norm_first=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.num_blks = num_blks
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block" + str(i), TransformerDecoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, i, causal, norm_first))
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.norm = nn.LayerNorm(num_hiddens) if norm_first else None

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, [None] * self.num_blks]

    def forward(self, X, state):
        offset = 0 if state[2][0] is None else state[2][0].shape[1]
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens), offset)
        self._attention_weights = [[None] * len(self.blks) for _ in range(2)]
        for i, blk in enumerate(self.blks):
            X, state = blk(X, state)
            # Decoder self-attention weights
            self._attention_weights[0][i] = blk.attention1.attention.attention_weights
            # Encoder-decoder attention weights
            self._attention_weights[1][i] = blk.attention2.attention.attention_weights
        return self.dense(X if self.norm is None else self.norm(X)), state
