// Beam search (d2l's "Beam Search"), for any model of nn/encoder_decoder.h.
//
// Greedy search keeps, at every output step, the one most probable token;
// beam search keeps the K most probable sequences so far. At each step every
// kept sequence is extended by every token of the vocabulary and the K
// extensions with the largest log probability
//   log P(y_1 .. y_t | x) = sum_{t' <= t} log P(y_t' | y_1 .. y_t'-1, x)
// are kept (out of K V); an extension that ends in <eos> is finished and set
// aside, the others go on. At the end each candidate is scored by d2l's
// length-normalised log probability
//   score = log P(y_1 .. y_L | x) / L^alpha        (alpha = 0.75)
// with L its number of tokens, <eos> included when it has one (the steps
// whose probabilities it multiplies), so that long answers are not penalised
// for having more factors below 1. The K best candidates are returned, the
// finished ones (best score first) before any that ran out of steps.
//
// K = 1 is greedy search: the one kept extension is the argmax (ties to the
// lower token index, as ag::argmax), and its output is exactly
// predict_seq2seq's.
//
// Batched: every kept sequence of every input is one row of one decoder call
// per step, and Decoder::select_state copies each row's state to its
// extensions (index_select on the state's batch axis).
#pragma once

#include <vector>

#include "attograd/nn/encoder_decoder.h"

namespace ag::translate {

struct BeamOptions {
  int64_t beam_size = 5;  // K >= 1
  double alpha = 0.75;    // the length normalisation's exponent (0: plain log P)
};

struct BeamCandidate {
  std::vector<int64_t> output;  // target indices, without the final <eos>
  bool finished = false;        // whether it ended in <eos> within the steps
  double log_prob = 0;          // log P of its L tokens
  double score = 0;             // log_prob / L^alpha, L = output.size() + finished
  // [L, src_valid_len] float64: row i is how step i looked at the source
  // (the decoder's alignment()), as Prediction::alignment.
  Tensor alignment;
};

// Beam search over a batch: src [B, src_steps], src_valid_len [B], at most
// num_steps output steps. Returns, per input, up to K candidates, finished
// ones first, each group best score first. Eval mode and NoGradGuard inside;
// the model's training mode is restored. Throws ag::Error for bad shapes, K <
// 1, alpha < 0 or num_steps < 1.
std::vector<std::vector<BeamCandidate>> beam_search(nn::EncoderDecoder& model, const Tensor& src,
                                                    const Tensor& src_valid_len, int64_t num_steps,
                                                    const BeamOptions& options = {});

}  // namespace ag::translate
