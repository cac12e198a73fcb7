// d2l's attention modules: the checks and the call of d2l's code, over the
// scoring table's classes (attention.h says which).
// Legend: B batch, Tq queries, Tk key-value pairs, h hidden units, H heads.
#include "attograd/nn/attention.h"

#include "shape_text.h"

namespace ag::nn {

namespace {

// The checks every module runs on queries [B, Tq, *], keys [B, Tk, *] and
// values [B, Tk, *]: defined, 3-D, one floating dtype (the parameters' when
// the module has some), one batch size, as many values as keys.
void check_qkv(const std::string& module, const Tensor& queries, const Tensor& keys,
               const Tensor& values, const Tensor& parameter = Tensor()) {
  const char* op = module.c_str();
  AG_CHECK(queries.defined() && keys.defined() && values.defined(), op,
           "queries, keys and values must be defined");
  // Built only when a check fails (AG_CHECK evaluates its message lazily).
  const auto shapes = [&] {
    return "queries " + shape_str(queries.shape()) + ", keys " + shape_str(keys.shape()) +
           ", values " + shape_str(values.shape());
  };
  AG_CHECK(
      queries.dim() == 3 && keys.dim() == 3 && values.dim() == 3, op,
      "expected 3-D queries [B, Tq, *], keys [B, Tk, *] and values [B, Tk, *], got " + shapes());
  AG_CHECK(is_floating(queries.dtype()) && keys.dtype() == queries.dtype() &&
               values.dtype() == queries.dtype(),
           op,
           std::string("queries, keys and values must share one floating dtype, got ") +
               dtype_name(queries.dtype()) + ", " + dtype_name(keys.dtype()) + ", " +
               dtype_name(values.dtype()));
  if (parameter.defined())
    AG_CHECK(queries.dtype() == parameter.dtype(), op,
             std::string("inputs are ") + dtype_name(queries.dtype()) + " but the parameters are " +
                 dtype_name(parameter.dtype()) + " (call .to(ag::k" +
                 (queries.dtype() == kFloat64 ? "Float64" : "Float32") + ") on the module)");
  AG_CHECK(queries.size(0) == keys.size(0) && keys.size(0) == values.size(0), op,
           "batch sizes differ: " + shapes());
  AG_CHECK(keys.size(1) == values.size(1), op,
           "keys " + shape_str(keys.shape()) + " and values " + shape_str(values.shape()) +
               " differ in length (" + std::to_string(keys.size(1)) + " vs " +
               std::to_string(values.size(1)) + ")");
}

// "queries [2, 1, 3] have 3 features, but query_size is 20"
void check_features(const std::string& module, const Tensor& x, const char* what, int64_t expected,
                    const char* size_name) {
  AG_CHECK(x.size(-1) == expected, module.c_str(),
           std::string(what) + " " + shape_str(x.shape()) + " have " + std::to_string(x.size(-1)) +
               " features, but " + size_name + " is " + std::to_string(expected));
}

int64_t checked_heads(int64_t num_hiddens, int64_t num_heads) {
  AG_CHECK(num_heads > 0 && num_hiddens > 0 && num_hiddens % num_heads == 0, "MultiHeadAttention",
           "num_hiddens " + std::to_string(num_hiddens) +
               " is not a positive multiple of num_heads " + std::to_string(num_heads));
  return num_heads;
}

// A part of the face's scoring function (a parameter's Linear, its
// dropout), as the face exposes it under the same name.
template <class Part>
Part& part(const ScoringFunction& scoring, const std::string& name) {
  for (const auto& [child_name, child] : scoring.named_children())
    if (child_name == name)
      if (auto* typed = dynamic_cast<Part*>(child)) return *typed;
  throw Error(scoring.type_name() + ": has no part '" + name + "'");
}

// Every face's call: the keys and values remembered, the queries attended
// (scores, then attention_pool), the weights kept; the output named as d2l's.
Tensor face_forward(ScoringFunction& scoring, const Tensor& queries, const Tensor& keys,
                    const Tensor& values, const AttendOptions& options, Tensor& weights) {
  const Attended attended =
      scoring.attend_with_weights(queries, scoring.remember(keys, values), options);
  weights = attended.weights;
  Tensor output = attended.context;
  output.set_name("output");
  return output;
}

}  // namespace

// ---- DotProductAttention -------------------------------------------------------------

DotProductAttention::DotProductAttention(double dropout_p)
    : Module("DotProductAttention"),
      scoring_(make_scoring_function("dot", {.dropout = dropout_p})),
      dropout(part<Dropout>(*scoring_, "dropout")) {
  adopt_parts(*scoring_);
}

Tensor DotProductAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                    const Tensor& valid_lens, const Tensor& attn_mask) {
  check_qkv(type_name(), queries, keys, values);
  AG_CHECK(queries.size(2) == keys.size(2), type_name().c_str(),
           "queries " + shape_str(queries.shape()) + " and keys " + shape_str(keys.shape()) +
               " differ in feature size (" + std::to_string(queries.size(2)) + " vs " +
               std::to_string(keys.size(2)) + "); use AdditiveAttention for different sizes");
  return face_forward(*scoring_, queries, keys, values,
                      {.valid_lens = valid_lens,
                       .attn_mask = attn_mask,
                       .fully_masked_rows = masked_rows,
                       .need_weights = need_weights,
                       .op = type_name()},
                      attention_weights_);
}

// ---- AdditiveAttention ---------------------------------------------------------------

AdditiveAttention::AdditiveAttention(int64_t key_size, int64_t query_size, int64_t num_hiddens,
                                     double dropout_p)
    : Module("AdditiveAttention"),
      scoring_(make_scoring_function("additive", {.query_size = query_size,
                                                  .key_size = key_size,
                                                  .num_hiddens = num_hiddens,
                                                  .dropout = dropout_p})),
      W_k(part<Linear>(*scoring_, "W_k")),
      W_q(part<Linear>(*scoring_, "W_q")),
      w_v(part<Linear>(*scoring_, "w_v")),
      dropout(part<Dropout>(*scoring_, "dropout")) {
  adopt_parts(*scoring_);
}

Tensor AdditiveAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                  const Tensor& valid_lens, const Tensor& attn_mask) {
  check_qkv(type_name(), queries, keys, values, W_q.weight);
  check_features(type_name(), queries, "queries", W_q.in_features, "query_size");
  check_features(type_name(), keys, "keys", W_k.in_features, "key_size");
  return face_forward(*scoring_, queries, keys, values,
                      {.valid_lens = valid_lens,
                       .attn_mask = attn_mask,
                       .fully_masked_rows = masked_rows,
                       .op = type_name()},
                      attention_weights_);
}

// ---- MultiHeadAttention --------------------------------------------------------------

Tensor transpose_qkv(const Tensor& X, int64_t num_heads) {
  AG_CHECK(X.defined() && X.dim() == 3 && num_heads > 0 && X.size(2) % num_heads == 0,
           "transpose_qkv",
           "expected [B, T, h] with h a multiple of num_heads " + std::to_string(num_heads) +
               ", got " + shape_or_none(X));
  const int64_t B = X.size(0), T = X.size(1), dh = X.size(2) / num_heads;
  // [B, T, h] -> [B, T, H, h/H]
  Tensor out = reshape(X, {B, T, num_heads, dh});
  // [B, T, H, h/H] -> [B, H, T, h/H]
  out = permute(out, {0, 2, 1, 3});
  // [B, H, T, h/H] -> [B * H, T, h/H]
  return reshape(out, {B * num_heads, T, dh});
}

Tensor transpose_output(const Tensor& X, int64_t num_heads) {
  AG_CHECK(X.defined() && X.dim() == 3 && num_heads > 0 && X.size(0) % num_heads == 0,
           "transpose_output",
           "expected [B * num_heads, T, h/num_heads] with num_heads " + std::to_string(num_heads) +
               ", got " + shape_or_none(X));
  const int64_t B = X.size(0) / num_heads, T = X.size(1), dh = X.size(2);
  // [B * H, T, h/H] -> [B, H, T, h/H]
  Tensor out = reshape(X, {B, num_heads, T, dh});
  // [B, H, T, h/H] -> [B, T, H, h/H]
  out = permute(out, {0, 2, 1, 3});
  // [B, T, H, h/H] -> [B, T, h]
  return reshape(out, {B, T, num_heads * dh});
}

MultiHeadAttention::MultiHeadAttention(int64_t key_size, int64_t query_size, int64_t value_size,
                                       int64_t num_hiddens, int64_t num_heads, double dropout_p,
                                       bool bias)
    : Module("MultiHeadAttention"),
      scoring_(
          make_scoring_function("multihead", {.query_size = query_size,
                                              .key_size = key_size,
                                              .num_hiddens = num_hiddens,
                                              .num_heads = checked_heads(num_hiddens, num_heads),
                                              .dropout = dropout_p,
                                              .value_size = value_size,
                                              .bias = bias})),
      num_heads(num_heads),
      W_q(part<Linear>(*scoring_, "W_q")),
      W_k(part<Linear>(*scoring_, "W_k")),
      W_v(part<Linear>(*scoring_, "W_v")),
      W_o(part<Linear>(*scoring_, "W_o")),
      dropout(part<Dropout>(*scoring_, "dropout")) {
  adopt_parts(*scoring_);
}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const Tensor& valid_lens, const Tensor& attn_mask) {
  const std::string& op = type_name();
  check_qkv(op, queries, keys, values, W_q.weight);
  check_features(op, queries, "queries", W_q.in_features, "query_size");
  check_features(op, keys, "keys", W_k.in_features, "key_size");
  check_features(op, values, "values", W_v.in_features, "value_size");
  Tensor per_head;
  Tensor output = face_forward(*scoring_, queries, keys, values,
                               {.valid_lens = valid_lens,
                                .attn_mask = attn_mask,
                                .fully_masked_rows = masked_rows,
                                .need_weights = need_weights,
                                .op = op},
                               per_head);
  // weights [B * H, Tq, Tk] -> [B, H, Tq, Tk]
  attention_weights_ = Tensor();
  if (per_head.defined()) {
    attention_weights_ =
        reshape(per_head, {queries.size(0), num_heads, queries.size(1), keys.size(1)});
    attention_weights_.set_name("attention_weights");
  }
  return output;
}

}  // namespace ag::nn
