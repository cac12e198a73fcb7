// The one pooling step of every attention in attograd.
//
// Attention is softmax(a(q, k)) v: a scoring function a gives the scores, and
// what follows never changes. attention_pool() is that part, written once:
//
//   weights = masked_softmax(scores)      under the masks below, combined
//   output  = dropout(weights) values     dropout on the weights, as d2l
//
// Its callers: the scoring table's attend_with_weights() (scoring.h), which
// the seq2seq, d2l's modules (attention.h) and Keras' layers (keras.h) call,
// and F::scaled_dot_product_attention (functional.h). Each computes its scores
// (nothing here knows any scoring function) and says how to mask them. The
// masks are checked here, once, against the scores' shape; multi-head
// attention's heads, folded into the batch, get their lengths and masks
// repeated here; and when no weights are wanted and the scores are a scaled
// dot product, the streaming ag::flash_attention computes the same output
// without ever making the [..., Tq, Tk] scores, forward or backward.
//
// Legend: B batch, n heads, Tq queries, Tk keys, d query/key width, v value
// width; "..." the batch dims of the functional call, which broadcast.
#pragma once

#include <functional>
#include <string_view>

#include "attograd/nn/masks.h"

namespace ag::nn {

// The scores of one call, made on demand: a streamed call never makes them.
struct Scores {
  // The scores' shape, [B, Tq, Tk] (with heads: before they are folded into
  // the batch), or [..., Tq, Tk]: what the masks are checked against.
  Shape shape;
  // Makes them: [B, Tq, Tk], [B * n, Tq, Tk] with heads, or [..., Tq, Tk].
  std::function<Tensor()> make;
  // Set (q defined) when make() is scale * q k^T, so that the pooling may
  // stream them: q [B (* n), Tq, d] or [..., Tq, d], k [B (* n), Tk, d].
  Tensor q{}, k{};
  double scale = 0;
};

// How one call masks, drops out and pools; every field has its plain default.
struct PoolingOptions {
  // The masks (masks.h), all optional and combined: a key is attended only
  // if every one allows it. valid_lens are d2l's, int64 [B] or [B, Tq];
  // attn_mask is a bool keep mask or a float additive one (PyTorch 2's),
  // broadcast to the scores' shape, or with heads to [B, n, Tq, Tk], where a
  // 3-D mask is [B, Tq, Tk], the same for every head.
  Tensor valid_lens{};
  Tensor attn_mask{};
  bool is_causal = false;
  MaskedRows fully_masked_rows = MaskedRows::Uniform;
  double mask_value = kD2lMaskValue;  // written over masked scores (d2l's -1e6)
  // Keras' arithmetic instead of the masks above: -1e9 added to the scores
  // where this bool keep mask [B, Tq, Tk] (broadcast) is false, then a plain
  // softmax (keras.h says what that gives a fully masked row). Checked by the
  // Keras layers, which build it from their own masks.
  Tensor keras_keep{};
  // Multi-head attention's heads, folded into the batch (0: none, the
  // scores are [B, Tq, Tk]): valid lengths are repeated per head, as d2l's
  // repeat_interleave, and the mask expanded over the heads.
  int64_t heads = 0;
  // Dropout on the weights (inverted; only when training and p > 0).
  double dropout = 0;
  bool training = false;
  // false: the output only. When the scores are a scaled dot product, no
  // dropout is active and a float mask needs no gradient, it is streamed
  // (ag::flash_attention, valid_lens read as lengths) and no weights exist.
  bool need_weights = true;
  // The values' product broadcasts the batch dims (matmul, PyTorch's) instead
  // of bmm's one batch dim (d2l's graph).
  bool broadcast_batch = false;
  // The name errors are reported under; a view: the string must outlive the call.
  std::string_view op = "attention";
};

struct Pooled {
  Tensor output;   // [B (* n), Tq, v] or [..., Tq, v]; named "output"
  Tensor weights;  // the same shape as the scores, after masking and softmax,
                   // before dropout; named "attention_weights"; undefined
                   // when streamed
};

// scores, values [B (* n), Tk, v] (or [..., Tk, v]) -> the output and weights.
// Throws ag::Error under options.op for bad lengths or masks (masks.h's
// check_valid_lens and check_mask, against scores.shape).
Pooled attention_pool(const Scores& scores, const Tensor& values, const PoolingOptions& options);

}  // namespace ag::nn
