// d2l's attention modules (the PyTorch code of "Attention Scoring Functions"
// and "Multi-Head Attention"), with the book's parameter names and shapes so
// that a state dict moves between attograd and d2l/PyTorch as a file copy.
//
// Each is the d2l-shaped face of one of the scoring table's functions
// (scoring.h): DotProductAttention of "dot", AdditiveAttention of
// "additive", MultiHeadAttention of "multihead". The scores are that class's,
// the parameters are its (registered here under its names), and the rest is
// attention_pool (pooling.h): a face adds d2l's call, its checks and its
// attention_weights(), nothing that computes.
//
// Legend: B batch, Tq queries, Tk key-value pairs, h hidden units.
//
// Every forward takes
//   queries [B, Tq, query_size], keys [B, Tk, key_size], values [B, Tk, value_size],
//   valid_lens  (optional) d2l lengths: int64 [B] or [B, Tq], 0 <= len <= Tk;
//   attn_mask   (optional) bool keep mask or float additive mask of the
//               inputs' dtype, broadcastable to [B, Tq, Tk] (see masks.h);
//               combined with valid_lens when both are given;
// and keeps attention_weights() of its last call: after masking and softmax,
// before dropout, named "attention_weights" (call .detach() for a heatmap).
// Fully masked rows (valid length 0) follow `masked_rows`: Uniform, as the
// book's -1e6 does, unless set to MaskedRows::Zero.
// need_weights false (as PyTorch's MultiheadAttention(need_weights=False)),
// for the dot-product modules: the output comes from the streaming
// ag::flash_attention, with valid_lens read as lengths, and no [B, Tq, Tk]
// tensor exists, forward or backward; attention_weights() is undefined.
// Dropout in training mode (it acts on the weights) and a float attn_mask
// that requires grad still take the weights path.
// Intermediate tensors carry names (set_name) for the viewer's graph.
// Bad shapes, dtypes or lengths throw ag::Error naming the module and shapes.
#pragma once

#include <memory>

#include "attograd/nn/layers.h"
#include "attograd/nn/masks.h"
#include "attograd/nn/module.h"
#include "attograd/nn/scoring.h"

namespace ag::nn {

// Scaled dot-product attention: softmax(Q K^T / sqrt(d)) V, the table's "dot".
// queries [B, Tq, d], keys [B, Tk, d], values [B, Tk, v] -> [B, Tq, v].
class DotProductAttention : public Module {
  // The table's function this module is the face of: first, as the members
  // below refer to its parts.
  std::unique_ptr<ScoringFunction> scoring_;

 public:
  explicit DotProductAttention(double dropout = 0.0);
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const Tensor& valid_lens = Tensor(), const Tensor& attn_mask = Tensor());
  Tensor operator()(const Tensor& queries, const Tensor& keys, const Tensor& values,
                    const Tensor& valid_lens = Tensor(), const Tensor& attn_mask = Tensor()) {
    return forward(queries, keys, values, valid_lens, attn_mask);
  }
  // [B, Tq, Tk] of the last forward; undefined before the first, and after a
  // forward with need_weights false.
  const Tensor& attention_weights() const { return attention_weights_; }

  MaskedRows masked_rows = MaskedRows::Uniform;
  bool need_weights = true;  // see the header comment

  Dropout& dropout;  // the scoring function's

 private:
  Tensor attention_weights_;
};

// Additive attention: w_v^T tanh(W_q q + W_k k), the table's "additive";
// queries and keys may differ in size. Parameters W_k.weight [h, key_size],
// W_q.weight [h, query_size], w_v.weight [1, h] (no biases), registered in
// that order as in d2l. The scores come from the fused ag::additive_scores,
// so d2l's [B, Tq, Tk, h] "features" tensor is never materialised (nor
// named): the graph goes projected_queries, projected_keys -> scores ->
// attention_weights -> output.
class AdditiveAttention : public Module {
  // The table's function this module is the face of: first, as the members
  // below refer to its parts.
  std::unique_ptr<ScoringFunction> scoring_;

 public:
  AdditiveAttention(int64_t key_size, int64_t query_size, int64_t num_hiddens,
                    double dropout = 0.0);
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const Tensor& valid_lens = Tensor(), const Tensor& attn_mask = Tensor());
  Tensor operator()(const Tensor& queries, const Tensor& keys, const Tensor& values,
                    const Tensor& valid_lens = Tensor(), const Tensor& attn_mask = Tensor()) {
    return forward(queries, keys, values, valid_lens, attn_mask);
  }
  // [B, Tq, Tk] of the last forward; undefined before the first.
  const Tensor& attention_weights() const { return attention_weights_; }

  MaskedRows masked_rows = MaskedRows::Uniform;

  // The scoring function's parameters and dropout.
  Linear &W_k, &W_q, &w_v;
  Dropout& dropout;

 private:
  Tensor attention_weights_;
};

// Multi-head attention as d2l writes it, the table's "multihead": project
// with W_q, W_k, W_v, split the h = num_hiddens features into num_heads heads
// (transpose_qkv), scaled dot-product attention in every head over
// [B * num_heads, T, h / num_heads], join the heads (transpose_output) and
// project with W_o.
// Parameters W_q.weight [h, query_size], W_k.weight [h, key_size],
// W_v.weight [h, value_size], W_o.weight [h, h] (and .bias [h] when bias).
// valid_lens are repeated per head (repeat_interleave, as d2l). attn_mask
// broadcasts to [B, num_heads, Tq, Tk]; a 3-D mask is read as [B, Tq, Tk]
// (shared by the heads), not NumPy-aligned as [num_heads, Tq, Tk].
// Output [B, Tq, h]. need_weights false streams every head at once
// ([B, H, T, h/H], the mask broadcast in place, never expanded per head).
class MultiHeadAttention : public Module {
  // The table's function this module is the face of: first, as the members
  // below refer to its parts.
  std::unique_ptr<ScoringFunction> scoring_;

 public:
  MultiHeadAttention(int64_t key_size, int64_t query_size, int64_t value_size, int64_t num_hiddens,
                     int64_t num_heads, double dropout = 0.0, bool bias = false);
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const Tensor& valid_lens = Tensor(), const Tensor& attn_mask = Tensor());
  Tensor operator()(const Tensor& queries, const Tensor& keys, const Tensor& values,
                    const Tensor& valid_lens = Tensor(), const Tensor& attn_mask = Tensor()) {
    return forward(queries, keys, values, valid_lens, attn_mask);
  }
  // [B, num_heads, Tq, Tk] of the last forward; undefined before the first,
  // and after a forward with need_weights false.
  const Tensor& attention_weights() const { return attention_weights_; }

  MaskedRows masked_rows = MaskedRows::Uniform;
  bool need_weights = true;
  const int64_t num_heads;

  // The scoring function's parameters and dropout.
  Linear &W_q, &W_k, &W_v, &W_o;
  Dropout& dropout;

 private:
  Tensor attention_weights_;
};

// d2l's helpers for multi-head attention.
// [B, T, h] -> [B * num_heads, T, h / num_heads]
Tensor transpose_qkv(const Tensor& X, int64_t num_heads);
// [B * num_heads, T, h / num_heads] -> [B, T, h]
Tensor transpose_output(const Tensor& X, int64_t num_heads);

}  // namespace ag::nn
