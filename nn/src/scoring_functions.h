// The library's scoring functions, one factory each (scoring_NAME.cpp);
// scoring_table.cpp names them. Internal to nn/: programs build them by name
// (make_scoring_function in scoring.h).
#pragma once

#include "attograd/nn/scoring.h"

namespace ag::nn {

std::unique_ptr<ScoringFunction> make_additive_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_dot_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_general_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_multihead_scoring(const ScoringSizes& sizes);

}  // namespace ag::nn
