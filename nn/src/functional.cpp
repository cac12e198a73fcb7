// Scaled dot-product attention, the function-shaped face of the table's `dot`:
// its checks here, its scores dot's own (scaled_dot_scores, scoring_dot.cpp),
// the rest attention_pool (pooling.h): composed from masks, softmax and matmul
// when the weights are wanted (the readable reference), streamed by
// ag::flash_attention when they are not.
// Legend: L queries, S keys, E query/key features, Ev value features; "..."
// the batch dims, which broadcast as in torch.matmul.
#include "attograd/nn/functional.h"

#include <cmath>

#include "attograd/nn/pooling.h"
#include "scoring_functions.h"

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

// The scale the caller gave, or nullopt for the default 1/sqrt(E) (given as
// nullopt or NaN, as PyTorch's None).
std::optional<double> given_scale(std::optional<double> scale) {
  AG_CHECK(!scale.has_value() || !std::isinf(*scale), kOp,
           "scale must be finite (or NaN for the default 1/sqrt(E)), got " + number_str(*scale));
  return scale.has_value() && !std::isnan(*scale) ? scale : std::nullopt;
}

// The scores' shape [..., L, S], the batch dims of all three inputs
// broadcast (so that the mask broadcasts to them, as in the streaming path),
// and the call to attention_pool, with or without the weights.
AttentionResult pool(const Tensor& query, const Tensor& key, const Tensor& value,
                     const Tensor& attn_mask, double dropout_p, bool is_causal,
                     std::optional<double> scale, bool need_weights) {
  check_inputs(query, key, value, dropout_p);
  const std::optional<double> given = given_scale(scale);
  const double factor =
      given.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));  // streamed path's
  Shape shape = broadcast_shapes(broadcast_shapes(batch_dims(query), batch_dims(key), kOp),
                                 batch_dims(value), kOp);
  shape.push_back(query.size(-2));
  shape.push_back(key.size(-2));
  const auto make_scores = [&] {
    // dot's scores q k^T / sqrt(E), or q k^T * scale: [..., L, S]
    Tensor scores = scaled_dot_scores(query, key, given);
    // When only value's batch dims are larger, the scores are expanded to
    // them (a view; its gradient sums back).
    return scores.shape() == shape ? scores : expand(scores, shape);
  };
  // Fully masked rows give 0 (PyTorch: NaN); dropout whenever dropout_p > 0;
  // the values' product broadcasts the batch dims (matmul, as PyTorch).
  const Pooled pooled = attention_pool(
      {.shape = shape, .make = make_scores, .q = query, .k = key, .scale = factor}, value,
      {.attn_mask = attn_mask,
       .is_causal = is_causal,
       .fully_masked_rows = MaskedRows::Zero,
       .mask_value = kMaskedScore,
       .dropout = dropout_p,
       .training = dropout_p > 0,
       .need_weights = need_weights,
       .broadcast_batch = true,
       .op = kOp});
  return {pooled.output, pooled.weights};
}

}  // namespace

AttentionResult scaled_dot_product_attention_with_weights(const Tensor& query, const Tensor& key,
                                                          const Tensor& value,
                                                          const Tensor& attn_mask, double dropout_p,
                                                          bool is_causal,
                                                          std::optional<double> scale) {
  return pool(query, key, value, attn_mask, dropout_p, is_causal, scale, /*need_weights=*/true);
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  // Streamed (no [..., L, S] tensor) unless dropout or a float mask's
  // gradient needs the weights.
  return pool(query, key, value, attn_mask, dropout_p, is_causal, scale, /*need_weights=*/false)
      .output;
}

}  // namespace ag::nn::functional
