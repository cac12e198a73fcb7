// What every scoring function shares: the checks, the masked softmax over
// the scores and the pooling of the values (scoring.h). The scoring
// functions themselves are in scoring_NAME.cpp, their names in
// scoring_table.cpp.
// Legend: B batch, Tq queries, Tk keys, n heads.
#include "attograd/nn/scoring.h"

namespace ag::nn {

namespace {

std::string shape_or_none(const Tensor& t) {
  return t.defined() ? shape_str(t.shape()) : std::string("none");
}

}  // namespace

ScoringFunction::ScoringFunction(std::string type_name, const ScoringSizes& sizes)
    : Module(std::move(type_name)), sizes(sizes), dropout(sizes.dropout) {
  AG_CHECK(
      sizes.query_size > 0 && sizes.key_size > 0 && sizes.num_hiddens >= 0 && sizes.num_heads > 0,
      this->type_name().c_str(),
      "sizes must be positive: query_size " + std::to_string(sizes.query_size) + ", key_size " +
          std::to_string(sizes.key_size) + ", num_hiddens " + std::to_string(sizes.num_hiddens) +
          ", num_heads " + std::to_string(sizes.num_heads));
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
  AG_CHECK(keys.size(2) == sizes.key_size, op,
           "keys " + shape_str(keys.shape()) + " have " + std::to_string(keys.size(2)) +
               " features, but key_size is " + std::to_string(sizes.key_size));
  return {remember_keys(keys), remember_values(values)};
}

Tensor ScoringFunction::attend(const Tensor& queries, const AttentionMemory& memory,
                               const Tensor& valid_lens) {
  const char* op = type_name().c_str();
  AG_CHECK(
      queries.defined() && queries.dim() == 3 && memory.keys.defined() && memory.values.defined(),
      op,
      "expected queries [B, Tq, " + std::to_string(sizes.query_size) +
          "] and a memory from remember(), got queries " + shape_or_none(queries));
  AG_CHECK(queries.size(2) == sizes.query_size, op,
           "queries " + shape_str(queries.shape()) + " have " + std::to_string(queries.size(2)) +
               " features, but query_size is " + std::to_string(sizes.query_size));
  const int64_t B = queries.size(0), Tq = queries.size(1), n = heads();
  AG_CHECK(memory.keys.size(0) == B * n, op,
           "queries " + shape_str(queries.shape()) + " and the remembered keys " +
               shape_str(memory.keys.shape()) + " differ in batch size");
  // scores = a(q, k): [B * n, Tq, Tk]
  Tensor scores = score(queries, memory.keys);
  scores.set_name("scores");
  const int64_t Tk = scores.size(-1);
  check_valid_lens(valid_lens, {B, Tq, Tk}, op);
  // weights = masked_softmax(scores) over Tk, one length per head:
  // [B] -> [B * n] (or [B, Tq] -> [B * n, Tq]), as d2l's repeat_interleave
  // (backward: dL/dscores = w * (dL/dw - sum_k w dL/dw), 0 at masked keys)
  const Tensor lens =
      valid_lens.defined() && n > 1 ? repeat_interleave(valid_lens, n, 0) : valid_lens;
  Tensor weights = attention_softmax(scores, {.valid_lens = lens, .op = op});
  weights.set_name("attention_weights");
  // pooled = dropout(weights) V: [B * n, Tq, Tk] @ [B * n, Tk, v] -> [B * n, Tq, v]
  // (backward: dL/dweights = dL/dpooled V^T, dL/dV = weights^T dL/dpooled)
  const Tensor pooled = bmm(dropout(weights), memory.values);
  // The heads' mean, [B * n, Tq, Tk] -> [B, n, Tq, Tk] -> [B, Tq, Tk]: one
  // alignment to draw.
  attention_weights_ =
      n == 1 ? weights.detach() : mean(reshape(weights.detach(), {B, n, Tq, Tk}), 1);
  Tensor context = merge_heads(pooled);
  context.set_name("context");
  return context;
}

}  // namespace ag::nn
