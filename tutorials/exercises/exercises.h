// exercises.h — the functions the exercises ask you to write. Each is defined
// in your copy of its starter (my-exercises/NN_name.cpp, made by
// scripts/exercise.sh), which says what it computes, with the math and the
// shapes; README.md lists the exercises in order.
//
// Every tensor is float64: the graders compare to 1e-12 and take numerical
// derivatives.
#pragma once

#include <attograd/core.h>
#include <attograd/nn/scoring.h>

#include <memory>

#include <vector>

namespace ex {

using ag::Tensor;

// 1. c = a * b with broadcasting: the gradients of a and b from dc.
struct MulGrads {
  Tensor da, db;
};
MulGrads mul_backward(const Tensor& a, const Tensor& b, const Tensor& dc);

// 2. softmax over the last axis that does not overflow.
Tensor stable_softmax(const Tensor& x);

// 3. d2l's masked_softmax: lengths per batch item (1-D) or per row (2-D).
Tensor masked_softmax(const Tensor& X, const Tensor& valid_lens);

// 4. the softmax's backward: dX from its output Y and dY.
Tensor softmax_backward(const Tensor& Y, const Tensor& dY);

// 5. C = bmm(A, B): the gradients of A and B from dC.
struct BmmGrads {
  Tensor da, db;
};
BmmGrads bmm_backward(const Tensor& a, const Tensor& b, const Tensor& dc);

// 6. additive attention's scores, and their backward by hand.
Tensor additive_scores(const Tensor& q, const Tensor& k, const Tensor& w);
struct AdditiveGrads {
  Tensor dq, dk, dw;
};
AdditiveGrads additive_scores_backward(const Tensor& q, const Tensor& k, const Tensor& w,
                                       const Tensor& dscores);

// 7. scaled dot-product attention with d2l's valid lengths and a causal mask.
Tensor dot_product_attention(const Tensor& queries, const Tensor& keys, const Tensor& values,
                             const Tensor& valid_lens, bool causal);

// 8. multi-head attention's head split and merge (d2l's transpose_qkv and
// transpose_output).
Tensor split_heads(const Tensor& X, int64_t num_heads);
Tensor merge_heads(const Tensor& X, int64_t num_heads);

// 9. one GRU step, PyTorch's gates.
struct GRUWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;  // [3H, I], [3H, H], [3H], [3H]: gates r, z, n
};
Tensor gru_cell(const Tensor& x, const Tensor& h, const GRUWeights& weights);

// 10. one step of beam search: the K best extensions of K kept sequences.
struct BeamChoice {
  double log_prob;  // the extended sequence's log-probability
  int64_t beam;     // which kept sequence it extends
  int64_t token;    // with which token
};
std::vector<BeamChoice> beam_step(const Tensor& beam_log_probs, const Tensor& next_log_probs,
                                  int64_t beam_size);

// 11. your own scoring function: Luong's general score q^T W_a k as a class
// of nn's table (nn::ScoringFunction); the factory the table calls.
std::unique_ptr<ag::nn::ScoringFunction> make_my_scoring(const ag::nn::ScoringSizes& sizes);

}  // namespace ex
