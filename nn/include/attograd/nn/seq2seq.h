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
// encoder.rnn.{weight_ih,weight_hh,bias_ih,bias_hh}_l{0..L-1},
// decoder.attention.{W_k,W_q,w_v}.weight (additive only),
// decoder.embedding.weight, decoder.rnn.*, decoder.dense.{weight,bias}.
#pragma once

#include <memory>

#include "attograd/nn/attention.h"
#include "attograd/nn/encoder_decoder.h"
#include "attograd/nn/layers.h"
#include "attograd/nn/rnn.h"

namespace ag::nn {

// Additive: the book's AdditiveAttention(H, H, H, dropout) (Bahdanau).
// Dot: DotProductAttention(dropout), scores q.k / sqrt(H) (Luong-style), no
// attention parameters.
enum class AttentionKind { Additive, Dot };

// d2l's Seq2SeqEncoder: embedding, then a multi-layer GRU over time.
//   forward(src [B, T] int64, valid_lens) -> {outputs [T, B, H], state [L, B, H]}
// The valid lengths are not used (as in d2l: the GRU runs over the padding
// too, and the decoder's attention masks it).
class Seq2SeqEncoder : public Encoder {
 public:
  Seq2SeqEncoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens, int64_t num_layers,
                 double dropout = 0.0);
  std::vector<Tensor> forward(const Tensor& src, const Tensor& src_valid_lens) override;

  Embedding embedding;  // weight [vocab_size, E]
  GRU rnn;              // GRU(E, H, L, dropout)
};

// d2l's Seq2SeqAttentionDecoder.
//   init_state({outputs [T, B, H], state [L, B, H]}, valid_lens [B])
//     -> tensors {enc_outputs [B, T, H], hidden [L, B, H], enc_valid_lens [B]}
//   forward(tgt [B, Tout] int64, state) -> logits [B, Tout, V]; state's
//     hidden becomes the last step's; alignment() is each step's attention
//     weights, [B, Tout, T].
class Seq2SeqAttentionDecoder : public Decoder {
 public:
  Seq2SeqAttentionDecoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens,
                          int64_t num_layers, double dropout = 0.0,
                          AttentionKind kind = AttentionKind::Additive);
  DecoderState init_state(const std::vector<Tensor>& enc_outputs,
                          const Tensor& src_valid_lens) override;
  Tensor forward(const Tensor& tgt, DecoderState& state) override;
  // [B, Tout, T] of the last forward (detached); undefined before the first.
  Tensor alignment() const override;

  const AttentionKind kind;
  // AdditiveAttention or DotProductAttention, by kind (registered as
  // "attention", first, as in d2l).
  std::unique_ptr<Module> attention;
  Embedding embedding;  // weight [vocab_size, E]
  GRU rnn;              // GRU(E + H, H, L, dropout): input cat(context, embedded token)
  Linear dense;         // H -> vocab_size

 private:
  // Each step's attention weights [B, 1, T] (detached) of the last forward.
  std::vector<Tensor> step_weights_;
};

// d2l's Seq2SeqEncoder + Seq2SeqAttentionDecoder as an EncoderDecoder.
std::unique_ptr<EncoderDecoder> make_bahdanau_seq2seq(int64_t src_vocab_size,
                                                      int64_t tgt_vocab_size, int64_t embed_size,
                                                      int64_t num_hiddens, int64_t num_layers,
                                                      double dropout = 0.0,
                                                      AttentionKind kind = AttentionKind::Additive);

// Xavier (Glorot) uniform, in place: U(-a, a), a = gain * sqrt(6 / (fan_in +
// fan_out)) for a 2-D weight [fan_out, fan_in], as torch.nn.init.xavier_uniform_.
void xavier_uniform_(Tensor& weight, double gain = 1.0);

// d2l's init of train_seq2seq (net.apply(xavier_init_weights)): every Linear
// weight and every GRU weight_* drawn by xavier_uniform_; biases and
// embeddings keep their init. Call it before creating the optimizer (the
// values are written in place, so an optimizer made earlier also sees them).
void init_seq2seq(Module& module);

}  // namespace ag::nn
