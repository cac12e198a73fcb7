// Exercise 8: multi-head attention's head split and merge.
//
// Multi-head attention runs h attentions side by side on slices of the
// features: with num_hiddens = h * d, head i reads features i*d ... i*d+d-1.
// Rather than loop over heads, d2l moves the heads into the batch axis, runs
// one batched attention, and moves them back:
//   split_heads  X [B, T, h*d] -> [B*h, T, d], row b*h + i holding head i of item b:
//                out[b*h + i, t, x] = X[b, t, i*d + x]
//   merge_heads  the inverse: [B*h, T, d] -> [B, T, h*d]
// (d2l's transpose_qkv and transpose_output.)
//
// The steps: split the last axis into [h, d] (ag::reshape to [B, T, h, d]),
// bring the heads before time (ag::permute to [B, h, T, d]), and fold the
// heads into the batch (reshape to [B*h, T, d]). Merging undoes each in
// turn. A reshape alone cannot do it: it never changes the order of the
// elements, and the heads must move past the time axis.
//
// Grade it: scripts/exercise.sh 8
#include "exercises.h"

namespace ex {

Tensor split_heads(const Tensor& X, int64_t num_heads) {
  // TODO: your code here.
  (void)X, (void)num_heads;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

Tensor merge_heads(const Tensor& X, int64_t num_heads) {
  // TODO: your code here.
  (void)X, (void)num_heads;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
