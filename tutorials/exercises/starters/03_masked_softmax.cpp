// Exercise 3: d2l's masked softmax.
//
// A batch of sequences is padded to one length, and attention must not look
// at the padding. d2l passes the real lengths (valid_lens) and masks every
// score at or past a row's length before the softmax:
//   X [B, Tq, n] float64 scores, valid_lens int64 (d2l's two forms)
//     1-D [B]       one length per batch item, shared by its Tq rows
//     2-D [B, Tq]   one length per row
//   -> softmax over the last axis of X with X[..., j] replaced by -1e6
//      wherever j >= the row's length; [B, Tq, n]
// An undefined valid_lens (Tensor()) means no mask: the plain softmax.
//
// Why -1e6 and not 0: a masked score of 0 still gets weight exp(0) / sum;
// exp(-1e6 - max) is exactly 0 in float64. A row of length 0 has every
// score -1e6 and comes out uniform (d2l's behaviour).
//
// One way with ag:: ops: the positions ag::arange(n, ag::kInt64) [n]
// compared with the lengths shaped to broadcast against X ([B, 1, 1] for
// 1-D lengths, [B, Tq, 1] for 2-D: ag::reshape) give a bool keep mask
// (ag::lt); ag::where(keep, X, -1e6) then ag::softmax(..., -1).
//
// Bad input gets a clear error: lengths of any other shape throw ag::Error
// whose message starts with "masked_softmax" and names both shapes
// (AG_CHECK(condition, "masked_softmax", "..." + ag::shape_str(X.shape()))).
//
// Grade it: scripts/exercise.sh 3
#include "exercises.h"

namespace ex {

Tensor masked_softmax(const Tensor& X, const Tensor& valid_lens) {
  // TODO: your code here.
  (void)X, (void)valid_lens;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
