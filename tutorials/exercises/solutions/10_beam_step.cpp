// Exercise 10's solution: the extension step of the library's beam search
// (translate/src/predict.cpp: beam_search, inside its decoding loop, which
// also skips special tokens and keeps each step's alignment), as a function
// of its own: every extension scored, the beam_size best by partial_sort
// with the same tie rule.
#include <algorithm>
#include <string>

#include "exercises.h"

namespace ex {

std::vector<BeamChoice> beam_step(const Tensor& beam_log_probs, const Tensor& next_log_probs,
                                  int64_t beam_size) {
  AG_CHECK(beam_log_probs.dim() == 1 && next_log_probs.dim() == 2 &&
               next_log_probs.size(0) == beam_log_probs.size(0),
           "beam_step",
           "next_log_probs " + ag::shape_str(next_log_probs.shape()) +
               " must be [K, V] for beam_log_probs " + ag::shape_str(beam_log_probs.shape()));
  const int64_t K = next_log_probs.size(0), V = next_log_probs.size(1);
  AG_CHECK(beam_size >= 1 && beam_size <= K * V, "beam_step",
           "beam_size " + std::to_string(beam_size) + " is outside 1 .. " + std::to_string(K * V));
  const std::vector<double> s = beam_log_probs.to_vector(), p = next_log_probs.to_vector();
  std::vector<BeamChoice> all;
  for (int64_t b = 0; b < K; ++b)
    for (int64_t v = 0; v < V; ++v) all.push_back({s[b] + p[b * V + v], b, v});
  std::partial_sort(all.begin(), all.begin() + beam_size, all.end(),
                    [](const BeamChoice& x, const BeamChoice& y) {
                      if (x.log_prob != y.log_prob) return x.log_prob > y.log_prob;
                      return x.beam != y.beam ? x.beam < y.beam : x.token < y.token;
                    });
  all.resize(static_cast<size_t>(beam_size));
  return all;
}

}  // namespace ex
