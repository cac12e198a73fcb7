// Masks, masked softmax and the conversions between mask conventions.
//
// Everything here is composed from core primitives (lt/le, logical ops,
// masked_fill, where, softmax): there is no backward of its own. The one
// differentiable path is
//
//   filled  = masked_fill(scores, !keep, mask_value)   dL/dscores = dL/dfilled where keep, else 0
//   weights = softmax(filled, -1)                       dL/dfilled = w * (g - sum(w * g))
//   weights = masked_fill(weights, !keep, 0)            (MaskedRows::Zero only) dL/dweights = g
//   where keep
//
// so a masked key never receives a gradient, and neither does any score of a
// fully masked row (its weights are constant: 1/Tk or 0).
#include "attograd/nn/masks.h"

#include <limits>

#include "masks_checked.h"
#include "shape_text.h"

namespace ag::nn {

namespace {

// "[B] = [2]": how the shapes in the error messages are spelled.
std::string leading(const Shape& scores_shape) {
  return shape_str(Shape(scores_shape.begin(), scores_shape.end() - 1));
}

void check_bool(const Tensor& mask, std::string_view op, const char* what) {
  AG_CHECK(mask.defined(), op, std::string(what) + " is undefined");
  AG_CHECK(mask.dtype() == kBool, op,
           std::string(what) + " must be bool, got " + dtype_name(mask.dtype()) + " " +
               shape_str(mask.shape()));
}

// valid lengths -> keep mask, once check_valid_lens() has passed.
Tensor keep_from_checked_lengths(const Tensor& valid_lens, const Shape& scores_shape) {
  const int64_t num_keys = scores_shape.back();
  if (valid_lens.dim() == 1 && valid_lens.size(0) == scores_shape[0]) {
    // One length per batch item, shared by all its rows:
    // sequence_mask: [B] -> [B, Tk]; reshape to [B, 1, ..., 1, Tk]; expand to the scores' shape.
    Shape aligned(scores_shape.size(), 1);
    aligned.front() = scores_shape[0];
    aligned.back() = num_keys;
    return expand(reshape(sequence_mask(valid_lens, num_keys), aligned), scores_shape);
  }
  // One length per row: [*scores_shape[:-1]] -> [*scores_shape[:-1], Tk].
  return sequence_mask(valid_lens, num_keys);
}

}  // namespace

// ---- making masks --------------------------------------------------------------

Tensor sequence_mask(const Tensor& lens, int64_t maxlen) {
  AG_CHECK(maxlen >= 0, "sequence_mask", "maxlen must be >= 0, got " + std::to_string(maxlen));
  AG_CHECK(lens.defined(), "sequence_mask", "lens is undefined");
  AG_CHECK(lens.dtype() == kInt64, "sequence_mask",
           std::string("lens must be int64, got ") + dtype_name(lens.dtype()) + " " +
               shape_str(lens.shape()));
  // out[..., j] = j < lens[...]: one pass, written directly (this runs on
  // every attention call with valid lengths).
  const Tensor lengths = lens.contiguous();
  const int64_t* len = lengths.data_ptr<int64_t>();
  Shape shape = lens.shape();
  shape.push_back(maxlen);
  Tensor mask = empty(shape, kBool);
  bool* out = mask.data_ptr<bool>();
  for (int64_t row = 0; row < lengths.numel(); ++row) {
    AG_CHECK(len[row] >= 0 && len[row] <= maxlen, "sequence_mask",
             "length " + std::to_string(len[row]) + " in lens " + shape_str(lens.shape()) +
                 " is outside [0, " + std::to_string(maxlen) + "] (0 to maxlen)");
    for (int64_t j = 0; j < maxlen; ++j) out[row * maxlen + j] = j < len[row];
  }
  return mask;
}

Tensor causal_mask(int64_t num_queries, int64_t num_keys) {
  AG_CHECK(num_queries >= 0 && num_keys >= 0, "causal_mask",
           "sizes must be >= 0, got " + std::to_string(num_queries) + " queries and " +
               std::to_string(num_keys) + " keys");
  // key j [1, Tk] <= query i [Tq, 1]  ->  [Tq, Tk], the lower triangle
  return le(unsqueeze(arange(num_keys, kInt64), 0), unsqueeze(arange(num_queries, kInt64), 1));
}

// ---- masked softmax ---------------------------------------------------------------

Tensor masked_softmax(const Tensor& X, const Tensor& valid_lens, double mask_value) {
  AG_CHECK(X.defined(), "masked_softmax", "X is undefined");
  if (!valid_lens.defined()) return softmax(X, -1);
  check_valid_lens(valid_lens, X.shape(), "masked_softmax");
  return masked_softmax_keep(X, keep_from_checked_lengths(valid_lens, X.shape()),
                             MaskedRows::Uniform, mask_value);
}

Tensor masked_softmax_keep(const Tensor& scores, const Tensor& keep_mask,
                           MaskedRows fully_masked_rows, double mask_value) {
  AG_CHECK(scores.defined(), "masked_softmax", "scores are undefined");
  check_floating(scores.dtype(), "masked_softmax", "scores");
  if (!keep_mask.defined()) return softmax(scores, -1);
  // masked_softmax_last checks the mask's dtype and shape.
  // Masked scores -> mask_value: a masked key gets exp(mask_value - max) = 0,
  // and a row with every key masked is constant, so its softmax is 1/Tk.
  // Zero then sets masked weights to 0: partially masked rows are unchanged
  // (their masked weights are already 0), fully masked rows become all 0.
  // One fused kernel does both (forward and backward rows side by side in
  // core/src/ops_softmax.cpp: masked_forward_rows, masked_backward_row); as
  // composed ops it reads
  //   w = softmax(where(keep_mask, scores, mask_value), -1);
  //   Zero: w = where(keep_mask, w, 0)
  // (tests/test_masks.cpp checks the kernel against exactly that).
  return masked_softmax_last(scores, keep_mask, mask_value, fully_masked_rows == MaskedRows::Zero);
}

Tensor attention_softmax(const Tensor& scores, const AttentionSoftmaxOptions& options) {
  AG_CHECK(scores.defined() && scores.dim() >= 2, options.op,
           "scores must have rank >= 2 ([..., Tq, Tk]), got " + nn::shape_or_none(scores));
  check_valid_lens(options.valid_lens, scores.shape(), options.op);
  check_mask(options.attn_mask, scores.shape(), scores.dtype(), options.op);
  return detail::attention_softmax_checked(scores, options);
}

Tensor detail::attention_softmax_checked(const Tensor& scores,
                                         const AttentionSoftmaxOptions& options) {
  const auto& [valid_lens, attn_mask, is_causal, fully_masked_rows, mask_value, op] = options;
  Tensor keep;
  if (valid_lens.defined()) keep = keep_from_checked_lengths(valid_lens, scores.shape());
  if (is_causal) keep = merge_keep(keep, causal_mask(scores.size(-2), scores.size(-1)));
  Tensor masked_scores = scores;
  if (attn_mask.defined() && attn_mask.dtype() == kBool) {
    keep = merge_keep(keep, attn_mask);
  } else if (attn_mask.defined()) {
    // Additive mask: scores + mask, dL/dscores = g (and dL/dmask = g where
    // finite). A -inf entry would make a fully masked row NaN, so it becomes
    // a masked key of the keep mask and adds 0 instead.
    const Tensor finite = additive_to_keep(attn_mask, -std::numeric_limits<double>::infinity());
    keep = merge_keep(keep, finite);
    masked_scores = scores + where(finite, attn_mask, 0.0);
  }
  return masked_softmax_keep(masked_scores, keep, fully_masked_rows, mask_value);
}

// ---- conversions: the one place -----------------------------------------------------

Tensor lengths_to_keep(const Tensor& valid_lens, const Shape& scores_shape) {
  AG_CHECK(valid_lens.defined(), "lengths_to_keep", "valid_lens is undefined");
  check_valid_lens(valid_lens, scores_shape, "lengths_to_keep");
  return keep_from_checked_lengths(valid_lens, scores_shape);
}

Tensor key_keep_to_keep(const Tensor& key_keep, const Shape& scores_shape) {
  check_bool(key_keep, "key_keep_to_keep", "key_keep");
  AG_CHECK(scores_shape.size() >= 2 && key_keep.dim() == 2 && key_keep.size(0) == scores_shape[0] &&
               key_keep.size(1) == scores_shape.back(),
           "key_keep_to_keep",
           "key_keep of shape " + shape_str(key_keep.shape()) +
               " is not [B, Tk] for scores of shape " + shape_str(scores_shape));
  // [B, Tk] -> [B, 1, ..., 1, Tk] (rank of the scores)
  Shape aligned(scores_shape.size(), 1);
  aligned.front() = key_keep.size(0);
  aligned.back() = key_keep.size(1);
  return reshape(key_keep, aligned);
}

Tensor keep_to_additive(const Tensor& keep, DType dtype, double masked_value) {
  check_bool(keep, "keep_to_additive", "keep");
  check_floating(dtype, "keep_to_additive", "dtype");
  // keep ? 0 : masked_value
  return where(keep, zeros({}, dtype), masked_value);
}

Tensor additive_to_keep(const Tensor& additive, double masked_below) {
  AG_CHECK(additive.defined(), "additive_to_keep", "additive mask is undefined");
  check_floating(additive.dtype(), "additive_to_keep", "additive mask");
  return gt(additive, scalar_tensor(masked_below, additive.dtype()));
}

Tensor padding_to_keep(const Tensor& padding) {
  AG_CHECK(padding.defined(), "padding_to_keep", "padding mask is undefined");
  if (padding.dtype() == kBool) return logical_not(padding);
  check_floating(padding.dtype(), "padding_to_keep", "padding mask (when not bool)");
  return eq(padding, zeros({}, padding.dtype()));
}

Tensor keep_to_padding(const Tensor& keep, DType dtype) {
  check_bool(keep, "keep_to_padding", "keep");
  check_floating(dtype, "keep_to_padding", "dtype");
  return logical_not(keep).to(dtype);
}

Tensor padding_to_additive(const Tensor& padding, double masked_value) {
  AG_CHECK(padding.defined(), "padding_to_additive", "padding mask is undefined");
  const Tensor m = padding.dtype() == kBool ? padding.to(kFloat32) : padding;
  check_floating(m.dtype(), "padding_to_additive", "padding mask (when not bool)");
  // scores += -1e9 * M, as Keras and the TensorFlow post on padding masks write it
  return m * masked_value;
}

Tensor merge_keep(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  check_bool(a, "merge_keep", "first mask");
  check_bool(b, "merge_keep", "second mask");
  return logical_and(a, b);
}

// ---- the checks every entry point runs ------------------------------------------------

void check_valid_lens(const Tensor& valid_lens, const Shape& scores_shape, std::string_view op) {
  if (!valid_lens.defined()) return;
  AG_CHECK(scores_shape.size() >= 2, op,
           "valid_lens need scores of rank >= 2, got scores of shape " + shape_str(scores_shape));
  AG_CHECK(valid_lens.dtype() != kBool, op,
           "valid_lens is a bool tensor " + shape_str(valid_lens.shape()) +
               ": lengths are int64; for a keep mask call "
               "masked_softmax_keep(scores, keep, MaskedRows::...) or pass it as attn_mask");
  AG_CHECK(
      valid_lens.dtype() == kInt64, op,
      std::string("valid_lens must be int64 (e.g. ag::tensor({2, 6}, {2}, ag::kInt64)), got ") +
          dtype_name(valid_lens.dtype()) + " " + shape_str(valid_lens.shape()));
  const Shape rows(scores_shape.begin(), scores_shape.end() - 1);
  const bool per_item = valid_lens.dim() == 1 && valid_lens.size(0) == scores_shape[0];
  AG_CHECK(per_item || valid_lens.shape() == rows, op,
           "valid_lens of shape " + shape_str(valid_lens.shape()) + " is neither [B] = [" +
               std::to_string(scores_shape[0]) + "] nor scores.shape[:-1] = " +
               leading(scores_shape) + " (scores " + shape_str(scores_shape) + ")");
  const int64_t num_keys = scores_shape.back();
  for (double len : valid_lens.to_vector())
    AG_CHECK(len >= 0 && len <= static_cast<double>(num_keys), op,
             "valid length " + std::to_string(static_cast<int64_t>(len)) + " is outside [0, " +
                 std::to_string(num_keys) + "] (valid_lens " + shape_str(valid_lens.shape()) +
                 ", scores " + shape_str(scores_shape) + ")");
}

void check_mask(const Tensor& mask, const Shape& scores_shape, DType scores_dtype,
                std::string_view op) {
  if (!mask.defined()) return;
  AG_CHECK(mask.dtype() == kBool || mask.dtype() == scores_dtype, op,
           std::string("mask must be bool (keep) or ") + dtype_name(scores_dtype) +
               " (additive, the scores' dtype), got " + dtype_name(mask.dtype()) + " " +
               shape_str(mask.shape()));
  AG_CHECK(broadcasts_to(mask.shape(), scores_shape), op,
           "mask of shape " + shape_str(mask.shape()) +
               " does not broadcast to the scores' shape " + shape_str(scores_shape));
}

}  // namespace ag::nn
