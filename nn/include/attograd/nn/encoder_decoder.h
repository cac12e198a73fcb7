// d2l's encoder–decoder interface (section "The Encoder–Decoder
// Architecture"): the one shape every translation model here takes, so that
// training, greedy prediction, the translate program and the viewer work with
// the seq2seq of "Bahdanau Attention" and with the Transformer alike.
//
// Legend: B batch, T source steps, Tout target steps, V target vocabulary.
//
//   enc_outputs = encoder.forward(src [B, T] int64, src_valid_lens [B] int64)
//   state       = decoder.init_state(enc_outputs, src_valid_lens)
//   logits      = decoder.forward(tgt_in [B, Tout] int64, state)   // [B, Tout, V]
//
// Training feeds the whole shifted target at once (teacher forcing); greedy
// prediction calls decoder.forward one step at a time ([B, 1] in, [B, 1, V]
// out) with the same state, which the decoder updates as it goes.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "attograd/nn/module.h"

namespace ag::nn {

// What the encoder hands the decoder, and what the decoder carries from one
// call to the next. Which tensors mean what is the model's own business; d2l
// keeps the same in a Python list ("state").
//   seq2seq:     tensors = {enc_outputs [B, T, H], hidden [L, B, H], enc_valid_lens [B]}
//   Transformer: tensors = {enc_outputs [B, T, d], enc_valid_lens [B]},
//                key_values[i] = block i's decoder inputs so far (d2l's state[2])
struct DecoderState {
  std::vector<Tensor> tensors;
  std::vector<Tensor> key_values;
};

// The encoder: source tokens and their valid lengths -> its outputs.
class Encoder : public Module {
 public:
  using Module::Module;
  virtual std::vector<Tensor> forward(const Tensor& src, const Tensor& src_valid_lens) = 0;
};

// The decoder: target tokens and the state -> logits over the target
// vocabulary; the state is updated in place.
class Decoder : public Module {
 public:
  using Module::Module;
  virtual DecoderState init_state(const std::vector<Tensor>& enc_outputs,
                                  const Tensor& src_valid_lens) = 0;
  // tgt [B, Tout] int64 -> logits [B, Tout, V].
  virtual Tensor forward(const Tensor& tgt, DecoderState& state) = 0;
  // How the last forward's target steps looked at the source, for drawing:
  // [B, Tout, T], each row a distribution over the source steps (seq2seq:
  // the attention weights of each step; Transformer: the last block's
  // cross-attention, averaged over heads). Undefined before the first call.
  virtual Tensor alignment() const = 0;
  // Keeps the rows `rows` (int64 [B'], each in [0, B), repeats allowed) of
  // every tensor of the state along its batch axis, in that order: beam
  // search copies each input's state to its K candidates, and each step
  // keeps the candidates that survive (d2l's "Beam Search"; fairseq calls it
  // reorder_incremental_state).
  virtual void select_state(DecoderState& state, const Tensor& rows) const = 0;
};

// The two together, registered as "encoder" and "decoder" so that state-dict
// names read as d2l's (encoder.embedding.weight, decoder.dense.bias, ...).
class EncoderDecoder : public Module {
 public:
  EncoderDecoder(std::unique_ptr<Encoder> encoder, std::unique_ptr<Decoder> decoder)
      : Module("EncoderDecoder"), encoder_(std::move(encoder)), decoder_(std::move(decoder)) {
    register_module("encoder", encoder_.get());
    register_module("decoder", decoder_.get());
  }

  // src [B, T], tgt_in [B, Tout] (teacher forcing), src_valid_lens [B] -> [B, Tout, V].
  Tensor forward(const Tensor& src, const Tensor& tgt_in, const Tensor& src_valid_lens) {
    DecoderState state =
        decoder_->init_state(encoder_->forward(src, src_valid_lens), src_valid_lens);
    return decoder_->forward(tgt_in, state);
  }
  Tensor operator()(const Tensor& src, const Tensor& tgt_in, const Tensor& src_valid_lens) {
    return forward(src, tgt_in, src_valid_lens);
  }

  Encoder& encoder() { return *encoder_; }
  Decoder& decoder() { return *decoder_; }

  // Whether the next forwards keep their attention weights (the decoder's
  // alignment() and the per-head maps; default true). false lets a model
  // skip them where it can: the Transformer then streams its attention
  // (ag::flash_attention) and keeps no [B, H, Tq, Tk] tensor. Training that
  // shows nothing turns them off; prediction turns them back on. The seq2seq
  // keeps its per-step weights regardless (its alignment is part of its
  // state), so the default does nothing.
  virtual void set_need_weights(bool /*need_weights*/) {}

 private:
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Decoder> decoder_;
};

}  // namespace ag::nn
