// Exercise 6: additive attention's scores, forward and backward.
//
// Additive (Bahdanau) attention scores query i against key j with a small
// network: after the projections W_q q and W_k k (done before this function,
// so q and k here are already projected),
//   scores[b, i, j] = sum_x w[x] tanh(q[b, i, x] + k[b, j, x])
//   q [B, Tq, h], k [B, Tk, h], w [h] float64 -> scores [B, Tq, Tk]
//
// Forward, as d2l writes it: broadcast q [B, Tq, 1, h] against
// k [B, 1, Tk, h] (ag::unsqueeze), tanh of the sum [B, Tq, Tk, h], times w
// (broadcast over the last axis) and summed over it.
//
// Backward, by hand. With t = tanh(q_i + k_j) [B, Tq, Tk, h] and the
// upstream gradient dS [B, Tq, Tk]:
//   dw[x]       = sum over b, i, j of dS[b, i, j] t[b, i, j, x]
//   du          = dS[..., None] * w * (1 - t^2)     (tanh' = 1 - tanh^2)
//   dq[b, i, x] = sum over j of du[b, i, j, x]      (q_i met every key)
//   dk[b, j, x] = sum over i of du[b, i, j, x]      (k_j met every query)
// Write it with plain ops on values (no .backward()): the grader compares
// it with numerical derivatives.
//
// Grade it: scripts/exercise.sh 6
#include "exercises.h"

namespace ex {

Tensor additive_scores(const Tensor& q, const Tensor& k, const Tensor& w) {
  // TODO: your code here.
  (void)q, (void)k, (void)w;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

AdditiveGrads additive_scores_backward(const Tensor& q, const Tensor& k, const Tensor& w,
                                       const Tensor& dscores) {
  // TODO: your code here.
  (void)q, (void)k, (void)w, (void)dscores;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
