// Scoring functions: the one part of attention that varies.
//
// In d2l's words ("Attention Scoring Functions") attention pools the values
// with weights softmax(a(q, k)), masked to each source's valid length:
//
//   attention(q, K, V) = sum_j softmax_j(a(q, k_j)) v_j
//
// and the scoring function a is the one thing that changes from one kind of
// attention to the next. Here every scoring function is a small class in a
// file of its own (nn/src/scoring_NAME.cpp: its parameters, its scores, the
// math and the shapes in comments), and one table (nn/src/scoring_table.cpp)
// maps each name to a factory. The seq2seq decoder, attograd-translate
// --attention NAME and the viewer read the table; a program adds its own
// scoring function with register_scoring_function, without touching the
// library (tutorial 18 does). d2l's modules (attention.h) are faces of the
// table's additive, dot and multihead, and Keras' layers (keras.h) of its
// keras_dot, keras_concat and keras_additive: their parameters are these
// classes'.
// What follows the scores (masks, softmax, dropout, the values' product) is
// attention_pool (pooling.h), the same for every function and every face.
//
// Legend: B batch, Tq queries, Tk keys, q query width, k key width, h hidden
// units, n heads.
//
//   auto attention = nn::make_scoring_function("general", {.query_size = 32, .key_size = 64});
//   auto memory = attention->remember(keys, keys);       // once per source
//   Tensor context = attention->attend(query, memory, valid_lens);  // per step
//   Tensor w = attention->attention_weights();             // [B, Tq, Tk]
//
// The keys' part that does not depend on the query (their projection, for
// additive, general and multihead attention) is computed once per source by
// remember(), as d2l's additive attention and JoeyNMT's compute_proj_keys do,
// not once per decoder step.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attograd/nn/layers.h"
#include "attograd/nn/masks.h"
#include "attograd/nn/module.h"

namespace ag::nn {

// The sizes a scoring function is built for. A function without parameters
// (dot) may leave query_size and key_size 0: any width, as d2l's
// DotProductAttention takes.
struct ScoringSizes {
  int64_t query_size = 0;   // q: the decoder's hidden units
  int64_t key_size = 0;     // k: the encoder's output width
  int64_t num_hiddens = 0;  // h: additive's and multihead's projections (0: query_size)
  int64_t num_heads = 1;    // n: multihead only
  double dropout = 0.0;     // on the attention weights, as d2l
  int64_t value_size = 0;   // v: multihead's W_v input (0: key_size, the seq2seq's values)
  bool bias = false;        // multihead only: biases on W_q, W_k, W_v, W_o

  int64_t hidden_units() const { return num_hiddens > 0 ? num_hiddens : query_size; }
  int64_t values_width() const { return value_size > 0 ? value_size : key_size; }
};

// What attend() reads of the source, computed once per source by remember().
struct AttentionMemory {
  Tensor keys;    // the keys as score() reads them (projected, for some)
  Tensor values;  // the values as pooled (per head, for multihead)
};

// How attend_with_weights() masks and pools, every field optional (pooling.h
// says what each mask means and how they combine).
struct AttendOptions {
  Tensor valid_lens{};  // d2l lengths, int64 [B] or [B, Tq]
  // bool keep or float additive mask, broadcast to [B, Tq, Tk] (with heads:
  // to [B, n, Tq, Tk], a 3-D mask being [B, Tq, Tk], the same for every head)
  Tensor attn_mask{};
  MaskedRows fully_masked_rows = MaskedRows::Uniform;
  // Keras' arithmetic instead of the masks above (pooling.h's keras_keep):
  // the Keras layers (keras.h) pass their value and causal masks here.
  Tensor keras_keep{};
  // false: the context only, streamed by ag::flash_attention when the score
  // is a scaled dot product (dot, multihead) and nothing needs the weights.
  bool need_weights = true;
  std::string_view op{};  // the name errors are reported under (empty: type_name())
};

// What attend_with_weights() gives.
struct Attended {
  Tensor context;  // [B, Tq, context_size()]
  Tensor weights;  // [B * n, Tq, Tk] per head (n = 1 without heads);
                   // undefined when streamed
};

// The base of every scoring function. A subclass supplies score() and, where
// it has them, its parameters (registered in its constructor, as any
// Module's) and the once-per-source part of the keys (remember_keys()).
class ScoringFunction : public Module {
 public:
  // any_width: query_size and key_size may be 0, any width (a function
  // without parameters); otherwise they must be positive.
  ScoringFunction(std::string type_name, const ScoringSizes& sizes, bool any_width = false);

  // keys [B, Tk, k], values [B, Tk, v] -> the memory attend() reads: the
  // query-independent part of the scores, computed once per source.
  AttentionMemory remember(const Tensor& keys, const Tensor& values) const;

  // queries [B, Tq, q], valid_lens (optional) int64 [B] or [B, Tq]
  // -> context [B, Tq, context_size()]:
  //   weights = masked_softmax(score(queries, memory.keys))
  //   context = merge_heads(dropout(weights) memory.values)
  // Rows with no valid key get uniform weights (d2l's -1e6 fill).
  Tensor attend(const Tensor& queries, const AttentionMemory& memory,
                const Tensor& valid_lens = Tensor());
  // The same under every mask attention_pool knows, keeping the weights per
  // head; attention_weights() is set as attend() sets it (undefined when
  // streamed).
  Attended attend_with_weights(const Tensor& queries, const AttentionMemory& memory,
                               const AttendOptions& options);

  // queries [B, Tq, q] -> the scores a(q, k) before any mask or softmax,
  // [B, Tq, Tk] (the heads' mean, for multihead): what a viewer draws.
  Tensor scores(const Tensor& queries, const AttentionMemory& memory);

  // [B, Tq, Tk] of the last attend() (the mean over heads, for multihead);
  // undefined before the first.
  const Tensor& attention_weights() const { return attention_weights_; }

  // The context's width: the values' (the key width), or what merge_heads()
  // projects them to.
  virtual int64_t context_size() const { return sizes.key_size; }

  const ScoringSizes sizes;
  Dropout dropout;

 protected:
  // keys [B, Tk, k] -> the keys score() reads (default: as they are).
  virtual Tensor remember_keys(const Tensor& keys) const { return keys; }
  // values [B, Tk, v] -> the values pooled (default: as they are).
  virtual Tensor remember_values(const Tensor& values) const { return values; }
  // queries [B, Tq, q], remembered keys -> scores [B * n, Tq, Tk].
  virtual Tensor score(const Tensor& queries, const Tensor& keys) = 0;
  // When score() is scale * q' keys^T, q' [B * n, Tq, d] made from the
  // queries, and scale: attention may then stream (ag::flash_attention)
  // instead of making the scores. nullopt (the default) for other scores.
  struct DotForm {
    Tensor queries;
    double scale;
  };
  virtual std::optional<DotForm> dot_form(const Tensor& /*queries*/) const { return std::nullopt; }
  // The heads folded into the batch (multihead), or 0: the scores are
  // [B, Tq, Tk], one row per query.
  virtual int64_t heads() const { return 0; }
  // pooled [B * n, Tq, v'] -> context [B, Tq, context_size()]
  // (default: as it is).
  virtual Tensor merge_heads(const Tensor& pooled) const { return pooled; }

 private:
  // ag::Error under `op` unless queries [B, Tq, q] fit the sizes and the memory.
  void check_queries(const Tensor& queries, const AttentionMemory& memory,
                     std::string_view op) const;

  Tensor attention_weights_;
};

// ---- the table of names -------------------------------------------------------------

using ScoringFactory = std::function<std::unique_ptr<ScoringFunction>(const ScoringSizes&)>;

struct ScoringEntry {
  std::string name;     // what --attention NAME takes
  std::string summary;  // one line for --help
  ScoringFactory make;
};

// Every scoring function, the library's (additive, dot, general, multihead,
// general_scaled, keras_dot, keras_concat, keras_additive) first, then those
// registered at run time, in order.
const std::vector<ScoringEntry>& scoring_functions();

// Adds `entry` to the table; a name that is taken, empty, or not a plain
// lower-case word ([a-z0-9_-]) is an ag::Error. Not thread-safe: register at
// start-up, before other threads read the table.
void register_scoring_function(ScoringEntry entry);

// The table's entry `name`, or null when there is none.
const ScoringEntry* find_scoring_function(const std::string& name);

// The scoring function `name`, built for `sizes`; an unknown name is an
// ag::Error listing the table's names.
std::unique_ptr<ScoringFunction> make_scoring_function(const std::string& name,
                                                       const ScoringSizes& sizes);

// The table's names, comma-separated ("additive, dot, general, multihead,
// general_scaled, keras_dot, keras_concat, keras_additive").
std::string scoring_function_names();

}  // namespace ag::nn
