// The one pooling step of every attention (pooling.h): the masks, the
// softmax, dropout and the values' product, or the same streamed.
// Legend: B batch, n heads, Tq queries, Tk keys, d width, v value width.
#include "attograd/nn/pooling.h"

#include "masks_checked.h"

namespace ag::nn {

namespace {

// True when the output may come from flash_attention without the weights:
// dropout acts on the weights, and a float mask that requires grad gets
// dL/dscores; both need them stored.
bool can_stream(const PoolingOptions& o) {
  const bool dropping = o.training && o.dropout > 0;
  const bool mask_grad =
      o.attn_mask.defined() && o.attn_mask.dtype() != kBool && o.attn_mask.requires_grad();
  return !dropping && !mask_grad;
}

// attn_mask with heads as [B|1, n|1, Tq, Tk]: a 3-D mask is [B, Tq, Tk], the
// same for every head, so [B, 1, Tq, Tk]. Without heads, as it is.
Tensor mask_per_head(const PoolingOptions& o) {
  const bool shared = o.heads > 0 && o.attn_mask.defined() && o.attn_mask.dim() == 3;
  return shared ? unsqueeze(o.attn_mask, 1) : o.attn_mask;
}

// softmax(scale q k^T + masks) v, streamed: no [..., Tq, Tk] tensor is made.
// With heads, q [B * n, Tq, d] is viewed as [B, n, Tq, d] (k and v alike),
// so that the lengths [B|1, 1, Tq|1] and a mask [B|1, n|1, Tq, Tk] broadcast
// over the heads in place, never expanded per head.
Tensor streamed(const Scores& scores, const Tensor& values, const PoolingOptions& o) {
  const int64_t B = scores.shape.front(), n = o.heads;
  const auto per_head = [&](const Tensor& x) {
    return n > 0 ? reshape(x, {B, n, x.size(1), x.size(2)}) : x;
  };
  const Tensor q = per_head(scores.q);
  AttentionMasks masks;
  if (o.valid_lens.defined()) {
    // lengths per row [B, ..., Tq]: [B] -> [B, 1, ..., 1], [B, Tq] -> [B, 1, ..., Tq]
    Shape rows(static_cast<size_t>(q.dim() - 1), 1);
    rows.front() = o.valid_lens.size(0);
    if (o.valid_lens.dim() == 2) rows.back() = o.valid_lens.size(1);
    masks.lengths = reshape(o.valid_lens, rows);
  }
  const Tensor mask = mask_per_head(o);
  (mask.defined() && mask.dtype() == kBool ? masks.keep : masks.additive) = mask;
  masks.causal = o.is_causal;
  masks.masked_rows_uniform = o.fully_masked_rows == MaskedRows::Uniform;
  Tensor output = flash_attention(q, per_head(scores.k), per_head(values), scores.scale, masks);
  output.set_name("output");
  // [B, n, Tq, v] -> [B * n, Tq, v], as the weights path gives it
  return n > 0 ? reshape(output, {B * n, output.size(2), output.size(3)}) : output;
}

}  // namespace

Pooled attention_pool(const Scores& scores, const Tensor& values, const PoolingOptions& o) {
  const int64_t n = o.heads;
  const Shape& shape = scores.shape;  // [B, Tq, Tk] or [..., Tq, Tk]
  // 1. The masks, checked once, against the scores before any heads are
  //    folded in (with heads, a mask of rank 4 is per head: [B, n, Tq, Tk]).
  //    The faces have checked that values share the queries' dtype.
  check_valid_lens(o.valid_lens, shape, o.op);
  if (o.attn_mask.defined()) {
    const bool per_head = n > 0 && o.attn_mask.dim() != 3;
    check_mask(o.attn_mask, per_head ? Shape{shape[0], n, shape[1], shape[2]} : shape,
               values.dtype(), o.op);
  }
  if (!o.need_weights && scores.q.defined() && can_stream(o))
    return {streamed(scores, values, o), Tensor()};

  // 2. scores = a(q, k): [B, Tq, Tk], [B * n, Tq, Tk] or [..., Tq, Tk]
  Tensor s = scores.make();
  s.set_name("scores");
  // 3. weights = softmax of the masked scores over Tk
  //    (backward: dL/dscores = w * (dL/dw - sum_k w dL/dw), 0 at masked keys)
  Tensor weights;
  if (o.keras_keep.defined()) {
    // Keras: scores - 1e9 where a key is masked (added, not written over)
    weights = softmax(s + keep_to_additive(o.keras_keep, s.dtype()), -1);
  } else {
    // One length per head: [B] -> [B * n], [B, Tq] -> [B * n, Tq], and the
    // mask [B|1, n|1, Tq, Tk] (a 3-D one [B, 1, Tq, Tk]) -> expand ->
    // [B, n, Tq, Tk] -> [B * n, Tq, Tk]: row b * n + i is head i of item b,
    // as transpose_qkv orders them.
    Tensor lens = o.valid_lens, mask = mask_per_head(o);
    if (n > 0 && lens.defined()) lens = repeat_interleave(lens, n, 0);
    if (n > 0 && mask.defined()) {
      mask = reshape(expand(mask, {shape[0], n, shape[1], shape[2]}),
                     {shape[0] * n, shape[1], shape[2]});
    }
    weights = detail::attention_softmax_checked(s, {.valid_lens = lens,
                                                    .attn_mask = mask,
                                                    .is_causal = o.is_causal,
                                                    .fully_masked_rows = o.fully_masked_rows,
                                                    .mask_value = o.mask_value,
                                                    .op = o.op});
  }
  weights.set_name("attention_weights");
  // 4. output = dropout(weights) values: [.., Tq, Tk] @ [.., Tk, v] -> [.., Tq, v]
  //    (backward: dL/dweights = dL/doutput values^T, dL/dvalues = weights^T dL/doutput)
  const Tensor dropped = dropout(weights, o.dropout, o.training);
  Tensor output = o.broadcast_batch ? matmul(dropped, values) : bmm(dropped, values);
  output.set_name("output");
  return {output, weights};
}

}  // namespace ag::nn
