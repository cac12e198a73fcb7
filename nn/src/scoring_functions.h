// The library's scoring functions, one factory each (scoring_NAME.cpp);
// scoring_table.cpp names them. Internal to nn/: programs build them by name
// (make_scoring_function in scoring.h).
#pragma once

#include "attograd/nn/scoring.h"

namespace ag::nn {

std::unique_ptr<ScoringFunction> make_additive_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_dot_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_general_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_general_scaled_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_multihead_scoring(const ScoringSizes& sizes);

// general's bilinear form q^T W_a k times `scale` (scoring_general.cpp),
// named `type_name`: the scaled variants' factories build on it.
std::unique_ptr<ScoringFunction> make_bilinear_scoring(const ScoringSizes& sizes,
                                                       const std::string& type_name, double scale);

}  // namespace ag::nn
