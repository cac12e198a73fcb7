// Additive attention (Bahdanau et al. 2015; d2l's AdditiveAttention):
//   a(q, k) = w_v^T tanh(W_q q + W_k k)
// queries and keys may differ in width. Parameters, in d2l's order and
// names: W_k.weight [h, k], W_q.weight [h, q], w_v.weight [1, h].
// Legend: B batch, Tq queries, Tk keys, q query width, k key width, h hidden units.
#include "scoring_functions.h"

namespace ag::nn {

namespace {

class AdditiveScoring : public ScoringFunction {
 public:
  explicit AdditiveScoring(const ScoringSizes& sizes)
      : ScoringFunction("AdditiveScoring", sizes),
        W_k(sizes.key_size, sizes.hidden_units(), /*bias=*/false),
        W_q(sizes.query_size, sizes.hidden_units(), /*bias=*/false),
        w_v(sizes.hidden_units(), 1, /*bias=*/false) {
    register_module("W_k", &W_k);
    register_module("W_q", &W_q);
    register_module("w_v", &w_v);
  }

 protected:
  // Once per source: k' = k W_k^T, [B, Tk, k] -> [B, Tk, h]
  Tensor remember_keys(const Tensor& keys) const override {
    Tensor projected = W_k(keys);
    projected.set_name("projected_keys");
    return projected;
  }

  // scores_ij = w_v . tanh(q'_i + k'_j), q' = q W_q^T: [B, Tq, Tk]. The fused
  // additive_scores never makes d2l's [B, Tq, Tk, h] features tensor.
  // (backward, t = tanh(q'_i + k'_j): dL/dq'_i = w_v sum_j g (1 - t^2),
  // dL/dk'_j = w_v sum_i g (1 - t^2), dL/dw_v = sum g t)
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    Tensor projected = W_q(queries);
    projected.set_name("projected_queries");
    return additive_scores(projected, keys, reshape(w_v.weight, {w_v.in_features}));
  }

 public:
  Linear W_k, W_q, w_v;
};

}  // namespace

std::unique_ptr<ScoringFunction> make_additive_scoring(const ScoringSizes& sizes) {
  return std::make_unique<AdditiveScoring>(sizes);
}

}  // namespace ag::nn
