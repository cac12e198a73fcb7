// The reference switch: run every op on the plain code a learner reads.
//
// attograd's fast path (the SIMD GEMM, the float32 vector kernels, the fused
// and streamed ops, the thread pool) computes what a few lines of plain code
// compute, only faster. The switch makes the library take those lines
// instead, everywhere, as PyTorch's math backend does for its fused
// attention: any program (a tutorial, the viewer, a training run) then runs
// on the code a learner can step through, and a test can check a fast
// kernel against its plain formula inside the same program.
//
//   ATTOGRAD_REFERENCE=1 build/tutorial_05_additive_attention    // the whole run
//   ag::set_reference_mode(true);                                 // from here on
//   { ag::ReferenceModeGuard plain; ... }                         // a block
//
// In reference mode:
//   - every matrix product is the triple loop (kernels::gemm_naive);
//   - every loop runs on the calling thread (no thread pool);
//   - float32 exp, tanh, softmax and sums take their scalar loops, not the
//     hand-written vector kernels;
//   - each fused op is its composition of plain ops, below, so the autograd
//     graph is d2l's: additive scores are sum(w * tanh(q' + k')), a GRU step
//     is its gates, the streamed attention is the materialised one.
// The results agree with the fast path's to rounding (tests/test_reference.cpp:
// 1e-10 in float64, 1e-5 in float32); the fast path's own results do not
// change with the switch off.
#pragma once

#include "attograd/ops.h"
#include "attograd/reference_mode.h"
#include "attograd/tensor.h"

namespace ag {

// The composed reference of each fused op, written with plain ops (so
// autograd differentiates it op by op). Each lives beside its fused op, in
// the same file; the fused op calls it in reference mode. Arguments and
// results as the fused op's (ops.h); they assume the fused op's checks
// passed.
namespace reference {

// sum(w * tanh(unsqueeze(q, 2) + unsqueeze(k, 1)), -1): d2l's broadcast
// (ops_attention.cpp).
Tensor additive_scores(const Tensor& q, const Tensor& k, const Tensor& w);
// w = softmax(where(keep, x, fill), -1); zero_masked ? where(keep, w, 0) : w,
// fill clamped to the dtype's finite range (ops_softmax.cpp).
Tensor masked_softmax_last(const Tensor& x, const Tensor& keep, double fill, bool zero_masked);
// The gates, one op each (ops_rnn.cpp):
//   r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r * gh_n),
//   h' = (1 - z) * n + z * h
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h);
// A loop over the steps of gru_cell, padding steps passing h through (ops_rnn.cpp).
Tensor gru_layer(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh,
                 bool reverse, const Tensor& lengths);
// The materialised attention: softmax(q k^T * scale + masks) v, rows with no
// key left 0 or the mean of v (fast/flash_attention.cpp).
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                       const AttentionMasks& masks);
// (x - mean) / sqrt(var + eps) * weight + bias over the trailing dims (ops_norm.cpp).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps);

}  // namespace reference
}  // namespace ag
