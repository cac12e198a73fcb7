// Exercise 4, a plausible wrong answer: only the Jacobian's diagonal,
// dy_i/dx_i = y_i (1 - y_i), as if each y_i depended on its own x_i alone.
#include "exercises.h"

namespace ex {

Tensor softmax_backward(const Tensor& Y, const Tensor& dY) {
  return Y * (1.0 - Y) * dY;
}

}  // namespace ex
