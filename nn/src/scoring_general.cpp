// Luong et al.'s (2015) "general" score, a bilinear form:
//   a(q, k) = q^T W_a k
// W_a.weight [q, k] maps the keys' width to the queries', so it works where
// dot does not (a bidirectional encoder's keys, 2H wide, against the
// decoder's H). Luong's score is not scaled. Parameter: W_a.weight [q, k]
// (PyTorch: nn.Linear(k, q, bias=False)). general_scaled
// (scoring_general_scaled.cpp) is the same form times a constant.
// Legend: B batch, Tq queries, Tk keys, q query width, k key width.
#include "scoring_functions.h"

namespace ag::nn {

namespace {

class GeneralScoring : public ScoringFunction {
 public:
  GeneralScoring(const ScoringSizes& sizes, std::string type_name, double scale)
      : ScoringFunction(std::move(type_name), sizes),
        W_a(sizes.key_size, sizes.query_size, /*bias=*/false),
        scale_(scale) {
    register_module("W_a", &W_a);
  }

 protected:
  // Once per source: k' = k W_a^T, [B, Tk, k] -> [B, Tk, q]
  Tensor remember_keys(const Tensor& keys) const override {
    Tensor projected = W_a(keys);
    projected.set_name("projected_keys");
    return projected;
  }

  // scores = (s Q) K'^T: [B, Tq, q] @ [B, q, Tk] -> [B, Tq, Tk], s = 1 for
  // Luong's (no multiplication at all)
  // (backward: dL/dQ = s dL/dscores K', dL/dK' = s dL/dscores^T Q)
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    return bmm(scale_ == 1 ? queries : queries * scale_, transpose(keys, 1, 2));
  }

 public:
  Linear W_a;

 private:
  double scale_;
};

}  // namespace

std::unique_ptr<ScoringFunction> make_general_scoring(const ScoringSizes& sizes) {
  return std::make_unique<GeneralScoring>(sizes, "GeneralScoring", 1.0);
}

std::unique_ptr<ScoringFunction> make_bilinear_scoring(const ScoringSizes& sizes,
                                                       const std::string& type_name, double scale) {
  return std::make_unique<GeneralScoring>(sizes, type_name, scale);
}

}  // namespace ag::nn
