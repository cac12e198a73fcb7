// Exercise 11, a plausible mistake: W_a is a member but never registered, so
// it is no parameter of the module: the state dict, the optimiser and every
// model built by name never see it.
#include <attograd/nn/layers.h>

#include "exercises.h"

namespace ex {

namespace {

class GeneralScoring : public ag::nn::ScoringFunction {
 public:
  explicit GeneralScoring(const ag::nn::ScoringSizes& sizes)
      : ScoringFunction("GeneralScoring", sizes),
        W_a(sizes.key_size, sizes.query_size, /*bias=*/false) {}

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
