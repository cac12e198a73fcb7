// Every differentiable op, as free functions (and operators where natural).
// Elementwise ops broadcast as NumPy does; negative dims count from the end.
// Each op lives in one .cpp file of core/src/ops_*.cpp with its backward
// written right below its forward (the differentiable Tensor members
// contiguous, clone and to in ops_copy.cpp).
#pragma once

#include <utility>
#include <vector>

#include "attograd/tensor.h"

namespace ag {

// ---- elementwise binary (ops_binary.cpp) ------------------------------------
// Both operands must share a dtype (no silent promotion); a scalar takes the
// tensor's dtype. int64 division truncates toward zero (PyTorch's
// div(..., rounding_mode="trunc"), not its float-returning `/`); a zero
// divisor throws. int64 add, sub, mul, div, neg, abs and sum wrap around on
// overflow (two's complement, as PyTorch): INT64_MAX + 1 is INT64_MIN, and so
// are -INT64_MIN, |INT64_MIN| and INT64_MIN / -1. Never undefined behaviour.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& base, double exponent);
Tensor pow(const Tensor& base, const Tensor& exponent);
// elementwise; gradient to the larger (a on ties)
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);

// Comparisons and logic give bool tensors and are not differentiable. Two
// tensors broadcast and must share a dtype. NaN compares as in IEEE (and
// PyTorch): unequal to everything, itself included, and neither < nor >.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// With a number: a floating tensor compares in its own dtype (the number
// rounded to it, as PyTorch: a float32 0.1 equals 0.1), an int64 or bool one
// (as 0 and 1) with the number's exact value (lens < 2.5 is lens <= 2).
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
// On bool tensors only (anything else throws), broadcasting.
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);
// The operators, as PyTorch's: x < 0.5, 0.5 < x (that is x > 0.5), a == b
// (elementwise values; Tensor::is_same compares handles), (x > 0) & ~pad.
// & | ~ are logical_and, logical_or, logical_not (bool tensors only).
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator==(double a, const Tensor& b);
Tensor operator!=(double a, const Tensor& b);
Tensor operator<(double a, const Tensor& b);
Tensor operator<=(double a, const Tensor& b);
Tensor operator>(double a, const Tensor& b);
Tensor operator>=(double a, const Tensor& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator~(const Tensor& a);

// ---- elementwise unary (ops_unary.cpp) ---------------------------------------
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);

// ---- reductions (ops_reduce.cpp) ---------------------------------------------
Tensor sum(const Tensor& x);  // all elements -> 0-d
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
// Over several dims at once (as sum; an empty list reduces nothing).
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor max(const Tensor& x);  // all elements -> 0-d
// Values of the maximum along `dim` (the gradient goes to the first maximum).
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false);
// torch.max(x, dim): the values (differentiable, as max) and, at the same
// shape, the int64 index of the first maximum (as argmax).
struct MaxResult {
  Tensor values, indices;
};
MaxResult max_with_indices(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // int64

// ---- shape and views (ops_shape.cpp) -----------------------------------------
Tensor reshape(const Tensor& x, Shape shape);  // one dim may be -1
Tensor view(const Tensor& x, Shape shape);     // reshape that requires no copy
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x);               // all size-1 dims
Tensor squeeze(const Tensor& x, int64_t dim);  // that dim, if its size is 1
Tensor expand(const Tensor& x, Shape shape);   // -1 keeps a dim
Tensor broadcast_to(const Tensor& x, const Shape& shape);

// ---- indexing, joining, selecting (ops_index.cpp) ----------------------------
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim);
// `repeats` is int64 1-D with one count per slice along dim.
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, int64_t dim);
// x with `value` wherever the bool mask (broadcast to x) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
// cond ? a : b, elementwise with broadcasting; cond is bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
// The `length` entries [start, start + length) along dim, as a copy (PyTorch's
// narrow gives a view); a negative start counts from the end.
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
// out[..., i, ...] = x[..., index[i], ...] along dim; index is int64 1-D.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);

// ---- matmul family (ops_matmul.cpp) ------------------------------------------
// All of them call kernels::gemm (attograd/kernels/gemm.h), forward and backward.
Tensor matmul(const Tensor& a, const Tensor& b);  // torch.matmul rules, batched broadcast
Tensor bmm(const Tensor& a, const Tensor& b);     // [B, n, k] @ [B, k, m] -> [B, n, m]
Tensor mm(const Tensor& a, const Tensor& b);      // [n, k] @ [k, m] -> [n, m]
// x W^T (+ b) over the last axis of any-rank x; W is [out, in]. Uses the
// transposed kernel, never a materialised W^T.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- softmax family (ops_softmax.cpp) ----------------------------------------
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// Softmax over the last axis of where(keep, x, fill), in one pass and without
// materialising the filled scores (the kernel behind nn's masked softmax).
// keep is bool and broadcasts to x. With zero_masked, weights where keep is
// false come out 0 (so a fully masked row is all 0); otherwise a fully
// masked row is uniform (every entry is `fill`). A NaN fill throws; a fill
// beyond the dtype's finite range (-inf, or -1e300 in float32) is clamped to
// it, so no row gives NaN. Kept scores below `fill` lose to the masked keys
// (d2l's -1e6 behaves so): the lowest finite fill makes that impossible. Its
// composed reference, reference::masked_softmax_last (attograd/reference.h):
//   w = softmax(where(keep, x, fill), -1);  zero_masked ? where(keep, w, 0) : w
Tensor masked_softmax_last(const Tensor& x, const Tensor& keep, double fill, bool zero_masked);

// ---- attention scores (ops_attention.cpp) ------------------------------------
// Additive (Bahdanau) attention scores, fused:
//   scores[b, i, j] = sum_x w[x] tanh(q[b, i, x] + k[b, j, x])
// q [B, Tq, h], k [B, Tk, h], w [h] -> [B, Tq, Tk], one floating dtype, no
// broadcasting. Equals reference::additive_scores (attograd/reference.h),
// sum(w * tanh(unsqueeze(q, 2) + unsqueeze(k, 1)), -1),
// without materialising that [B, Tq, Tk, h] tensor, forward or backward,
// beyond 2^20 entries (up to that size the forward keeps its tanh for the
// backward).
Tensor additive_scores(const Tensor& q, const Tensor& k, const Tensor& w);

// ---- recurrent cells (ops_rnn.cpp) -------------------------------------------
// One GRU step's gate math (torch.nn.GRU's), fused: with the input side
// gi = W_ih x + b_ih [B, 3H] and the hidden side gh = W_hh h + b_hh [B, 3H]
// (gates in PyTorch's order r, z, n) and h [B, H]:
//   r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z),
//   n = tanh(gi_n + r * gh_n),  h' = (1 - z) * n + z * h   -> [B, H]
// One floating dtype, no broadcasting.
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h);
// All T steps of one GRU layer as one op: with gi [T, B, 3H] the input side
// of every step (x_t W_ih^T + b_ih), h0 [B, H], w_hh [3H, H], b_hh [3H]:
//   h_t = gru_cell(gi_t, h_{t-1} W_hh^T + b_hh, h_{t-1})  (h_{-1} = h0)
// -> [h_0, ..., h_{T-1}] [T, B, H]. One floating dtype, T, B, H >= 1.
// reverse = true runs from the last position to the first (a bidirectional
// GRU's backward direction): h_t = gru_cell(gi_t, h_{t+1} W_hh^T + b_hh,
// h_{t+1}), h_T = h0, out[t] = h_t still at position t (no reversed copy).
// lengths int64 [B] (optional, each in [1, T]): positions t >= lengths[b] of
// row b are padding that the state passes through unchanged (out[t, b] =
// h_prev[b]), so that reverse starts at the row's last valid position, as
// torch's packed sequences.
Tensor gru_layer(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh,
                 bool reverse = false, const Tensor& lengths = Tensor());

// ---- streaming attention (fast/flash_attention.cpp) ---------------------------
// Which keys each query may attend, for flash_attention; all optional and
// combined (a key is attended only if every one allows it). Shapes are
// NumPy-broadcastable to the scores [..., L, S] (lengths to [..., L]) and are
// read in place: a broadcast mask is never expanded to [..., L, S].
struct AttentionMasks {
  Tensor keep;          // bool, true = may attend
  Tensor additive;      // q's float dtype, added to the scaled scores; -inf = masked.
                        // Not differentiated (callers that need its gradient use
                        // the materialised attention).
  Tensor lengths;       // int64: row i sees keys j < lengths[..., i] (d2l's valid_lens)
  bool causal = false;  // key j <= query i (aligned top left)
  bool masked_rows_uniform = false;  // rows with no key left: mean of v (d2l's
                                     // -1e6 rows) instead of 0
};
// softmax(q k^T * scale + masks) v over the last axis, streamed: keys and
// values in blocks with an online softmax, so the [..., L, S] scores and
// weights are never stored, forward or backward (FlashAttention-2; the file
// explains it). q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev];
// the batch dims broadcast; one floating dtype; a finite scale. A row with no
// key left gives 0 (or the mean of v, see masked_rows_uniform) and zero
// gradients to q and k.
// nn::functional::scaled_dot_product_attention calls it when no weights are
// needed.
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                       const AttentionMasks& masks = {});

// ---- normalization (ops_norm.cpp) --------------------------------------------
// PyTorch's F.layer_norm: each row of the trailing dims normalized_shape
// (x [..., *normalized_shape]) is normalized to mean 0 and variance 1
// (biased variance, eps added under the square root), then scaled by weight
// and shifted by bias (each shaped normalized_shape; either may be undefined):
//   y = (x - mean) / sqrt(var + eps) * weight + bias
// One fused kernel, forward and backward; its composed reference is
// reference::layer_norm (attograd/reference.h).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// ---- random and losses (ops_loss.cpp) ----------------------------------------
// Inverted dropout: in training, zero each element with probability p and scale
// the rest by 1/(1-p); identity when !training or p == 0. p in [0, 1).
Tensor dropout(const Tensor& x, double p, bool training);
// mean((input - target)^2) (reduction "mean", as PyTorch's default)
Tensor mse_loss(const Tensor& input, const Tensor& target);
// logits [N, C] (or [C]) and int64 targets [N] (or 0-d): mean over N of
// -log_softmax(logits)[n, target[n]]. Targets out of [0, C) throw.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);

}  // namespace ag
