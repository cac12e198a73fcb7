// Exercise 10, a plausible wrong answer: the best token of each beam (K
// greedy searches side by side) instead of the best of all K * V
// extensions.
#include <algorithm>
#include <string>

#include "exercises.h"

namespace ex {

std::vector<BeamChoice> beam_step(const Tensor& beam_log_probs, const Tensor& next_log_probs,
                                  int64_t beam_size) {
  AG_CHECK(next_log_probs.dim() == 2 && next_log_probs.size(0) == beam_log_probs.size(0) &&
               beam_size >= 1 && beam_size <= next_log_probs.numel(),
           "beam_step",
           "next_log_probs " + ag::shape_str(next_log_probs.shape()) +
               " must be [K, V] for beam_log_probs " + ag::shape_str(beam_log_probs.shape()));
  const int64_t K = next_log_probs.size(0), V = next_log_probs.size(1);
  const std::vector<double> s = beam_log_probs.to_vector(), p = next_log_probs.to_vector();
  std::vector<BeamChoice> best;
  for (int64_t b = 0; b < K; ++b) {
    const auto row = p.begin() + b * V;
    const int64_t v = std::max_element(row, row + V) - row;
    best.push_back({s[b] + p[b * V + v], b, v});
  }
  std::sort(best.begin(), best.end(),
            [](const BeamChoice& x, const BeamChoice& y) { return x.log_prob > y.log_prob; });
  best.resize(static_cast<size_t>(std::min<int64_t>(beam_size, K)));
  return best;
}

}  // namespace ex
