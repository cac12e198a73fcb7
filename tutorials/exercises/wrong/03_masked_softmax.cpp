// Exercise 3, a plausible wrong answer: the masked scores set to 0 instead
// of -1e6, so the padding still gets weight.
#include "exercises.h"

namespace ex {

Tensor masked_softmax(const Tensor& X, const Tensor& valid_lens) {
  if (!valid_lens.defined()) return ag::softmax(X, -1);
  AG_CHECK(valid_lens.dim() <= 2 && valid_lens.size(0) == X.size(0), "masked_softmax",
           "lengths " + ag::shape_str(valid_lens.shape()) + " do not fit scores " +
               ag::shape_str(X.shape()));
  const int64_t n = X.size(-1);
  const Tensor lens = valid_lens.dim() == 1 ? ag::reshape(valid_lens, {X.size(0), 1, 1})
                                            : ag::unsqueeze(valid_lens, -1);
  const Tensor keep = ag::lt(ag::arange(n, ag::kInt64), lens);
  return ag::softmax(ag::where(keep, X, 0.0), -1);
}

}  // namespace ex
