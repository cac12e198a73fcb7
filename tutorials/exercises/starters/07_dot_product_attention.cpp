// Exercise 7: scaled dot-product attention, with padding and causal masks.
//
//   queries [B, Tq, d], keys [B, Tk, d], values [B, Tk, v] float64
//   scores  = queries keys^T / sqrt(d)                [B, Tq, Tk]
//   weights = masked softmax of scores over the keys  [B, Tq, Tk]
//   output  = weights values                          [B, Tq, v]
// Dividing by sqrt(d) keeps the scores' variance near 1 whatever d is: for
// q and k of independent unit entries, q . k has variance d.
//
// Two masks, either or both:
//   valid_lens  d2l's lengths (exercise 3): int64 [B] or [B, Tq]; keys at
//               or past a row's length are masked; undefined: none
//   causal      query i may not look at a later key: keys j > i are masked
//               (a decoder's self-attention, which must not see the future)
// A masked score becomes -1e6 before the softmax, as in d2l.
//
// Build it from ag:: ops (ag::bmm, ag::transpose, ag::arange, ag::lt, ag::le,
// ag::logical_and, ag::where, ag::softmax), so that autograd differentiates it.
//
// Grade it: scripts/exercise.sh 7
#include "exercises.h"

namespace ex {

Tensor dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                             const Tensor& valid_lens, bool causal) {
  // TODO: your code here.
  (void)queries, (void)keys, (void)values, (void)valid_lens, (void)causal;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
