// Keras' AdditiveAttention score (keras.layers.AdditiveAttention; Bahdanau's
// form without the projections W_q, W_k):
//   a(q, k) = sum_d s_d tanh(q_d + k_d)
// s "scale" [d] learned, drawn as Keras' glorot_uniform, when use_scale (the
// table's keras_additive, and Keras' default); without it every s_d = 1
// and there are no parameters. keras::AdditiveAttention(dim, use_scale) is
// its face. Queries and keys both d = query_size = key_size wide.
// Legend: B batch, Tq queries, Tk keys, d width.
#include <cmath>

#include "scoring_functions.h"

namespace ag::nn {

namespace {

class KerasAdditiveScoring : public ScoringFunction {
 public:
  KerasAdditiveScoring(const ScoringSizes& sizes, bool use_scale)
      : ScoringFunction("KerasAdditiveScoring", sizes) {
    check_one_width(sizes, type_name());
    if (use_scale) {
      // glorot_uniform on [d]: limit = sqrt(6 / (fan_in + fan_out)), fan_in = fan_out = d.
      const double limit = std::sqrt(3.0 / static_cast<double>(sizes.query_size));
      scale = uniform({sizes.query_size}, -limit, limit);
      register_parameter("scale", &scale);
    }
  }

 protected:
  // scores_ij = sum_d s_d tanh(q_id + k_jd): [B, Tq, Tk], fused, so the
  // [B, Tq, Tk, d] tensor of tanh(q_i + k_j) is never built
  // (backward, t = tanh(q_i + k_j): dL/dq_i = s sum_j g (1 - t^2),
  // dL/dk_j = s sum_i g (1 - t^2), dL/ds = sum g t)
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    return additive_scores(queries, keys,
                           scale.defined() ? scale : ones({sizes.query_size}, queries.dtype()));
  }

 public:
  Tensor scale;  // [d] when use_scale, else undefined
};

}  // namespace

std::unique_ptr<ScoringFunction> make_keras_additive_scoring(const ScoringSizes& sizes,
                                                             bool use_scale) {
  return std::make_unique<KerasAdditiveScoring>(sizes, use_scale);
}

}  // namespace ag::nn
