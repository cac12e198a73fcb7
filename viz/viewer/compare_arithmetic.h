// The compare scene's arithmetic panel: one score a(q_i, k_j) of a scoring
// function of nn's table, worked step by step with its numbers, from the
// function's own parameters (its state dict). The table's functions each
// have their steps; a function the panel does not know (one a program
// registered) shows the library's score alone.
#pragma once

#include <string>
#include <vector>

#include "attograd/nn/scoring.h"

namespace ag::viewer {

struct ScoreArithmetic {
  std::vector<std::string> lines;  // each step, "W_q q_i = [0.12, -0.40, ...]"
  double score = 0.0;              // what the steps give
  bool worked = false;             // false: no steps known for this function
};

// q_i [d], k_j [d] (one query and one key) through the function `name`.
ScoreArithmetic score_arithmetic(const std::string& name, const nn::ScoringFunction& function,
                                 const Tensor& query, const Tensor& key);

}  // namespace ag::viewer
