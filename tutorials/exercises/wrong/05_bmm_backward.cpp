// Exercise 5, a plausible wrong answer: dB's factors in the wrong order,
// dC^T A, which is (A^T dC)^T: B's transpose, not B's gradient.
#include "exercises.h"

namespace ex {

BmmGrads bmm_backward(const Tensor& a, const Tensor& b, const Tensor& dc) {
  return {ag::bmm(dc, ag::transpose(b, 1, 2)), ag::bmm(ag::transpose(dc, 1, 2), a)};
}

}  // namespace ex
