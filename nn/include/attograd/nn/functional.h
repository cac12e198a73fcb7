// ag::nn::functional — attention as a function, with PyTorch 2's semantics.
//
//   namespace F = ag::nn::functional;
//   Tensor out = F::scaled_dot_product_attention(q, k, v, mask);          // output only
//   auto [out, weights] = F::scaled_dot_product_attention_with_weights(q, k, v, mask);
#pragma once

#include <optional>

#include "attograd/nn/masks.h"

namespace ag::nn::functional {

// What scaled_dot_product_attention_with_weights() hands back.
struct AttentionResult {
  Tensor output;   // [..., L, Ev]
  Tensor weights;  // [..., L, S]: after masking and softmax, before dropout
};

// softmax(q k^T * scale + mask) v, as torch.nn.functional.scaled_dot_product_attention.
//   query [..., L, E], key [..., S, E], value [..., S, Ev] -> [..., L, Ev];
//   the leading (batch) dims broadcast, all three share one floating dtype.
//   attn_mask  undefined, bool (true = may attend) or float of the query's
//              dtype (added to the scores), broadcastable to [..., L, S];
//   dropout_p  dropout on the weights, applied whenever dropout_p > 0 (as
//              PyTorch's function; modules pass 0 in eval mode);
//   is_causal  query i attends to keys j <= i (causal_mask(L, S)); unlike
//              PyTorch it may be combined with attn_mask (both must allow a key);
//   scale      defaults (nullopt or NaN) to 1/sqrt(E); +-inf is an ag::Error.
// Fully masked rows: PyTorch returns NaN there; we return zero weights and a
// zero output row (MaskedRows::Zero), with zero gradients. A float mask's -inf
// entries count as masked keys; finite entries are only added, so a row masked
// with -1e9 everywhere is not "fully masked": it gets softmax(scores - 1e9),
// which is uniform in float32 and close to the unmasked softmax in float64,
// exactly as in PyTorch.
// No weights are returned, so none are stored: the output comes from the
// streaming ag::flash_attention (ops.h), which never makes the [..., L, S]
// scores, forward or backward, and reads attn_mask in place. Dropout
// (dropout_p > 0) and a float attn_mask that requires grad need the weights
// and take the materialised path of _with_weights below.
// Throws ag::Error("scaled_dot_product_attention: ...") naming the shapes.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);
// The same, also returning the attention weights: composed from matmul,
// attention_softmax and matmul (the readable reference the streaming path is
// tested against; the viewer draws its weights).
AttentionResult scaled_dot_product_attention_with_weights(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask = Tensor(),
    double dropout_p = 0.0, bool is_causal = false, std::optional<double> scale = std::nullopt);

}  // namespace ag::nn::functional
