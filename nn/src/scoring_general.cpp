// Luong et al.'s (2015) "general" score, a bilinear form:
//   a(q, k) = q^T W_a k
// W_a.weight [q, k] maps the keys' width to the queries', so it works where
// dot does not (a bidirectional encoder's keys, 2H wide, against the
// decoder's H). Luong's score is not scaled. Parameter: W_a.weight [q, k]
// (PyTorch: nn.Linear(k, q, bias=False)).
// Legend: B batch, Tq queries, Tk keys, q query width, k key width.
#include "scoring_functions.h"

namespace ag::nn {

namespace {

class GeneralScoring : public ScoringFunction {
 public:
  explicit GeneralScoring(const ScoringSizes& sizes)
      : ScoringFunction("GeneralScoring", sizes),
        W_a(sizes.key_size, sizes.query_size, /*bias=*/false) {
    register_module("W_a", &W_a);
  }

 protected:
  // Once per source: k' = k W_a^T, [B, Tk, k] -> [B, Tk, q]
  Tensor remember_keys(const Tensor& keys) const override {
    Tensor projected = W_a(keys);
    projected.set_name("projected_keys");
    return projected;
  }

  // scores = Q K'^T: [B, Tq, q] @ [B, q, Tk] -> [B, Tq, Tk]
  // (backward: dL/dQ = dL/dscores K', dL/dK' = dL/dscores^T Q)
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    return bmm(queries, transpose(keys, 1, 2));
  }

 public:
  Linear W_a;
};

}  // namespace

std::unique_ptr<ScoringFunction> make_general_scoring(const ScoringSizes& sizes) {
  return std::make_unique<GeneralScoring>(sizes);
}

}  // namespace ag::nn
