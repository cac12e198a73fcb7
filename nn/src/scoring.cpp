// What every scoring function shares: the checks and the way from scores to
// the context, through attention_pool (pooling.h). The scoring functions
// themselves are in scoring_NAME.cpp, their names in scoring_table.cpp.
// Legend: B batch, Tq queries, Tk keys, n heads.
#include "attograd/nn/scoring.h"

#include "attograd/nn/pooling.h"
#include "shape_text.h"

namespace ag::nn {

namespace {

// [B * n, Tq, Tk] per head -> [B, n, Tq, Tk] -> the heads' mean [B, Tq, Tk]:
// one map to draw.
Tensor heads_mean(const Tensor& per_head, int64_t batch, int64_t n) {
  return mean(reshape(per_head, {batch, n, per_head.size(1), per_head.size(2)}), 1);
}

}  // namespace

void check_one_width(const ScoringSizes& sizes, const std::string& who) {
  AG_CHECK(sizes.query_size == sizes.key_size, who,
           "queries and keys must have one width, but query_size is " +
               std::to_string(sizes.query_size) + " and key_size " +
               std::to_string(sizes.key_size));
}

void check_same_width(const Tensor& queries, const Tensor& keys, const std::string& who) {
  AG_CHECK(queries.size(-1) == keys.size(-1), who,
           "queries " + shape_str(queries.shape()) + " and keys " + shape_str(keys.shape()) +
               " differ in width");
}

ScoringFunction::ScoringFunction(std::string type_name, const ScoringSizes& sizes, bool any_width)
    : Module(std::move(type_name)), sizes(sizes), dropout(sizes.dropout) {
  const int64_t least_width = any_width ? 0 : 1;
  AG_CHECK(sizes.query_size >= least_width && sizes.key_size >= least_width &&
               sizes.num_hiddens >= 0 && sizes.num_heads > 0 && sizes.value_size >= 0,
           this->type_name().c_str(),
           std::string(any_width ? "sizes must be >= 0 (0: any width)" : "sizes must be positive") +
               ": query_size " + std::to_string(sizes.query_size) + ", key_size " +
               std::to_string(sizes.key_size) + ", num_hiddens " +
               std::to_string(sizes.num_hiddens) + ", num_heads " +
               std::to_string(sizes.num_heads) + ", value_size " +
               std::to_string(sizes.value_size));
  register_module("dropout", &dropout);
}

AttentionMemory ScoringFunction::remember(const Tensor& keys, const Tensor& values) const {
  const char* op = type_name().c_str();
  AG_CHECK(keys.defined() && values.defined() && keys.dim() == 3 && values.dim() == 3 &&
               keys.size(0) == values.size(0) && keys.size(1) == values.size(1),
           op,
           "expected keys [B, Tk, " + std::to_string(sizes.key_size) +
               "] and values [B, Tk, v], got " + shape_or_none(keys) + " and " +
               shape_or_none(values));
  AG_CHECK(sizes.key_size == 0 || keys.size(2) == sizes.key_size, op,
           "keys " + shape_str(keys.shape()) + " have " + std::to_string(keys.size(2)) +
               " features, but key_size is " + std::to_string(sizes.key_size));
  return {remember_keys(keys), remember_values(values)};
}

Tensor ScoringFunction::attend(const Tensor& queries, const AttentionMemory& memory,
                               const Tensor& valid_lens) {
  return attend_with_weights(queries, memory, {.valid_lens = valid_lens}).context;
}

void ScoringFunction::check_queries(const Tensor& queries, const AttentionMemory& memory,
                                    std::string_view op) const {
  AG_CHECK(
      queries.defined() && queries.dim() == 3 && memory.keys.defined() && memory.values.defined(),
      op,
      "expected queries [B, Tq, " + std::to_string(sizes.query_size) +
          "] and a memory from remember(), got queries " + shape_or_none(queries));
  AG_CHECK(sizes.query_size == 0 || queries.size(2) == sizes.query_size, op,
           "queries " + shape_str(queries.shape()) + " have " + std::to_string(queries.size(2)) +
               " features, but query_size is " + std::to_string(sizes.query_size));
  AG_CHECK(memory.keys.size(0) == queries.size(0) * std::max<int64_t>(heads(), 1), op,
           "queries " + shape_str(queries.shape()) + " and the remembered keys " +
               shape_str(memory.keys.shape()) + " differ in batch size");
}

Tensor ScoringFunction::scores(const Tensor& queries, const AttentionMemory& memory) {
  check_queries(queries, memory, type_name());
  const Tensor per_head = score(queries, memory.keys);
  const int64_t n = heads();
  return n == 0 ? per_head : heads_mean(per_head, queries.size(0), n);
}

Attended ScoringFunction::attend_with_weights(const Tensor& queries, const AttentionMemory& memory,
                                              const AttendOptions& options) {
  const std::string_view op = options.op.empty() ? std::string_view(type_name()) : options.op;
  check_queries(queries, memory, op);
  const int64_t B = queries.size(0), Tq = queries.size(1), Tk = memory.keys.size(1);
  const int64_t n = heads();
  // scores = a(q, k): [B * n, Tq, Tk], made only when the weights are (a
  // streamed call needs q' and the scale alone)
  Scores scores{.shape = {B, Tq, Tk}, .make = [&] { return score(queries, memory.keys); }};
  if (!options.need_weights) {
    if (const std::optional<DotForm> form = dot_form(queries)) {
      scores.q = form->queries;
      scores.k = memory.keys;
      scores.scale = form->scale;
    }
  }
  const Pooled pooled = attention_pool(scores, memory.values,
                                       {.valid_lens = options.valid_lens,
                                        .attn_mask = options.attn_mask,
                                        .fully_masked_rows = options.fully_masked_rows,
                                        .keras_keep = options.keras_keep,
                                        .heads = n,
                                        .dropout = dropout.p,
                                        .training = dropout.is_training(),
                                        .need_weights = options.need_weights,
                                        .op = op});
  // One alignment to draw: the heads' mean.
  const Tensor& w = pooled.weights;
  attention_weights_ = !w.defined() ? Tensor() : n == 0 ? w.detach() : heads_mean(w.detach(), B, n);
  Tensor context = merge_heads(pooled.output);
  context.set_name("context");
  return {context, pooled.weights};
}

}  // namespace ag::nn
