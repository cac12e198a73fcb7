// d2l's Transformer (section "The Transformer Architecture", the edition with
// TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout,
// use_bias)), with the book's module names, so that a state dict moves
// between attograd and d2l/PyTorch as a file copy:
//   encoder.embedding.weight, encoder.blks.block0.attention.W_q.weight,
//   encoder.blks.block0.addnorm1.ln.weight, encoder.blks.block0.ffn.dense1.weight,
//   decoder.blks.block1.attention2.W_o.weight, decoder.dense.weight, ...
// The PyTorch reference is scripts/d2l_torch.py; docs/transformer.md walks
// through the model, its shapes and its two masks.
//
// Legend: B batch, T source steps, Tout target steps, d = num_hiddens,
// H heads, V vocabulary.
//
// Two changes from the book, both about prediction one step at a time (the
// book's full-sequence training is unchanged):
//  * the positional encoding of a step is that of its position: the book
//    encodes every step it decodes as position 0;
//  * the decoder's look-ahead mask is on whenever `causal` (the book: in
//    training mode only). One step after the cache sees every key either way;
//    a whole target in eval mode is now masked as in training, so the cached
//    and the full-sequence decoder give the same logits.
//
// One option the book has not: norm_first (torch.nn.TransformerEncoderLayer's
// name for it), the pre-LN block of tensor2tensor's transformer_base and
// later Transformers. The book's block normalises after each residual sum,
// ln(X + sublayer(X)) (post-LN); pre-LN normalises each sublayer's input and
// leaves the sum alone, X + sublayer(ln(X)), so that the residual path from
// the embeddings to the output is never rescaled, and a final LayerNorm
// ("norm", torch.nn.Transformer's encoder.norm / decoder.norm) closes each
// stack. The parameters keep the book's names: addnormK.ln is the LayerNorm
// of the K-th sublayer's input. Post-LN trains badly without a warm-up of the
// learning rate (Xiong et al. 2020, "On Layer Normalization in the
// Transformer Architecture"); pre-LN is the usual cure.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attograd/nn/attention.h"
#include "attograd/nn/encoder_decoder.h"
#include "attograd/nn/layers.h"
#include "attograd/nn/module.h"
#include "attograd/nn/norm.h"

namespace ag::nn {

// d2l's nn.Sequential used as a list of blocks: children registered under the
// names given to add_module (d2l: "block" + str(i)), so their parameters read
// "block0.attention.W_q.weight". Owns them; iterated in insertion order.
template <typename M>
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}

  // Registers `module` as `name` (unique, non-empty) and returns it.
  M& add_module(const std::string& name, std::unique_ptr<M> module) {
    AG_CHECK(module != nullptr, "Sequential.add_module", "module '" + name + "' is null");
    AG_CHECK(!name.empty() && name.find('.') == std::string::npos, "Sequential.add_module",
             "name '" + name + "' must be non-empty and contain no '.'");
    for (const std::string& taken : names_)
      AG_CHECK(taken != name, "Sequential.add_module", "a module named '" + name + "' exists");
    register_module(name, module.get());
    names_.push_back(name);
    modules_.push_back(std::move(module));
    return *modules_.back();
  }

  size_t size() const { return modules_.size(); }
  // The i-th module added; i < size() (checked).
  M& operator[](size_t i) const {
    AG_CHECK(
        i < modules_.size(), "Sequential",
        "index " + std::to_string(i) + " out of range for " + std::to_string(size()) + " modules");
    return *modules_[i];
  }
  const std::string& name(size_t i) const { return names_.at(i); }

 private:
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<M>> modules_;
};

// Position-wise feed-forward network: the same two-layer MLP at every step,
//   dense2(relu(dense1(X))):  [..., ffn_num_input] -> [..., ffn_num_outputs].
// (d2l's LazyLinear infers ffn_num_input; here it is given, as in the book's
// earlier edition.) Parameters dense1.{weight, bias}, dense2.{weight, bias}.
class PositionWiseFFN : public Module {
 public:
  PositionWiseFFN(int64_t ffn_num_input, int64_t ffn_num_hiddens, int64_t ffn_num_outputs);
  Tensor forward(const Tensor& X) const;
  Tensor operator()(const Tensor& X) const { return forward(X); }

  Linear dense1, dense2;
};

// Residual connection then layer normalization: ln(dropout(Y) + X), X and Y
// of one shape [..., *norm_shape]. Parameters ln.weight, ln.bias.
class AddNorm : public Module {
 public:
  AddNorm(Shape norm_shape, double dropout);
  Tensor forward(const Tensor& X, const Tensor& Y) const;
  Tensor operator()(const Tensor& X, const Tensor& Y) const { return forward(X, Y); }
  // The pre-LN residual (norm_first): X + dropout(Y), Y the sublayer's
  // output on ln(X); nothing normalised.
  Tensor add(const Tensor& X, const Tensor& Y) const;

  Dropout dropout;
  LayerNorm ln;
};

// d2l's sinusoidal positional encoding: P [1, max_len, d] with
//   P[0, i, 2j] = sin(i / 10000^(2j/d)),  P[0, i, 2j+1] = cos(i / 10000^(2j/d)),
// forward(X [B, T, d], offset) = dropout(X + P[:, offset : offset + T]).
// `offset` is the position of X's first step (the steps already decoded).
// No parameters; P is float64 and is rounded to X's dtype when added.
class PositionalEncoding : public Module {
 public:
  PositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000);
  Tensor forward(const Tensor& X, int64_t offset = 0) const;
  Tensor operator()(const Tensor& X, int64_t offset = 0) const { return forward(X, offset); }

  Dropout dropout;
  Tensor P;  // [1, max_len, num_hiddens], float64; not a parameter (as in d2l)
};

// One encoder block: self-attention over the source (padding masked by the
// source valid lengths), then the feed-forward network, each followed by
// AddNorm (norm_first: each reading its input's LayerNorm, header).
// X [B, T, d] -> [B, T, d].
class TransformerEncoderBlock : public Module {
 public:
  TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                          double dropout, bool use_bias = false, bool norm_first = false);
  Tensor forward(const Tensor& X, const Tensor& valid_lens);

  const bool norm_first;
  MultiHeadAttention attention;
  AddNorm addnorm1;
  PositionWiseFFN ffn;
  AddNorm addnorm2;
};

// d2l's TransformerEncoder: embedding * sqrt(d) + positional encoding, then
// num_blks blocks (norm_first: pre-LN blocks, then `norm`).
// src [B, T] int64, src_valid_lens [B] int64 (or undefined: no padding)
// -> {enc_outputs [B, T, d]}.
class TransformerEncoder : public Encoder {
 public:
  TransformerEncoder(int64_t vocab_size, int64_t num_hiddens, int64_t ffn_num_hiddens,
                     int64_t num_heads, int64_t num_blks, double dropout, bool use_bias = false,
                     bool norm_first = false);
  std::vector<Tensor> forward(const Tensor& src, const Tensor& src_valid_lens) override;

  // Per block, the self-attention weights of the last forward [B, H, T, T]
  // (undefined when need_weights was off).
  std::vector<Tensor> attention_weights() const;
  // true (default): every attention keeps its weights. false: attention runs
  // the streaming kernel (ag::flash_attention) wherever it can (not while
  // attention dropout is active in training), and keeps no weights.
  void set_need_weights(bool need_weights);

  int64_t num_hiddens;
  Embedding embedding;
  PositionalEncoding pos_encoding;
  Sequential<TransformerEncoderBlock> blks;
  // The stack's final LayerNorm over d (norm_first only, registered last as
  // "norm"; null otherwise, so d2l's state dict is unchanged).
  std::unique_ptr<LayerNorm> norm;
};

// The i-th decoder block: masked self-attention over the target steps so far,
// cross-attention over the encoder outputs (padding masked by the source
// valid lengths), the feed-forward network; each followed by AddNorm
// (norm_first: each reading its input's LayerNorm, header).
// X [B, Tout, d] -> [B, Tout, d].
class TransformerDecoderBlock : public Module {
 public:
  TransformerDecoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                          double dropout, int64_t i, bool norm_first = false);
  // state.tensors = {enc_outputs [B, T, d], enc_valid_lens [B] or undefined};
  // state.key_values[i]: the self-attention's keys and values of the steps
  // before X ([B, t, d], undefined before the first call), to which X's are
  // appended (d2l's state[2][i]): the block's inputs, or with norm_first
  // their addnorm1.ln (what pre-LN's self-attention reads). With `causal`,
  // query step s (position offset + s) sees keys 0 .. offset + s only.
  Tensor forward(const Tensor& X, DecoderState& state, bool causal);

  int64_t i;
  const bool norm_first;
  MultiHeadAttention attention1;
  AddNorm addnorm1;
  MultiHeadAttention attention2;
  AddNorm addnorm2;
  PositionWiseFFN ffn;
  AddNorm addnorm3;
};

// d2l's TransformerDecoder.  tgt [B, Tout] int64 -> logits [B, Tout, V].
// Training: the whole shifted target at once with the look-ahead mask.
// Prediction (eval mode): one step at a time, each block keeping the inputs
// of the steps so far in state.key_values.
class TransformerDecoder : public Decoder {
 public:
  TransformerDecoder(int64_t vocab_size, int64_t num_hiddens, int64_t ffn_num_hiddens,
                     int64_t num_heads, int64_t num_blks, double dropout, bool norm_first = false);
  DecoderState init_state(const std::vector<Tensor>& enc_outputs,
                          const Tensor& src_valid_lens) override;
  Tensor forward(const Tensor& tgt, DecoderState& state) override;
  // The last block's cross-attention of the last forward, averaged over the
  // heads, detached: [B, Tout, T]. Undefined before the first forward and
  // when need_weights is off.
  Tensor alignment() const override { return alignment_; }
  // enc_outputs, enc_valid_lens and every block's cache keep the rows `rows`
  // (all batch-first).
  void select_state(DecoderState& state, const Tensor& rows) const override;

  // Per block, the last forward's attention weights (undefined when
  // need_weights was off): self-attention [B, H, Tout, t] (t = steps so far,
  // cached and new) and cross-attention [B, H, Tout, T].
  std::vector<Tensor> self_attention_weights() const;
  std::vector<Tensor> cross_attention_weights() const;
  // As TransformerEncoder::set_need_weights.
  void set_need_weights(bool need_weights);

  // The look-ahead mask (default on). Off, a target step sees the steps after
  // it in training: the ablation that shows why the mask is needed (it
  // cheats in training and fails at prediction, where the future is unknown).
  bool causal = true;
  int64_t num_hiddens;
  Embedding embedding;
  PositionalEncoding pos_encoding;
  Sequential<TransformerDecoderBlock> blks;
  Linear dense;
  // As TransformerEncoder::norm: before dense (norm_first only; registered
  // last as "norm").
  std::unique_ptr<LayerNorm> norm;

 private:
  Tensor alignment_;
};

// The encoder and decoder together (EncoderDecoder, with typed access).
class Transformer : public EncoderDecoder {
 public:
  Transformer(std::unique_ptr<TransformerEncoder> encoder,
              std::unique_ptr<TransformerDecoder> decoder);
  TransformerEncoder& transformer_encoder() { return *encoder_; }
  TransformerDecoder& transformer_decoder() { return *decoder_; }
  // Both halves: see TransformerEncoder::set_need_weights.
  void set_need_weights(bool need_weights) override;

 private:
  TransformerEncoder* encoder_;
  TransformerDecoder* decoder_;
};

// The Transformer attograd-translate builds: defaults d = 32, FFN 64, 4 heads,
// 2 blocks, dropout 0.1, post-LN (d2l's; norm_first: pre-LN, header).
std::unique_ptr<Transformer> make_transformer(int64_t src_vocab, int64_t tgt_vocab,
                                              int64_t num_hiddens = 32,
                                              int64_t ffn_num_hiddens = 64, int64_t num_heads = 4,
                                              int64_t num_blks = 2, double dropout = 0.1,
                                              bool norm_first = false);

}  // namespace ag::nn
