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

// scores = Q K^T / sqrt(d), or Q K^T * scale when a scale is given:
// [..., Tq, d] @ [..., d, Tk] -> [..., Tq, Tk]. The queries are scaled
// (Tq x d numbers), not the scores (Tq x Tk): the same product. The chapter's
// 1/sqrt(d) divides by sqrt(d); a given scale (functional's, as PyTorch's
// `scale`) multiplies. The product is bmm for one batch dim shared by both, as
// d2l's DotProductAttention; matmul, whose batch dims broadcast, otherwise, as
// PyTorch's scaled_dot_product_attention (the same kernel and bits; the names
// matter to ATTOGRAD_FAULT and the autograd graph).
// (backward: dL/dQ = dL/dscores K s, dL/dK = dL/dscores^T Q s, s the scale)
Tensor scaled_dot_scores(const Tensor& queries, const Tensor& keys, std::optional<double> scale) {
  const Tensor scaled = scale.has_value()
                            ? queries * *scale
                            : queries / std::sqrt(static_cast<double>(queries.size(-1)));
  const Tensor keys_t = transpose(keys, -2, -1);
  const bool one_batch = scaled.dim() == 3 && keys.dim() == 3 && scaled.size(0) == keys.size(0);
  return one_batch ? bmm(scaled, keys_t) : matmul(scaled, keys_t);
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
  // Q K^T / sqrt(d), above (multihead's heads use it too)
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
