// Exercise 4: the softmax's backward.
//
// y = softmax(x) over the last axis. Each y_i depends on every x_j of its
// row: dy_i/dx_j = y_i (delta_ij - y_j), the Jacobian diag(y) - y y^T. A
// backward never builds that n x n matrix; it multiplies the upstream
// gradient dy by it:
//   dx_j = sum_i dy_i y_i (delta_ij - y_j) = y_j (dy_j - sum_i dy_i y_i)
// one dot product per row, then an elementwise product.
//
//   Y  [..., n] float64, the softmax's output (rows summing to 1)
//   dY [..., n] float64, the gradient of the loss with respect to Y
//   -> dX [..., n]
//
// The same formula is the masked softmax's backward: a masked position has
// y_j = 0, so its dx_j is 0 and no gradient reaches the padding.
//
// Grade it: scripts/exercise.sh 4
#include "exercises.h"

namespace ex {

Tensor softmax_backward(const Tensor& Y, const Tensor& dY) {
  // TODO: your code here.
  (void)Y, (void)dY;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
