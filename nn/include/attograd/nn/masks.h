// Masks and masked softmax: every way attograd lets you say "query i may not
// look at key j", and the one place that converts between them.
//
// Four conventions are in use, each from a text a learner will meet:
//
//   valid lengths  d2l: an int64 length per batch item or per row; keys at or
//                  beyond the length are masked. masked_softmax() writes the
//                  book's -1e6 over them before the softmax.
//   keep mask      bool, true = may attend (PyTorch 2's bool attn_mask, Keras'
//                  value_mask, causal_mask()). The normal form: every other
//                  convention is converted to it below.
//   additive mask  float, added to the scores: 0 = keep, -1e9 = masked
//                  (PyTorch 2's float attn_mask; -inf is allowed there too).
//   padding mask   float or bool M, 1 at padding, used as scores += -1e9 * M
//                  (the Keras/TensorFlow post on scaled dot-product attention
//                  with padding and look-ahead masks, and Keras itself).
//
// Shapes. The scores of d2l's modules are [B, Tq, Tk], of multi-head attention
// [B, heads, Tq, Tk]. Keep and additive masks broadcast to the scores as in
// NumPy (aligned from the last axis): [Tq, Tk] (causal), [B, Tq, Tk] (full),
// [B, 1, Tq, Tk] (per batch item, shared by the heads), [B, 1, Tk] (key
// padding). A per-key mask [B, Tk] would align as [Tq, Tk] — make it
// [B, 1, Tk] first with key_keep_to_keep().
//
// Fully masked rows (valid length 0, or a keep-mask row with no true entry)
// never give NaN. What they give is a choice, MaskedRows:
//   Uniform  d2l's behaviour: every score of the row is replaced by the same
//            mask value, so the softmax spreads the weight 1/Tk evenly over
//            all keys, padding included (the output row is the mean value).
//   Zero     the row's weights are all 0, so its output row is 0 and no
//            gradient flows back through it.
// masked_softmax(X, valid_lens) and the attention modules follow the book
// (Uniform; see their masked_rows); scaled_dot_product_attention uses Zero
// (PyTorch would give NaN there). A finite additive mask only shifts scores:
// a row that is -1e9 everywhere is not masked but shifted, which is uniform in
// float32 (the scores vanish next to 1e9) and close to the unmasked softmax in
// float64. A -inf entry of an additive mask is a real mask.
#pragma once

#include <limits>
#include <string>
#include <string_view>

#include "attograd/autograd.h"
#include "attograd/ops.h"

namespace ag::nn {

// d2l's mask value: masked scores become -1e6 before the softmax.
inline constexpr double kD2lMaskValue = -1e6;
// The additive-mask value of Keras (and of the TensorFlow post on padding and
// look-ahead masks): scores += -1e9 * M.
inline constexpr double kAdditiveMaskValue = -1e9;
// additive_to_keep() counts an entry as masked at or below this: exp(-1e4)
// underflows to exactly 0 in float32 and float64, so such a key gets no weight.
inline constexpr double kAdditiveMaskedBelow = -1e4;
// The most negative finite double: the default score written over masked keys
// by the keep-mask masked_softmax. The kernel clamps every mask value to the
// scores' finite range, so this is -FLT_MAX for float32 scores and itself for
// float64: finite (so a fully masked row cannot turn into NaN) and not above
// any real score (so masked keys get an exact 0 even when the real scores are
// far below -1e6, in either dtype).
inline constexpr double kMaskedScore = std::numeric_limits<double>::lowest();

// What a fully masked row's weights are; see the header comment.
enum class MaskedRows { Uniform, Zero };

// ---- making masks --------------------------------------------------------------
// bool [*lens.shape, maxlen]: out[..., j] = j < lens[...]. lens is int64 of any
// rank (1-D gives d2l's [len(lens), maxlen]), 0 <= lens <= maxlen; maxlen 0
// (no keys) is allowed, as in PyTorch.
Tensor sequence_mask(const Tensor& lens, int64_t maxlen);
// bool [num_queries, num_keys], true where key j <= query i (the look-ahead
// mask of a decoder; PyTorch's is_causal, aligned at the top left). Sizes
// may be 0.
Tensor causal_mask(int64_t num_queries, int64_t num_keys);

// ---- masked softmax ---------------------------------------------------------------
// Two forms with two names, so a mask cannot land in the wrong one:
//   masked_softmax(X, valid_lens)                 d2l's lengths (int64)
//   masked_softmax_keep(scores, keep, rows)       a bool keep mask
// A bool mask passed as valid_lens throws an ag::Error that names
// masked_softmax_keep.
//
// d2l's masked_softmax: softmax over the last axis of X (rank >= 2 when
// valid_lens is given); valid_lens is undefined (plain softmax), int64 1-D of
// length X.shape[0] (one length per batch item, shared by its rows) or int64
// of shape X.shape[:-1] (one length per row), with 0 <= length <= X.shape[-1].
// Scores at or beyond the valid length are replaced by mask_value. A row of
// length 0 comes out uniform (MaskedRows::Uniform).
// mask_value must not be NaN; below the dtype's lowest finite value (-inf,
// -1e300 in float32) it is clamped to that value, so no row gives NaN. As in
// d2l, a valid score below mask_value (say -1e7 with the book's -1e6) loses
// to the masked keys, which then take the weight; pass kMaskedScore to rule
// that out.
Tensor masked_softmax(const Tensor& X, const Tensor& valid_lens = Tensor(),
                      double mask_value = kD2lMaskValue);
// Softmax over the last axis of `scores` where the bool `keep`
// (broadcastable to scores) is true; masked scores are replaced by
// mask_value, and fully masked rows come out as `fully_masked_rows` says.
// An undefined keep keeps everything (a plain softmax).
Tensor masked_softmax_keep(const Tensor& scores, const Tensor& keep, MaskedRows fully_masked_rows,
                           double mask_value = kMaskedScore);
// Attention weights from raw scores [..., Tq, Tk] under every mask attograd
// knows, all optional and combined (a key is attended only if all allow it).
// Named, so a call says what each argument is:
//   attention_softmax(scores, {.valid_lens = lens, .is_causal = true});
struct AttentionSoftmaxOptions {
  // d2l lengths, as masked_softmax() takes them (int64; undefined: none).
  Tensor valid_lens{};
  // bool keep mask, or float additive mask of the scores' dtype added to the
  // scores (PyTorch 2); its -inf entries count as masked keys, so that -inf
  // rows follow fully_masked_rows too.
  Tensor attn_mask{};
  // causal_mask(Tq, Tk) on top.
  bool is_causal = false;
  // What rows with every key masked give (d2l: Uniform).
  MaskedRows fully_masked_rows = MaskedRows::Uniform;
  // The score written over masked keys before the softmax (d2l's -1e6).
  double mask_value = kD2lMaskValue;
  // The name errors are reported under (e.g. "DotProductAttention"); a view:
  // the string must outlive the call.
  std::string_view op = "attention_softmax";
};
// Masked scores are replaced by mask_value; then the softmax over the last axis.
Tensor attention_softmax(const Tensor& scores, const AttentionSoftmaxOptions& options = {});

// ---- conversions: the one place -----------------------------------------------------
// Every function that turns one convention into another lives here; the
// attention code and the Keras layers call these and nothing else.

// valid lengths (as masked_softmax accepts them) -> bool keep mask of exactly
// `scores_shape`. Throws as check_valid_lens() does.
Tensor lengths_to_keep(const Tensor& valid_lens, const Shape& scores_shape);
// Per-key bool keep mask [B, Tk] (Keras' value_mask) -> [B, 1, ..., 1, Tk],
// aligned with scores of shape [B, ..., Tk] so that it broadcasts over queries
// (and heads).
Tensor key_keep_to_keep(const Tensor& key_keep, const Shape& scores_shape);
// bool keep -> additive float mask of `dtype`: 0 where kept, masked_value elsewhere.
Tensor keep_to_additive(const Tensor& keep, DType dtype = kFloat32,
                        double masked_value = kAdditiveMaskValue);
// additive float mask -> bool keep: true where the entry is > masked_below
// (so -1e9 and -inf are masked; 0 and small biases are kept).
Tensor additive_to_keep(const Tensor& additive, double masked_below = kAdditiveMaskedBelow);
// padding indicator M (bool, or float with 1 at padding) -> bool keep: M == 0.
Tensor padding_to_keep(const Tensor& padding);
// bool keep -> padding indicator M of `dtype`: 1 at padding, 0 where kept.
Tensor keep_to_padding(const Tensor& keep, DType dtype = kFloat32);
// padding indicator M -> additive mask masked_value * M (the padding mask's
// scores += -1e9 * M above), of M's dtype (float32 when M is bool).
Tensor padding_to_additive(const Tensor& padding, double masked_value = kAdditiveMaskValue);
// Logical and of two keep masks (broadcasting); an undefined mask keeps all,
// so merge_keep(a, Tensor()) is a.
Tensor merge_keep(const Tensor& a, const Tensor& b);

// ---- the checks every entry point runs ------------------------------------------------
// Throws ag::Error starting with `op` unless valid_lens is undefined or int64,
// 1-D of length scores_shape[0] or of shape scores_shape[:-1], with every
// length in [0, scores_shape.back()]. A bool valid_lens (a keep mask in the
// lengths' place) is told so, with the call that takes it.
void check_valid_lens(const Tensor& valid_lens, const Shape& scores_shape, std::string_view op);
// Throws ag::Error starting with `op` unless mask is undefined, or bool, or of
// the floating dtype `scores_dtype`, and broadcasts to scores_shape.
void check_mask(const Tensor& mask, const Shape& scores_shape, DType scores_dtype,
                std::string_view op);

}  // namespace ag::nn
