// Prediction for any model of nn/encoder_decoder.h: greedy decoding and beam
// search (d2l's "Beam Search"), and translate(), which runs either on texts.
//
// Greedy search (predict_seq2seq) decodes a whole batch one step at a time,
// feeding each step's argmax back, keeping each step's alignment; it stops
// at <eos>. Beam search keeps, at every output step, the one most probable token;
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
// predict_seq2seq's. A wider beam never extends a sequence with <pad>, <bos>
// or <unk>, which no answer contains but which a beam wider than the likely
// tokens would reach. A NaN or +infinity logit, greedy or beam, is an
// ag::Error naming the output step (-infinity rules a token out).
//
// Batched: every kept sequence of every input is one row of one decoder call
// per step, and Decoder::select_state copies each row's state to its
// extensions (index_select on the state's batch axis).
#pragma once

#include <string>
#include <vector>

#include "attograd/nn/encoder_decoder.h"
#include "attograd/translate/translator.h"

namespace ag::translate {

struct Prediction {
  std::vector<int64_t> output;  // target indices, without the final <eos>
  bool finished = false;        // whether <eos> came within tgt_steps
  // log P of each step's token given the steps before: output's tokens, then
  // <eos>'s when finished (their sum is the sequence's log P).
  std::vector<double> token_log_probs;
  // [rows, src_valid_len] float64: row i is how output step i looked at the
  // source (the model's alignment()); rows = output.size() + finished, so the
  // step that emitted <eos> has its row too (as d2l keeps it).
  Tensor alignment;
};

// Greedy decoding of a batch: src [B, src_steps], src_valid_len [B], at most
// num_steps output steps. Eval mode and NoGradGuard inside; the model's
// training mode is restored; its attention weights are left on.
std::vector<Prediction> predict_seq2seq(nn::EncoderDecoder& model, const Tensor& src,
                                        const Tensor& src_valid_len, int64_t num_steps);

struct BeamOptions {
  int64_t beam_size = 5;  // K >= 1
  double alpha = 0.75;    // the length normalisation's exponent (0: plain log P)
};

struct BeamCandidate {
  std::vector<int64_t> output;          // target indices, without the final <eos>
  bool finished = false;                // whether it ended in <eos> within the steps
  double log_prob = 0;                  // log P of its L tokens
  double score = 0;                     // log_prob / L^alpha, L = output.size() + finished
  std::vector<double> token_log_probs;  // each of the L tokens' log P (they sum to log_prob)
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

// An alignment's columns for `text`: its tokens (characters, or phonemes as
// `source` says), then the <eos> the encoder reads after them
// (Translation::source_tokens).
std::vector<std::string> alignment_columns(const std::string& text,
                                           Tokenization source = Tokenization::Characters);

// What translate() gives for one text.
struct Translation {
  std::string input;
  std::string output;  // the output tokens detokenized as the task says ("N AY F" for g2p)
  std::vector<std::string> source_tokens;  // the input's tokens and <eos>
  std::vector<std::string> output_tokens;  // the output's tokens and <eos> if emitted
  std::vector<double> token_log_probs;     // log P of each of output_tokens
  Tensor alignment;                        // [output_tokens, source_tokens] float64
  // log P of the whole output (its tokens' log P summed); exp of it is the
  // answer's probability, its confidence.
  double log_prob() const {
    double total = 0;
    for (double x : token_log_probs) total += x;
    return total;
  }
  // Beam search only (beam > 1): every candidate, best first (beam[0] is
  // output itself), with its length-normalised score.
  struct Candidate {
    std::string output;
    std::vector<std::string> output_tokens;
    bool finished = false;
    double log_prob = 0, score = 0;
    std::vector<double> token_log_probs;  // log P of each of output_tokens
    Tensor alignment;                     // [output_tokens, source_tokens] float64
  };
  std::vector<Candidate> beam;
};
// Translates texts (bad text: ag::Error, see encode_sources), in batches of
// up to batch_size: greedy decoding (beam = 1) or beam search with beam
// candidates (d2l's alpha = 0.75), whose best is the output. A model whose
// encoder skips padding (the bidirectional one) reads each batch cut to its
// longest text: the same outputs, fewer steps.
std::vector<Translation> translate(Translator& translator, const std::vector<std::string>& texts,
                                   int64_t batch_size = 1000, int64_t beam = 1);

}  // namespace ag::translate
