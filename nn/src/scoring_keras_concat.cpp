// Keras' Attention layer's "concat" score (keras.layers.Attention(score_mode=
// "concat"), Bahdanau's form without projections):
//   a(q, k) = c sum_d tanh(s (q_d + k_d))
// c a learned scalar "concat_score_weight", initialised to 1; s a learned
// scalar "scale", initialised to 1, when use_scale (else s = 1, Keras'
// default and the table's keras_concat). keras::Attention(use_scale,
// "concat") is its face. Queries and keys of one width, any width.
// Legend: B batch, Tq queries, Tk keys, d width.
#include "scoring_functions.h"

namespace ag::nn {

namespace {

class KerasConcatScoring : public ScoringFunction {
 public:
  KerasConcatScoring(const ScoringSizes& sizes, bool use_scale)
      : ScoringFunction("KerasConcatScoring", sizes, /*any_width=*/true) {
    check_one_width(sizes, type_name());
    if (use_scale) {
      scale = scalar_tensor(1.0);
      register_parameter("scale", &scale);
    }
    concat_score_weight = scalar_tensor(1.0);
    register_parameter("concat_score_weight", &concat_score_weight);
  }

 protected:
  // features = [s] (q_i + k_j): [B, Tq, 1, d] + [B, 1, Tk, d] -> [B, Tq, Tk, d]
  // scores = c sum_d tanh(features): [B, Tq, Tk]
  // (backward, t = tanh(features): dL/dfeatures = c g (1 - t^2), summed over
  // j for q_i and over i for k_j; dL/dc = sum g sum_d t)
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    check_same_width(queries, keys, type_name());
    Tensor features = unsqueeze(queries, 2) + unsqueeze(keys, 1);
    if (scale.defined()) features = scale * features;
    return concat_score_weight * sum(tanh(features), -1);
  }

 public:
  Tensor scale;                // [] when use_scale, else undefined
  Tensor concat_score_weight;  // []
};

}  // namespace

std::unique_ptr<ScoringFunction> make_keras_concat_scoring(const ScoringSizes& sizes,
                                                           bool use_scale) {
  return std::make_unique<KerasConcatScoring>(sizes, use_scale);
}

}  // namespace ag::nn
