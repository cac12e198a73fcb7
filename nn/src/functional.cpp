// Scaled dot-product attention: composed from matmul, masks and softmax when
// the weights are wanted (the readable reference), streamed by
// ag::flash_attention (core/src/fast/flash_attention.cpp) when they are not.
// Legend: L queries, S keys, E query/key features, Ev value features; "..."
// the batch dims, which broadcast as in torch.matmul.
#include "attograd/nn/functional.h"

#include <cmath>

namespace ag::nn::functional {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

Shape batch_dims(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - 2);
}

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p) {
  AG_CHECK(q.defined() && k.defined() && v.defined(), kOp, "query, key and value must be defined");
  AG_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, kOp,
           "query, key and value need rank >= 2 ([..., L, E], [..., S, E], [..., S, Ev]), got " +
               shape_str(q.shape()) + ", " + shape_str(k.shape()) + ", " + shape_str(v.shape()));
  AG_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), kOp,
           std::string("query, key and value must share one floating dtype, got ") +
               dtype_name(q.dtype()) + ", " + dtype_name(k.dtype()) + ", " + dtype_name(v.dtype()));
  AG_CHECK(q.size(-1) == k.size(-1), kOp,
           "query " + shape_str(q.shape()) + " and key " + shape_str(k.shape()) +
               " differ in feature size (" + std::to_string(q.size(-1)) + " vs " +
               std::to_string(k.size(-1)) + ")");
  AG_CHECK(k.size(-2) == v.size(-2), kOp,
           "key " + shape_str(k.shape()) + " and value " + shape_str(v.shape()) +
               " differ in length (" + std::to_string(k.size(-2)) + " vs " +
               std::to_string(v.size(-2)) + ")");
  AG_CHECK(dropout_p >= 0 && dropout_p < 1, kOp,
           "dropout_p must be in [0, 1), got " + std::to_string(dropout_p));
  // Throws "scaled_dot_product_attention: shapes [..] and [..] do not broadcast".
  broadcast_shapes(broadcast_shapes(batch_dims(q), batch_dims(k), kOp), batch_dims(v), kOp);
}

// scale, or 1/sqrt(E) when it is nullopt or NaN.
double scale_factor(const Tensor& query, std::optional<double> scale) {
  AG_CHECK(!scale.has_value() || !std::isinf(*scale), kOp,
           "scale must be finite (or NaN for the default 1/sqrt(E)), got " + number_str(*scale));
  return scale.has_value() && !std::isnan(*scale)
             ? *scale
             : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
}

}  // namespace

AttentionResult scaled_dot_product_attention_with_weights(const Tensor& query, const Tensor& key,
                                                          const Tensor& value,
                                                          const Tensor& attn_mask, double dropout_p,
                                                          bool is_causal,
                                                          std::optional<double> scale) {
  check_inputs(query, key, value, dropout_p);
  const double factor = scale_factor(query, scale);
  // scores = q k^T * scale: [..., L, E] @ [..., E, S] -> [..., L, S], computed
  // as (q * scale) k^T: the same product, but the multiplication touches the
  // L x E queries instead of the L x S scores.
  // (backward: dL/dq = dL/dscores k * scale, dL/dk = dL/dscores^T q * scale)
  Tensor scores = matmul(query * factor, transpose(key, -2, -1));
  // The mask broadcasts to [..., L, S] with the batch dims of all three
  // inputs, as in the streaming path: when only value's batch dims are larger,
  // the scores are expanded to them first (a view; its gradient sums back).
  Shape value_batch = batch_dims(value);  // [..., 1, 1]
  value_batch.insert(value_batch.end(), {1, 1});
  const Shape full = broadcast_shapes(scores.shape(), value_batch, kOp);
  if (full != scores.shape()) scores = expand(scores, full);
  scores.set_name("scores");
  // weights = softmax over S of the masked scores (fully masked rows -> 0)
  Tensor weights = attention_softmax(scores, {.attn_mask = attn_mask,
                                              .is_causal = is_causal,
                                              .fully_masked_rows = MaskedRows::Zero,
                                              .mask_value = kMaskedScore,
                                              .op = kOp});
  weights.set_name("attention_weights");
  // output = dropout(weights) v: [..., L, S] @ [..., S, Ev] -> [..., L, Ev]
  // (backward: dL/dweights = dL/doutput v^T, dL/dv = weights^T dL/doutput)
  Tensor output = matmul(dropout(weights, dropout_p, dropout_p > 0), value);
  output.set_name("output");
  return {output, weights};
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  // Dropout needs the weights, and so does the gradient of a float mask
  // (dL/dmask = dL/dscores): those take the materialised path above.
  const bool mask_needs_grad =
      attn_mask.defined() && attn_mask.dtype() != kBool && attn_mask.requires_grad();
  if (dropout_p > 0 || mask_needs_grad)
    return scaled_dot_product_attention_with_weights(query, key, value, attn_mask, dropout_p,
                                                     is_causal, scale)
        .output;
  check_inputs(query, key, value, dropout_p);
  Shape scores_shape = broadcast_shapes(broadcast_shapes(batch_dims(query), batch_dims(key), kOp),
                                        batch_dims(value), kOp);
  scores_shape.push_back(query.size(-2));
  scores_shape.push_back(key.size(-2));
  check_mask(attn_mask, scores_shape, query.dtype(), kOp);
  // The same softmax(q k^T * scale + mask) v, streamed: no [..., L, S] tensor.
  AttentionMasks masks;
  (attn_mask.defined() && attn_mask.dtype() == kBool ? masks.keep : masks.additive) = attn_mask;
  masks.causal = is_causal;
  Tensor output = flash_attention(query, key, value, scale_factor(query, scale), masks);
  output.set_name("output");
  return output;
}

}  // namespace ag::nn::functional
