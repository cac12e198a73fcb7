// Keras' attention layers, with Keras semantics: tf.keras.layers.Attention
// (Luong, dot product) and tf.keras.layers.AdditiveAttention (Bahdanau).
//
// Shapes (Keras' letters): B batch, Tq queries, Tv keys/values, dim features.
//   query [B, Tq, dim], value [B, Tv, dv], key [B, Tv, dim] (defaults to value)
//   scores, attention_weights() [B, Tq, Tv];  output [B, Tq, dv]
// Keras' documentation writes dv = dim; as in Keras, any value width works.
//
// Each layer is the Keras-shaped face of one of the scoring table's functions
// (scoring.h): Attention "dot" of keras_dot's class, "concat" of
// keras_concat's, AdditiveAttention of keras_additive's. The scores and the
// parameters (registered here under Keras' names) are that class's; the rest
// is attention_pool (pooling.h), as for every attention in attograd.
//
// The calculation, both layers:
//   1. scores = score(query, key), the scoring function's        [B, Tq, Tv]
//        Attention "dot":    scores = query key^T (* scale)
//        Attention "concat": scores = w * sum_d tanh(scale * (query_i + key_j))
//        AdditiveAttention:  scores = sum_d scale * tanh(query_i + key_j)
//   2. keep = value_mask [B, 1, Tv] and causal (key j <= query i) [1, Tq, Tv]
//      scores = scores - 1e9 * (1 - keep)       (Keras: scores -= 1e9 * padding)
//   3. weights = softmax(scores, last axis)   -> attention_weights()
//   4. output = dropout(weights) @ value      (dropout only in training mode)
//   5. output = output * query_mask[..., None] (rows of masked queries are 0)
//
// Masks are bool keep masks, as Keras': true = attend. The -1e9 is added, not
// written over the score (ag::nn::keep_to_additive, masks.h), exactly as Keras
// does, so a masked key gets weight exp(-1e9) = 0 beside any kept key.
// A fully masked row (every key masked, e.g. value_mask all false, or causal
// and value_mask together leaving nothing) gets the same -1e9 on every score.
// It is never NaN, and it is what Keras gives:
//   float32: s - 1e9 rounds to a multiple of ulp(1e9) = 64, so every score
//            below 32 in magnitude becomes exactly -1e9 and the weights are
//            uniform, 1/Tv over all keys (the output row is the mean value);
//   float64: ulp(1e9) is 1.2e-7, the differences survive, and since softmax
//            ignores a common offset the weights are softmax of the unmasked
//            scores, as if the row had no mask.
// Either way, pass a query_mask that is false on such rows to zero them.
//
// attention_weights() is the weights after masking and softmax and before
// dropout (what Keras documents for return_attention_scores; note that Keras'
// code returns them after dropout in training mode, while here they are
// always the pre-dropout weights, as in the d2l modules). It is the same
// in eval mode, where Keras applies no dropout.
#pragma once

#include <memory>
#include <string>

#include "attograd/nn/module.h"
#include "attograd/nn/scoring.h"

namespace ag::nn::keras {

// The part shared by both layers: the checks and Keras' masks; the scores
// are the scoring function's, the pooling attention_pool's.
class BaseAttention : public Module {
  // The table's function this layer is the face of: first, as the members
  // of the layers below refer to its parts.
  std::unique_ptr<ScoringFunction> scoring_;

 public:
  // query [B, Tq, dim], value [B, Tv, dv], key [B, Tv, dim] or undefined
  // (then key = value), query_mask bool [B, Tq] or undefined, value_mask bool
  // [B, Tv] or undefined -> [B, Tq, dv]. All inputs share one float dtype,
  // which is also the parameters' (call to(kFloat64) for float64 inputs).
  Tensor forward(const Tensor& query, const Tensor& value, const Tensor& key = Tensor(),
                 const Tensor& query_mask = Tensor(), const Tensor& value_mask = Tensor(),
                 bool use_causal_mask = false);
  Tensor operator()(const Tensor& query, const Tensor& value, const Tensor& key = Tensor(),
                    const Tensor& query_mask = Tensor(), const Tensor& value_mask = Tensor(),
                    bool use_causal_mask = false) {
    return forward(query, value, key, query_mask, value_mask, use_causal_mask);
  }

  // [B, Tq, Tv] weights of the last forward (undefined before the first).
  const Tensor& attention_weights() const { return attention_weights_; }

  const bool use_scale;
  const double dropout;  // fraction of the weights dropped in training mode

 protected:
  BaseAttention(std::string type_name, std::unique_ptr<ScoringFunction> scoring, bool use_scale,
                double dropout);
  // The scoring function's parameter `name`, or an undefined tensor when it
  // has none (a layer without use_scale has no scale).
  Tensor& part(const std::string& name);
  // Throws unless query and key widths fit this layer (shapes already 3-D
  // with matching batch sizes).
  virtual void check_widths(const Tensor& query, const Tensor& key) const = 0;

 private:
  Tensor attention_weights_;
  Tensor absent_;  // what part() gives for a parameter the function does not have
};

// tf.keras.layers.Attention: dot-product (Luong-style) attention.
//   score_mode "dot":    scores = query key^T, times `scale` when use_scale
//   score_mode "concat": scores = concat_score_weight *
//                                 sum over dim of tanh(scale * (query_i + key_j))
//                        (without use_scale: tanh(query_i + key_j))
// Parameters, as Keras names them: "scale" [] (when use_scale) and
// "concat_score_weight" [] (score_mode "concat"), both initialised to 1.
// query and key must have the same width; any other score_mode throws.
class Attention : public BaseAttention {
 public:
  explicit Attention(bool use_scale = false, std::string score_mode = "dot", double dropout = 0);

  const std::string score_mode;
  // The scoring function's (assigning to them replaces its tensors).
  Tensor& scale;                // [] when use_scale, else undefined
  Tensor& concat_score_weight;  // [] when score_mode == "concat", else undefined

 protected:
  void check_widths(const Tensor& query, const Tensor& key) const override;
};

// tf.keras.layers.AdditiveAttention: additive (Bahdanau-style) attention
// without projections (query and key must already have width `dim`):
//   scores[b, i, j] = sum_d scale[d] * tanh(query[b, i, d] + key[b, j, d])
// Parameter "scale" [dim] when use_scale (else scale = 1), initialised as
// Keras' glorot_uniform does for a 1-D shape (fan_in = fan_out = dim):
// U(-sqrt(3 / dim), sqrt(3 / dim)).
class AdditiveAttention : public BaseAttention {
 public:
  explicit AdditiveAttention(int64_t dim, bool use_scale = true, double dropout = 0);

  const int64_t dim;
  Tensor& scale;  // the scoring function's: [dim] when use_scale, else undefined

 protected:
  void check_widths(const Tensor& query, const Tensor& key) const override;
};

}  // namespace ag::nn::keras
