// d2l's attention modules, composed from core ops.
// Legend: B batch, Tq queries, Tk key-value pairs, d query/key features,
// v value features, h hidden units, H heads.
#include "attograd/nn/attention.h"

#include <cmath>

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

// What DotProductAttention and AdditiveAttention share once they have their
// scores [B, Tq, Tk]: the weights (kept in `weights` for attention_weights())
// and the weighted sum of the values.
Tensor pool_values(const Tensor& scores, const Tensor& values, const Tensor& valid_lens,
                   const Tensor& attn_mask, MaskedRows masked_rows, const Dropout& dropout,
                   const std::string& op, Tensor& weights) {
  // weights = masked_softmax(scores) over Tk: [B, Tq, Tk]
  // (backward: dL/dscores = w * (dL/dw - sum_k w dL/dw), 0 at masked keys)
  weights = attention_softmax(scores, {.valid_lens = valid_lens,
                                       .attn_mask = attn_mask,
                                       .fully_masked_rows = masked_rows,
                                       .op = op});
  weights.set_name("attention_weights");
  // output = dropout(weights) V: [B, Tq, Tk] @ [B, Tk, v] -> [B, Tq, v]
  // (backward: dL/dweights = dL/doutput V^T, dL/dV = weights^T dL/doutput)
  Tensor output = bmm(dropout(weights), values);
  output.set_name("output");
  return output;
}

// True when attention may skip its weights (need_weights false): dropout
// acts on the weights, and a float mask that requires grad gets dL/dscores;
// both need them stored.
bool can_stream(const Dropout& dropout, const Tensor& attn_mask) {
  const bool dropping = dropout.is_training() && dropout.p > 0;
  const bool mask_grad =
      attn_mask.defined() && attn_mask.dtype() != kBool && attn_mask.requires_grad();
  return !dropping && !mask_grad;
}

// softmax(Q K^T / sqrt(d)) V without the weights: ag::flash_attention streams
// the keys, so no [B, ..., Tq, Tk] tensor is made. q [B, ..., Tq, d],
// k [B, ..., Tk, d], v [B, ..., Tk, v] (MultiHeadAttention: ... = heads);
// valid_lens d2l's [B] or [B, Tq] (checked); attn_mask (checked) broadcasts
// to [B, ..., Tq, Tk].
Tensor streamed_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& valid_lens, const Tensor& attn_mask,
                          MaskedRows masked_rows) {
  AttentionMasks masks;
  if (valid_lens.defined()) {
    // lengths per row [B, ..., Tq]: [B] -> [B, 1, ..., 1], [B, Tq] -> [B, 1, ..., Tq]
    Shape rows(static_cast<size_t>(q.dim() - 1), 1);
    rows.front() = valid_lens.size(0);
    if (valid_lens.dim() == 2) rows.back() = valid_lens.size(1);
    masks.lengths = reshape(valid_lens, rows);
  }
  (attn_mask.defined() && attn_mask.dtype() == kBool ? masks.keep : masks.additive) = attn_mask;
  masks.masked_rows_uniform = masked_rows == MaskedRows::Uniform;
  Tensor output = flash_attention(q, k, v, 1.0 / std::sqrt(static_cast<double>(q.size(-1))), masks);
  output.set_name("output");
  return output;
}

}  // namespace

// ---- DotProductAttention -------------------------------------------------------------

DotProductAttention::DotProductAttention(double dropout_p)
    : Module("DotProductAttention"), dropout(dropout_p) {
  register_module("dropout", &dropout);
}

Tensor DotProductAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                    const Tensor& valid_lens, const Tensor& attn_mask) {
  check_qkv(type_name(), queries, keys, values);
  AG_CHECK(queries.size(2) == keys.size(2), type_name().c_str(),
           "queries " + shape_str(queries.shape()) + " and keys " + shape_str(keys.shape()) +
               " differ in feature size (" + std::to_string(queries.size(2)) + " vs " +
               std::to_string(keys.size(2)) + "); use AdditiveAttention for different sizes");
  if (!need_weights && can_stream(dropout, attn_mask)) {
    const Shape scores_shape{queries.size(0), queries.size(1), keys.size(1)};
    check_valid_lens(valid_lens, scores_shape, type_name());
    check_mask(attn_mask, scores_shape, queries.dtype(), type_name());
    attention_weights_ = Tensor();
    return streamed_attention(queries, keys, values, valid_lens, attn_mask, masked_rows);
  }
  const double d = static_cast<double>(queries.size(2));
  // scores = Q K^T / sqrt(d): [B, Tq, d] @ [B, d, Tk] -> [B, Tq, Tk]
  // computed as (Q / sqrt(d)) K^T: the same numbers, but the division touches
  // the Tq x d queries instead of the Tq x Tk scores (8x fewer at T = 512).
  // (backward: dL/dQ = dL/dscores K / sqrt(d), dL/dK = dL/dscores^T Q / sqrt(d))
  Tensor scores = bmm(queries / std::sqrt(d), transpose(keys, 1, 2));
  scores.set_name("scores");
  return pool_values(scores, values, valid_lens, attn_mask, masked_rows, dropout, type_name(),
                     attention_weights_);
}

// ---- AdditiveAttention ---------------------------------------------------------------

AdditiveAttention::AdditiveAttention(int64_t key_size, int64_t query_size, int64_t num_hiddens,
                                     double dropout_p)
    : Module("AdditiveAttention"),
      W_k(key_size, num_hiddens, /*bias=*/false),
      W_q(query_size, num_hiddens, /*bias=*/false),
      w_v(num_hiddens, 1, /*bias=*/false),
      dropout(dropout_p) {
  register_module("W_k", &W_k);
  register_module("W_q", &W_q);
  register_module("w_v", &w_v);
  register_module("dropout", &dropout);
}

Tensor AdditiveAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                  const Tensor& valid_lens, const Tensor& attn_mask) {
  check_qkv(type_name(), queries, keys, values, W_q.weight);
  check_features(type_name(), queries, "queries", W_q.in_features, "query_size");
  check_features(type_name(), keys, "keys", W_k.in_features, "key_size");
  // Projections to h hidden units: [B, Tk, key_size] -> [B, Tk, h] (k' = k W_k^T)
  Tensor projected_keys = W_k(keys);
  projected_keys.set_name("projected_keys");
  // and [B, Tq, query_size] -> [B, Tq, h] (q' = q W_q^T)
  Tensor q = W_q(queries);
  q.set_name("projected_queries");
  // scores = w_v tanh(q'_i + k'_j), summed over h: [B, Tq, Tk]. d2l broadcasts
  // [B, Tq, 1, h] + [B, 1, Tk, h] into features [B, Tq, Tk, h] and applies w_v;
  // additive_scores computes the same without that 4-D tensor (537 MB at
  // B = 8, Tq = Tk = 512, h = 64). w_v.weight [1, h] -> [h].
  // (backward, t = tanh(q'_i + k'_j): dL/dq'_i = w_v sum_j g (1 - t^2),
  // dL/dk'_j = w_v sum_i g (1 - t^2), dL/dw_v = sum g t)
  Tensor scores = additive_scores(q, projected_keys, reshape(w_v.weight, {w_v.in_features}));
  scores.set_name("scores");
  return pool_values(scores, values, valid_lens, attn_mask, masked_rows, dropout, type_name(),
                     attention_weights_);
}

// ---- MultiHeadAttention --------------------------------------------------------------

Tensor transpose_qkv(const Tensor& X, int64_t num_heads) {
  AG_CHECK(X.defined() && X.dim() == 3 && num_heads > 0 && X.size(2) % num_heads == 0,
           "transpose_qkv",
           "expected [B, T, h] with h a multiple of num_heads " + std::to_string(num_heads) +
               ", got " + (X.defined() ? shape_str(X.shape()) : std::string("none")));
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
               ", got " + (X.defined() ? shape_str(X.shape()) : std::string("none")));
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
      num_heads(checked_heads(num_hiddens, num_heads)),
      attention(dropout_p),
      W_q(query_size, num_hiddens, bias),
      W_k(key_size, num_hiddens, bias),
      W_v(value_size, num_hiddens, bias),
      W_o(num_hiddens, num_hiddens, bias) {
  register_module("attention", &attention);
  register_module("W_q", &W_q);
  register_module("W_k", &W_k);
  register_module("W_v", &W_v);
  register_module("W_o", &W_o);
}

Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const Tensor& valid_lens, const Tensor& attn_mask) {
  const std::string& op = type_name();
  check_qkv(op, queries, keys, values, W_q.weight);
  check_features(op, queries, "queries", W_q.in_features, "query_size");
  check_features(op, keys, "keys", W_k.in_features, "key_size");
  check_features(op, values, "values", W_v.in_features, "value_size");
  const int64_t B = queries.size(0), Tq = queries.size(1), Tk = keys.size(1), H = num_heads;
  // Masks are checked here, against this module's shapes, before the heads
  // are folded into the batch.
  check_valid_lens(valid_lens, {B, Tq, Tk}, op);
  // A 3-D mask is [B, Tq, Tk], shared by the heads.
  if (attn_mask.defined())
    check_mask(attn_mask, attn_mask.dim() == 3 ? Shape{B, Tq, Tk} : Shape{B, H, Tq, Tk},
               queries.dtype(), op);
  // For the weights path: [B, Tq, Tk] -> [B, 1, Tq, Tk], [B|1, H|1, Tq|1, Tk|1]
  // -> expand -> [B, H, Tq, Tk] -> [B * H, Tq, Tk] (the row b * H + i is head
  // i of item b, as transpose_qkv orders them)
  const auto head_mask = [&] {
    if (!attn_mask.defined()) return Tensor();
    const Tensor mask4 = attn_mask.dim() == 3 ? unsqueeze(attn_mask, 1) : attn_mask;
    return reshape(expand(mask4, {B, H, Tq, Tk}), {B * H, Tq, Tk});
  };
  // Projections, then heads folded into the batch:
  // [B, T, size] -> W -> [B, T, h] -> transpose_qkv -> [B * H, T, h/H]
  Tensor q = transpose_qkv(W_q(queries), H);
  q.set_name("queries_per_head");
  Tensor k = transpose_qkv(W_k(keys), H);
  k.set_name("keys_per_head");
  Tensor v = transpose_qkv(W_v(values), H);
  v.set_name("values_per_head");
  Tensor heads;
  if (!need_weights && can_stream(attention.dropout, attn_mask)) {
    // Streamed, heads as a batch dim: [B * H, T, h/H] -> [B, H, T, h/H]; the
    // lengths and the mask [B|1, H|1, Tq, Tk] broadcast over it in place.
    const auto per_head = [&](const Tensor& x) { return reshape(x, {B, H, x.size(1), x.size(2)}); };
    const Tensor mask4 =
        attn_mask.defined() && attn_mask.dim() == 3 ? unsqueeze(attn_mask, 1) : attn_mask;
    heads = reshape(streamed_attention(per_head(q), per_head(k), per_head(v), valid_lens, mask4,
                                       attention.masked_rows),
                    {B * H, Tq, v.size(2)});
    attention_weights_ = Tensor();
  } else {
    // One length per head too: [B] -> [B * H] or [B, Tq] -> [B * H, Tq]
    const Tensor head_lens = valid_lens.defined() ? repeat_interleave(valid_lens, H, 0) : Tensor();
    // Scaled dot-product attention in every head: [B * H, Tq, h/H]
    heads = attention(q, k, v, head_lens, head_mask());
    // weights [B * H, Tq, Tk] -> [B, H, Tq, Tk]
    attention_weights_ = reshape(attention.attention_weights(), {B, H, Tq, Tk});
    attention_weights_.set_name("attention_weights");
  }
  // Heads joined: [B * H, Tq, h/H] -> transpose_output -> [B, Tq, h]
  Tensor concat = transpose_output(heads, H);
  concat.set_name("heads_concatenated");
  // output = concat W_o^T (+ b): [B, Tq, h] -> [B, Tq, h]
  Tensor output = W_o(concat);
  output.set_name("output");
  return output;
}

}  // namespace ag::nn
