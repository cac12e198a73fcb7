#include "attograd/nn/keras.h"

#include <cmath>

#include "attograd/nn/masks.h"
#include "attograd/nn/pooling.h"

namespace ag::nn::keras {

namespace {

// "query [2, 3, 4]" for error messages.
std::string described(const char* what, const Tensor& t) {
  return std::string(what) + " " + shape_str(t.shape());
}

}  // namespace

// ---- the shared pipeline ---------------------------------------------------------

BaseAttention::BaseAttention(std::string name, bool use_scale, double dropout)
    : Module(std::move(name)), use_scale(use_scale), dropout(dropout) {
  AG_CHECK(dropout >= 0 && dropout < 1, type_name().c_str(),
           "dropout must be in [0, 1), got " + std::to_string(dropout));
}

Tensor BaseAttention::forward(const Tensor& query, const Tensor& value, const Tensor& key_or_none,
                              const Tensor& query_mask, const Tensor& value_mask,
                              bool use_causal_mask) {
  const std::string& op = type_name();
  const Tensor key = key_or_none.defined() ? key_or_none : value;

  // ---- argument checks: ranks, dtypes, batch and length agreement ----
  AG_CHECK(query.defined() && value.defined(), op, "query and value are required");
  for (const auto& entry : {std::pair{"query", &query}, {"value", &value}, {"key", &key}}) {
    const char* what = entry.first;
    const Tensor* t = entry.second;
    AG_CHECK(t->dim() == 3, op,
             std::string("expected 3-D ") + what + " [B, T, dim], got " + shape_str(t->shape()));
    check_floating(*t, op.c_str(), what);
    AG_CHECK(t->dtype() == query.dtype(), op,
             std::string(what) + " is " + dtype_name(t->dtype()) + " but query is " +
                 dtype_name(query.dtype()));
  }
  const int64_t B = query.size(0), Tq = query.size(1), Tv = value.size(1);
  AG_CHECK(value.size(0) == B && key.size(0) == B, op,
           "batch sizes differ: " + described("query", query) + ", " + described("value", value) +
               ", " + described("key", key));
  AG_CHECK(key.size(1) == Tv, op,
           "key and value lengths differ: " + described("key", key) + " vs " +
               described("value", value));
  check_widths(query, key);
  for (const auto& entry : named_parameters()) {
    const std::string& name = entry.first;
    const Tensor& p = entry.second;
    AG_CHECK(p.dtype() == query.dtype(), op,
             "parameter '" + name + "' is " + dtype_name(p.dtype()) + " but the inputs are " +
                 dtype_name(query.dtype()) + " (convert the layer with to())");
  }
  // Masks: bool [B, Tq] and [B, Tv], or undefined.
  const auto check_keep_mask = [&](const Tensor& mask, const char* what, const Shape& shape) {
    AG_CHECK(!mask.defined() || (mask.dtype() == kBool && mask.shape() == shape), op,
             std::string(what) + shape_str(shape) + ", got " + dtype_name(mask.dtype()) + " " +
                 shape_str(mask.shape()));
  };
  check_keep_mask(query_mask, "query_mask must be bool [B, Tq] = ", {B, Tq});
  check_keep_mask(value_mask, "value_mask must be bool [B, Tv] = ", {B, Tv});

  // 1. keep [B, 1, Tv] and [Tq, Tv] -> [B, Tq, Tv]
  Tensor keep = value_mask.defined() ? key_keep_to_keep(value_mask, {B, Tq, Tv}) : Tensor();
  if (use_causal_mask) keep = merge_keep(keep, causal_mask(Tq, Tv));
  // 2.-4. scores [B, Tq, Tv], -1e9 where not kept, weights, dropout(weights) @ value
  const Pooled pooled =
      attention_pool({.shape = {B, Tq, Tv}, .make = [&] { return scores(query, key); }}, value,
                     {.keras_keep = keep, .dropout = dropout, .training = is_training(), .op = op});
  attention_weights_ = pooled.weights;
  Tensor out = pooled.output;
  // 5. [B, Tq, dv] * [B, Tq, 1]
  if (query_mask.defined()) out = out * unsqueeze(query_mask, -1).to(out.dtype());
  return out;
}

// ---- Attention (dot product) --------------------------------------------------------

Attention::Attention(bool use_scale, std::string score_mode, double dropout)
    : BaseAttention("Attention", use_scale, dropout), score_mode(std::move(score_mode)) {
  AG_CHECK(this->score_mode == "dot" || this->score_mode == "concat", "Attention",
           "score_mode must be \"dot\" or \"concat\", got \"" + this->score_mode + "\"");
  if (use_scale) {
    scale = scalar_tensor(1.0);
    register_parameter("scale", &scale);
  }
  if (this->score_mode == "concat") {
    concat_score_weight = scalar_tensor(1.0);
    register_parameter("concat_score_weight", &concat_score_weight);
  }
}

void Attention::check_widths(const Tensor& query, const Tensor& key) const {
  AG_CHECK(
      query.size(2) == key.size(2), "Attention",
      "query and key widths differ: " + described("query", query) + " vs " + described("key", key));
}

Tensor Attention::scores(const Tensor& query, const Tensor& key) const {
  if (score_mode == "dot") {
    // [B, Tq, dim] @ [B, dim, Tv] -> [B, Tq, Tv]
    Tensor s = bmm(query, transpose(key, 1, 2));
    return use_scale ? s * scale : s;
  }
  // "concat": [B, Tq, 1, dim] + [B, 1, Tv, dim] -> [B, Tq, Tv, dim]
  Tensor features = unsqueeze(query, 2) + unsqueeze(key, 1);
  if (use_scale) features = scale * features;
  // sum over dim -> [B, Tq, Tv]
  return concat_score_weight * sum(tanh(features), -1);
}

// ---- AdditiveAttention --------------------------------------------------------------

AdditiveAttention::AdditiveAttention(int64_t dim, bool use_scale, double dropout)
    : BaseAttention("AdditiveAttention", use_scale, dropout), dim(dim) {
  AG_CHECK(dim > 0, "AdditiveAttention", "dim must be positive, got " + std::to_string(dim));
  if (use_scale) {
    // Keras' glorot_uniform on [dim]: limit = sqrt(6 / (fan_in + fan_out)), fan_in = fan_out = dim.
    const double limit = std::sqrt(3.0 / static_cast<double>(dim));
    scale = uniform({dim}, -limit, limit);
    register_parameter("scale", &scale);
  }
}

void AdditiveAttention::check_widths(const Tensor& query, const Tensor& key) const {
  AG_CHECK(query.size(2) == dim && key.size(2) == dim, type_name(),
           "query and key must have width dim = " + std::to_string(dim) + ", got " +
               described("query", query) + " and " + described("key", key));
}

Tensor AdditiveAttention::scores(const Tensor& query, const Tensor& key) const {
  // sum_d scale[d] tanh(query[b, i, d] + key[b, j, d]): [B, Tq, Tv], fused, so the
  // [B, Tq, Tv, dim] tensor of tanh(query[:, :, None] + key[:, None]) is never built.
  // Without use_scale every scale is 1.
  return additive_scores(query, key, use_scale ? scale : ones({dim}, query.dtype()));
}

}  // namespace ag::nn::keras
