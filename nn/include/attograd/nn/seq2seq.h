// d2l's sequence to sequence model with attention (section "Bahdanau
// Attention"): a GRU encoder, and a GRU decoder that, before every target
// step, attends from its last layer's hidden state to the encoder's outputs
// and feeds the context along with the step's embedded token. The book's
// PyTorch code, with its parameter names, so that a state dict moves between
// attograd and d2l as a file copy (scripts/d2l_torch.py is that code;
// tests/test_seq2seq.cpp checks parity with it).
//
// Legend: B batch, T source steps, Tout target steps, E embedding size,
// H hidden units, L GRU layers, V vocabulary.
//
//   auto net = nn::make_bahdanau_seq2seq(src_vocab, tgt_vocab, 32, 32, 2, 0.1);
//   nn::init_seq2seq(*net);                               // d2l's xavier init
//   Tensor logits = (*net)(src, dec_input, src_valid_lens);      // [B, Tout, V]
//   Tensor l = nn::masked_softmax_ce_loss(logits, labels, tgt_valid_lens).sum();
//
// State-dict names (torch's order): encoder.embedding.weight,
// encoder.rnn.{weight_ih,weight_hh,bias_ih,bias_hh}_l{0..L-1}[_reverse],
// decoder.attention.* (the scoring function's parameters: additive's
// {W_k,W_q,w_v}.weight as d2l's; general's W_a.weight; multihead's
// {W_q,W_k,W_v,W_o}.weight; dot has none),
// decoder.embedding.weight, decoder.rnn.*, decoder.dense.{weight,bias},
// decoder.W_s.weight (bidirectional only). The bidirectional model's PyTorch
// twin is scripts/bahdanau_torch.py.
//
// The encoder's hidden size may differ from the decoder's (encoder_hiddens,
// per direction; 0: the decoder's H), for the bidirectional encoder: with
// H/2 per direction its keys are H wide, the queries' width, so that dot's
// score reads it, and the encoder and the scoring function can be varied
// one at a time (issue 63's comparison). d2l's one-way decoder starts from
// the encoder's final states as they are, so its encoder keeps H.
#pragma once

#include <memory>

#include "attograd/nn/encoder_decoder.h"
#include "attograd/nn/layers.h"
#include "attograd/nn/rnn.h"
#include "attograd/nn/scoring.h"

namespace ag::nn {

// d2l's Seq2SeqEncoder: embedding, then a multi-layer GRU over time.
//   forward(src [B, T] int64, valid_lens) -> {outputs [T, B, D*H], state [D*L, B, H]}
// d2l's encoder does not use the valid lengths (the GRU runs over the
// padding too, and the decoder's attention masks it).
// bidirectional = true is Bahdanau et al.'s encoder (D = 2): a bidirectional
// GRU, whose outputs cat(forward h_t, backward h_t) [T, B, 2H] have each read
// the whole source; d2l's (D = 1) has read position t only up to t. It runs
// over the valid steps only (GRU::forward's lengths, torch's packed
// sequences): the backward direction starts at each source's last token, so
// neither the outputs at valid steps nor the decoder's initial state depend
// on how much padding a batch has (without src_valid_lens: every step).
class Seq2SeqEncoder : public Encoder {
 public:
  Seq2SeqEncoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens, int64_t num_layers,
                 double dropout = 0.0, bool bidirectional = false);
  std::vector<Tensor> forward(const Tensor& src, const Tensor& src_valid_lens) override;

  Embedding embedding;  // weight [vocab_size, E]
  GRU rnn;              // GRU(E, H, L, dropout, bidirectional)
};

// d2l's Seq2SeqAttentionDecoder.
//   init_state({outputs [T, B, K], state [D*L, B, H]}, valid_lens [B])
//     -> tensors {enc_outputs [B, T, K], hidden [L, B, H], enc_valid_lens [B],
//                 memory keys, memory values, source_of_row int64 [B]}
//     the last two: the attention's remember(enc_outputs, enc_outputs), the
//     part of the scores that does not depend on the query (additive's
//     k W_k^T), computed once per source: a prediction that calls forward
//     once per output step reuses it at every step.
//   forward(tgt [B, Tout] int64, state) -> logits [B, Tout, V]; state's
//     hidden becomes the last step's; alignment() is each step's attention
//     weights, [B, Tout, T].
// K, the size of the encoder's outputs (the attention's keys and values), is
// H after d2l's encoder and 2 He after the bidirectional one
// (bidirectional_encoder = true; He = encoder_hiddens, H unless given). Then,
// as in Bahdanau et al.'s appendix, the decoder starts from the backward
// direction's state at the first source position (its last step): every
// layer k's initial state is
//   s0_k = tanh(W_s h_n[2k + 1])       W_s [H, He], no bias
// where d2l's decoder takes the encoder's final states as they are (so its
// encoder's He must be H: ag::Error otherwise).
class Seq2SeqAttentionDecoder : public Decoder {
 public:
  Seq2SeqAttentionDecoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens,
                          int64_t num_layers, double dropout = 0.0,
                          const std::string& scoring = "additive",
                          bool bidirectional_encoder = false, int64_t num_heads = 1,
                          int64_t encoder_hiddens = 0);
  DecoderState init_state(const std::vector<Tensor>& enc_outputs,
                          const Tensor& src_valid_lens) override;
  Tensor forward(const Tensor& tgt, DecoderState& state) override;
  // [B, Tout, T] of the last forward (detached); undefined before the first.
  Tensor alignment() const override;
  // Every state tensor keeps the rows `rows` [B'] (beam search); the
  // source's are not copied when each row still reads the source it read.
  void select_state(DecoderState& state, const Tensor& rows) const override;

  const std::string scoring;  // its name in the table (scoring.h)
  const bool bidirectional_encoder;
  const int64_t encoder_hiddens;  // He: the encoder's hidden size per direction
  const int64_t key_size;         // K: H, or 2 He after a bidirectional encoder
  // The scoring function `scoring` from the table, built for queries of H
  // and keys of K features (additive: d2l's AdditiveAttention(K, H, H));
  // registered as "attention", first, as in d2l. Its context is C wide: K,
  // or H for multihead. dot needs K = H: with a bidirectional encoder it is
  // refused, naming both widths.
  std::unique_ptr<ScoringFunction> attention;
  Embedding embedding;  // weight [vocab_size, E]
  GRU rnn;              // GRU(E + C, H, L, dropout): input cat(context, embedded token)
  Linear dense;         // H -> vocab_size
  // W_s [H, He] (bidirectional_encoder only, registered last as "W_s";
  // null otherwise, so d2l's state dict is unchanged).
  std::unique_ptr<Linear> W_s;

 private:
  // Each step's attention weights [B, 1, T] (detached) of the last forward.
  std::vector<Tensor> step_weights_;
};

// d2l's Seq2SeqEncoder + Seq2SeqAttentionDecoder as an EncoderDecoder;
// bidirectional = true: Bahdanau et al.'s encoder and initial state (above);
// scoring: a name of the table (scoring.h); num_heads: multihead's heads;
// encoder_hiddens: the encoder's hidden size per direction (0: num_hiddens).
std::unique_ptr<EncoderDecoder> make_bahdanau_seq2seq(
    int64_t src_vocab_size, int64_t tgt_vocab_size, int64_t embed_size, int64_t num_hiddens,
    int64_t num_layers, double dropout = 0.0, const std::string& scoring = "additive",
    bool bidirectional = false, int64_t num_heads = 1, int64_t encoder_hiddens = 0);

// Xavier (Glorot) uniform, in place: U(-a, a), a = gain * sqrt(6 / (fan_in +
// fan_out)) for a 2-D weight [fan_out, fan_in], as torch.nn.init.xavier_uniform_.
void xavier_uniform_(Tensor& weight, double gain = 1.0);

// d2l's init of train_seq2seq (net.apply(xavier_init_weights)): every Linear
// weight and every GRU weight_* drawn by xavier_uniform_; biases and
// embeddings keep their init. Call it before creating the optimizer (the
// values are written in place, so an optimizer made earlier also sees them).
void init_seq2seq(Module& module);

}  // namespace ag::nn
