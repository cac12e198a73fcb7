#include "attograd/nn/keras.h"

#include "attograd/nn/masks.h"
#include "scoring_functions.h"

namespace ag::nn::keras {

namespace {

// "query [2, 3, 4]" for error messages.
std::string described(const char* what, const Tensor& t) {
  return std::string(what) + " " + shape_str(t.shape());
}

// Checked before the scoring function is made (its Dropout would refuse the
// same value under its own name).
double checked_dropout(const char* layer, double dropout) {
  AG_CHECK(dropout >= 0 && dropout < 1, layer,
           "dropout must be in [0, 1), got " + std::to_string(dropout));
  return dropout;
}

}  // namespace

// ---- the shared pipeline ---------------------------------------------------------

BaseAttention::BaseAttention(std::string name, std::unique_ptr<ScoringFunction> scoring,
                             bool use_scale, double dropout)
    : Module(std::move(name)),
      scoring_(std::move(scoring)),
      use_scale(use_scale),
      dropout(dropout) {
  adopt_parts(*scoring_);
}

Tensor& BaseAttention::part(const std::string& name) {
  for (const auto& [parameter_name, parameter] : scoring_->named_parameters())
    if (parameter_name == name) return scoring_->parameter(name);
  return absent_;
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
  // 2.-4. the scoring function's scores [B, Tq, Tv], -1e9 where not kept,
  // weights, dropout(weights) @ value (attention_pool)
  const Attended attended = scoring_->attend_with_weights(query, scoring_->remember(key, value),
                                                          {.keras_keep = keep, .op = op});
  attention_weights_ = attended.weights;
  Tensor out = attended.context;
  out.set_name("output");
  // 5. [B, Tq, dv] * [B, Tq, 1]
  if (query_mask.defined()) out = out * unsqueeze(query_mask, -1).to(out.dtype());
  return out;
}

// ---- Attention (dot product) --------------------------------------------------------

namespace {

// score_mode "dot" or "concat" -> the table's keras_dot or keras_concat class.
std::unique_ptr<ScoringFunction> attention_scoring(bool use_scale, const std::string& score_mode,
                                                   double dropout) {
  const ScoringSizes sizes{.dropout = checked_dropout("Attention", dropout)};
  if (score_mode == "dot") return make_keras_dot_scoring(sizes, use_scale);
  if (score_mode == "concat") return make_keras_concat_scoring(sizes, use_scale);
  throw Error("Attention: score_mode must be \"dot\" or \"concat\", got \"" + score_mode + "\"");
}

}  // namespace

Attention::Attention(bool use_scale, std::string score_mode, double dropout)
    : BaseAttention("Attention", attention_scoring(use_scale, score_mode, dropout), use_scale,
                    dropout),
      score_mode(std::move(score_mode)),
      scale(part("scale")),
      concat_score_weight(part("concat_score_weight")) {}

void Attention::check_widths(const Tensor& query, const Tensor& key) const {
  AG_CHECK(
      query.size(2) == key.size(2), "Attention",
      "query and key widths differ: " + described("query", query) + " vs " + described("key", key));
}

// ---- AdditiveAttention --------------------------------------------------------------

namespace {

// The table's keras_additive class for queries and keys `dim` wide.
std::unique_ptr<ScoringFunction> additive_scoring(int64_t dim, bool use_scale, double dropout) {
  AG_CHECK(dim > 0, "AdditiveAttention", "dim must be positive, got " + std::to_string(dim));
  return make_keras_additive_scoring({.query_size = dim,
                                      .key_size = dim,
                                      .dropout = checked_dropout("AdditiveAttention", dropout)},
                                     use_scale);
}

}  // namespace

AdditiveAttention::AdditiveAttention(int64_t dim, bool use_scale, double dropout)
    : BaseAttention("AdditiveAttention", additive_scoring(dim, use_scale, dropout), use_scale,
                    dropout),
      dim(dim),
      scale(part("scale")) {}

void AdditiveAttention::check_widths(const Tensor& query, const Tensor& key) const {
  AG_CHECK(query.size(2) == dim && key.size(2) == dim, type_name(),
           "query and key must have width dim = " + std::to_string(dim) + ", got " +
               described("query", query) + " and " + described("key", key));
}

}  // namespace ag::nn::keras
