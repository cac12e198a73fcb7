// Exercise 10: one step of beam search.
//
// Greedy search keeps the one most probable token at each step; beam search
// keeps the K most probable sequences so far (the beams). At each step every
// beam b, with log-probability s_b, can be extended by every token v of the
// vocabulary, and the decoder says how likely: log P(v | beam b). The
// extension's log-probability is the sum
//   s_b + log P(v | beam b)
// (probabilities multiply, their logs add), and the step keeps the K best of
// all K * V extensions: not the best token of each beam, and not the most
// likely tokens whatever beam they extend.
//
//   beam_log_probs [K] float64          s_b, the kept sequences' log-probabilities
//   next_log_probs [K, V] float64       log P(v | beam b), one row a beam
//   beam_size      how many to keep (at most K * V)
//   -> the beam_size best {log_prob, beam, token}, best first; equal
//      log-probabilities go to the lower beam, then the lower token (so that
//      beam_size 1 is greedy search's argmax)
//
// Plain C++ is fine here (values(): t.to_vector(), std::sort or
// std::partial_sort with a comparison that follows the tie rule). Bad input
// (next_log_probs not [K, V], beam_size outside 1 .. K * V) throws ag::Error
// naming beam_step and the shapes.
//
// Grade it: scripts/exercise.sh 10
#include "exercises.h"

namespace ex {

std::vector<BeamChoice> beam_step(const Tensor& beam_log_probs, const Tensor& next_log_probs,
                                  int64_t beam_size) {
  // TODO: your code here.
  (void)beam_log_probs, (void)next_log_probs, (void)beam_size;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
