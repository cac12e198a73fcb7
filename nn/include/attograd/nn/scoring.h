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
// library (tutorial 18 does).
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
#include <string>
#include <vector>

#include "attograd/nn/layers.h"
#include "attograd/nn/masks.h"
#include "attograd/nn/module.h"

namespace ag::nn {

// The sizes a scoring function is built for.
struct ScoringSizes {
  int64_t query_size = 0;   // q: the decoder's hidden units
  int64_t key_size = 0;     // k: the encoder's output width (= the values' width)
  int64_t num_hiddens = 0;  // h: additive's and multihead's projections (0: query_size)
  int64_t num_heads = 1;    // n: multihead only
  double dropout = 0.0;     // on the attention weights, as d2l

  int64_t hidden_units() const { return num_hiddens > 0 ? num_hiddens : query_size; }
};

// What attend() reads of the source, computed once per source by remember().
struct AttentionMemory {
  Tensor keys;    // the keys as score() reads them (projected, for some)
  Tensor values;  // the values as pooled (per head, for multihead)
};

// The base of every scoring function. A subclass supplies score() and, where
// it has them, its parameters (registered in its constructor, as any
// Module's) and the once-per-source part of the keys (remember_keys()).
class ScoringFunction : public Module {
 public:
  ScoringFunction(std::string type_name, const ScoringSizes& sizes);

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
  // queries [B, Tq, q], remembered keys -> scores [B * heads(), Tq, Tk].
  virtual Tensor score(const Tensor& queries, const Tensor& keys) = 0;
  // How many score rows each query has: the heads, folded into the batch.
  virtual int64_t heads() const { return 1; }
  // pooled [B * heads(), Tq, v'] -> context [B, Tq, context_size()]
  // (default: as it is).
  virtual Tensor merge_heads(const Tensor& pooled) const { return pooled; }

 private:
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
// general_scaled) first, then those registered at run time, in order.
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
// general_scaled").
std::string scoring_function_names();

}  // namespace ag::nn
