// Exercise 5: batched matrix multiplication's backward.
//
// C = bmm(A, B) multiplies B pairs of matrices: C[b] = A[b] B[b], with
//   A [B, n, k], B [B, k, m] -> C [B, n, m],  C[b, i, j] = sum_x A[b, i, x] B[b, x, j].
// Attention does this twice: scores = Q K^T, output = weights V.
//
// For one pair the gradients are the matrix rules
//   dA = dC B^T    [n, m] @ [m, k] -> [n, k], A's shape
//   dB = A^T dC    [k, n] @ [n, m] -> [k, m], B's shape
// (write out dC[i, j] A[i, x] B[x, j] and differentiate by one A[i, x] to
// see why). The batch axis just comes along: ag::bmm with
// ag::transpose(t, 1, 2) for the transposes.
//
//   a [B, n, k], b [B, k, m], dc [B, n, m] float64 -> {da [B, n, k], db [B, k, m]}
//
// Grade it: scripts/exercise.sh 5
#include "exercises.h"

namespace ex {

BmmGrads bmm_backward(const Tensor& a, const Tensor& b, const Tensor& dc) {
  // TODO: your code here.
  (void)a, (void)b, (void)dc;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
