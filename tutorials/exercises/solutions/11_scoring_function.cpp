// Exercise 11's solution: Luong's general score as a class of nn's table, as
// the library writes it (nn/src/scoring_general.cpp).
#include <attograd/nn/layers.h>

#include "exercises.h"

namespace ex {

namespace {

class GeneralScoring : public ag::nn::ScoringFunction {
 public:
  explicit GeneralScoring(const ag::nn::ScoringSizes& sizes)
      : ScoringFunction("GeneralScoring", sizes),
        W_a(sizes.key_size, sizes.query_size, /*bias=*/false) {
    register_module("W_a", &W_a);
  }

 protected:
  // Once per source: k' = k W_a^T, [B, Tk, k] -> [B, Tk, q]
  Tensor remember_keys(const Tensor& keys) const override { return W_a(keys); }

  // scores = q k'^T: [B, Tq, q] @ [B, q, Tk] -> [B, Tq, Tk]
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    return ag::bmm(queries, ag::transpose(keys, 1, 2));
  }

 public:
  ag::nn::Linear W_a;
};

}  // namespace

std::unique_ptr<ag::nn::ScoringFunction> make_my_scoring(const ag::nn::ScoringSizes& sizes) {
  return std::make_unique<GeneralScoring>(sizes);
}

}  // namespace ex
