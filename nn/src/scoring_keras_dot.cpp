// Keras' Attention layer's "dot" score (keras.layers.Attention, Luong-style):
//   a(q, k) = s q^T k
// s a learned scalar "scale", initialised to 1, when use_scale (the table's
// keras_dot); without it s = 1 and there are no parameters: Luong's
// unscaled dot, Keras' default. Unlike the table's dot, the scale is
// learned, not 1/sqrt(d). keras::Attention(use_scale, "dot") is its face.
// Queries and keys of one width, any width.
// Legend: B batch, Tq queries, Tk keys, d width.
#include "scoring_functions.h"

namespace ag::nn {

namespace {

class KerasDotScoring : public ScoringFunction {
 public:
  KerasDotScoring(const ScoringSizes& sizes, bool use_scale)
      : ScoringFunction("KerasDotScoring", sizes, /*any_width=*/true) {
    check_one_width(sizes, type_name());
    if (use_scale) {
      scale = scalar_tensor(1.0);
      register_parameter("scale", &scale);
    }
  }

 protected:
  // scores = Q K^T [* s]: [B, Tq, d] @ [B, d, Tk] -> [B, Tq, Tk]
  // (backward: dL/dQ = s dL/dscores K, dL/dK = s dL/dscores^T Q,
  // dL/ds = sum(dL/dscores Q K^T))
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    check_same_width(queries, keys, type_name());
    Tensor s = bmm(queries, transpose(keys, 1, 2));
    return scale.defined() ? s * scale : s;
  }

 public:
  Tensor scale;  // [] when use_scale, else undefined
};

}  // namespace

std::unique_ptr<ScoringFunction> make_keras_dot_scoring(const ScoringSizes& sizes, bool use_scale) {
  return std::make_unique<KerasDotScoring>(sizes, use_scale);
}

}  // namespace ag::nn
