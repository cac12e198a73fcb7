// Exercise 1: the backward of an elementwise product, with broadcasting.
//
// c = a * b multiplies element by element after broadcasting a and b to a
// common shape (NumPy's rules: align the shapes at the right; a dimension of
// size 1, or a missing one, is repeated). For example a [2, 3] and b [3]
// give c [2, 3]: b's one row is used for both of c's rows.
//
// The chain rule gives each element's gradient: dc/da = b and dc/db = a, so
//   da_full = dc * b      db_full = dc * a          (both of c's shape)
// But a gradient has its tensor's shape. Where b was repeated to fit c, each
// of b's elements took part in several elements of c, and its gradient is
// the sum over them: db = da_full summed over every axis b was broadcast
// along. For b [3] in c [2, 3]: db[j] = sum_i dc[i, j] * a[i, j].
//
//   a  [...] float64, b [...] float64, broadcastable to c's shape
//   dc [c's shape]    the gradient of the loss with respect to c
//   -> {da with a's shape, db with b's shape}
//
// Two steps for each input: multiply, then reduce to the input's shape:
// sum the leading axes c has and the input lacks (ag::sum(t, 0) while
// t.dim() > the input's dim), then, keeping the axis, every axis where the
// input has size 1 and c does not (ag::sum(t, axis, /*keepdim=*/true)).
//
// Grade it: scripts/exercise.sh 1
#include "exercises.h"

namespace ex {

MulGrads mul_backward(const Tensor& a, const Tensor& b, const Tensor& dc) {
  // TODO: your code here.
  (void)a, (void)b, (void)dc;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
