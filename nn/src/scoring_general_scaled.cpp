// Luong's general score scaled as dot-product attention is (issue 63):
//   a(q, k) = q^T W_a k / sqrt(k)
// with k the keys' width. Unscaled, q^T W_a k sums q k products: at d2l's
// Xavier init its spread grows with the widths (about sqrt(2 q k / (q + k))
// for unit-variance queries and keys: 18 for q = 256, k = 512), the softmax
// saturates from the first step and the rows' entropy collapses, as
// unscaled dot products do (tutorial 4). Dividing by sqrt(k) brings the
// spread back to about 1 whatever the width, which is what `dot`'s
// 1/sqrt(d) does; with keys of the queries' width it is dot's own factor.
// Parameter: W_a.weight [q, k], as general's (scoring_general.cpp).
#include <cmath>

#include "scoring_functions.h"

namespace ag::nn {

std::unique_ptr<ScoringFunction> make_general_scaled_scoring(const ScoringSizes& sizes) {
  AG_CHECK(sizes.key_size > 0, "ScaledGeneralScoring",
           "needs a positive key width, got " + std::to_string(sizes.key_size));
  return make_bilinear_scoring(sizes, "ScaledGeneralScoring",
                               1 / std::sqrt(static_cast<double>(sizes.key_size)));
}

}  // namespace ag::nn
