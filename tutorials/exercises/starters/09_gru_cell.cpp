// Exercise 9: one GRU step.
//
// A gated recurrent unit updates its state h [B, H] from an input
// x [B, I] with two gates and a candidate, in PyTorch's (and d2l's) form:
//   r  = sigmoid(W_ir x + b_ir + W_hr h + b_hr)      reset gate      [B, H]
//   z  = sigmoid(W_iz x + b_iz + W_hz h + b_hz)      update gate     [B, H]
//   n  = tanh(W_in x + b_in + r * (W_hn h + b_hn))   candidate       [B, H]
//   h' = (1 - z) * n + z * h                         z: how much of the old state stays
// The weights come stacked as PyTorch stores them, gates in the order r, z, n:
//   w_ih [3H, I] = [W_ir; W_iz; W_in],  w_hh [3H, H],  b_ih [3H],  b_hh [3H]
// so ag::linear(x, w_ih, b_ih) gives all three input sides at once [B, 3H],
// and ag::narrow(t, 1, g * H, H) picks gate g of them.
//
// Note where r goes: PyTorch multiplies the hidden side after its linear map
// (r * (W_hn h + b_hn)); Cho et al.'s first GRU put it before (W_hn (r * h)).
// The two differ, and models trained in PyTorch expect the first.
//
// Backward: none to write. Build it from ag:: ops and autograd takes it
// through; the grader checks that gradient.
//
// Grade it: scripts/exercise.sh 9
#include "exercises.h"

namespace ex {

Tensor gru_cell(const Tensor& x, const Tensor& h, const GRUWeights& weights) {
  // TODO: your code here.
  (void)x, (void)h, (void)weights;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
