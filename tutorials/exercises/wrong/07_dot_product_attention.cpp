// Exercise 7, a plausible wrong answer: the masks right, the scores not
// divided by sqrt(d) (Luong's unscaled dot product).
#include "exercises.h"

namespace ex {

Tensor dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                             const Tensor& valid_lens, bool causal) {
  const int64_t Tq = queries.size(1), Tk = keys.size(1);
  const Tensor scores = ag::bmm(queries, ag::transpose(keys, 1, 2));
  const Tensor j = ag::arange(Tk, ag::kInt64);
  Tensor keep = ag::ones({1, Tq, Tk}, ag::kBool);
  if (valid_lens.defined()) {
    const Tensor lens =
        valid_lens.dim() == 1 ? ag::reshape(valid_lens, {-1, 1, 1}) : ag::unsqueeze(valid_lens, -1);
    keep = ag::logical_and(keep, ag::lt(j, lens));
  }
  if (causal)
    keep = ag::logical_and(keep, ag::le(j, ag::reshape(ag::arange(Tq, ag::kInt64), {Tq, 1})));
  return ag::bmm(ag::softmax(ag::where(keep, scores, -1e6), -1), values);
}

}  // namespace ex
