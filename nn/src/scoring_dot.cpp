// Scaled dot-product attention (d2l's DotProductAttention; Vaswani et al.):
//   a(q, k) = q^T k / sqrt(d)
// No parameters; queries and keys must have one width d (sizes 0: any d,
// as d2l's DotProductAttention, the face of this class, takes). After a
// bidirectional encoder of the decoder's width the keys are twice the
// decoder's width: `general` learns the map between the two, or the encoder
// is made half as wide a direction (nn/seq2seq.h's encoder_hiddens).
// Legend: B batch, Tq queries, Tk keys, d width.
#include <cmath>

#include "scoring_functions.h"

namespace ag::nn {

// scores = (Q / sqrt(d)) K^T: [B, Tq, d] @ [B, d, Tk] -> [B, Tq, Tk]
// (dividing the Tq x d queries, not the Tq x Tk scores: the same numbers)
// (backward: dL/dQ = dL/dscores K / sqrt(d), dL/dK = dL/dscores^T Q / sqrt(d))
Tensor scaled_dot_scores(const Tensor& queries, const Tensor& keys) {
  const double d = static_cast<double>(queries.size(2));
  return bmm(queries / std::sqrt(d), transpose(keys, 1, 2));
}

namespace {

class DotScoring : public ScoringFunction {
 public:
  explicit DotScoring(const ScoringSizes& sizes)
      : ScoringFunction("DotScoring", sizes, /*any_width=*/true) {
    AG_CHECK(sizes.query_size == sizes.key_size, "DotScoring",
             "dot-product scores q.k need queries and keys of one width, but the queries have " +
                 std::to_string(sizes.query_size) + " features and the keys " +
                 std::to_string(sizes.key_size) +
                 " (a bidirectional encoder's keys are twice its hidden size): use 'general', "
                 "whose W_a maps one width to the other, or an encoder of half the width a "
                 "direction (encoder_hiddens)");
  }

 protected:
  // (Q / sqrt(d)) K^T, above (multihead's heads use it too)
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    return scaled_dot_scores(queries, keys);
  }

  // The same as scale * Q K^T, for the streamed path: Q and 1/sqrt(d).
  std::optional<DotForm> dot_form(const Tensor& queries) const override {
    return DotForm{queries, 1.0 / std::sqrt(static_cast<double>(queries.size(2)))};
  }
};

}  // namespace

std::unique_ptr<ScoringFunction> make_dot_scoring(const ScoringSizes& sizes) {
  return std::make_unique<DotScoring>(sizes);
}

}  // namespace ag::nn
