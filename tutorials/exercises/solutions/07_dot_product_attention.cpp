// Exercise 7's solution: d2l's DotProductAttention as the library computes
// it (nn/src/scoring_dot.cpp, nn/src/pooling.cpp), its masks by the library's attention_softmax
// (nn/src/masks.cpp), which combines d2l's lengths and the causal mask.
#include <attograd/nn/masks.h>

#include <cmath>

#include "exercises.h"

namespace ex {

Tensor dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                             const Tensor& valid_lens, bool causal) {
  const double d = static_cast<double>(queries.size(-1));
  const Tensor scores = ag::bmm(queries, ag::transpose(keys, 1, 2)) / std::sqrt(d);
  const Tensor weights =
      ag::nn::attention_softmax(scores, {.valid_lens = valid_lens, .is_causal = causal});
  return ag::bmm(weights, values);
}

}  // namespace ex
