// Multi-head attention (d2l's MultiHeadAttention is its face): n heads of
// scaled dot-product attention over projected queries, keys and values,
// joined and projected once more:
//   head_i = attention(q W_q,i, K W_k,i, V W_v,i)       (h / n wide each)
//   context = cat(head_1, ..., head_n) W_o
// Parameters, in d2l's names: W_q.weight [h, q], W_k.weight [h, k],
// W_v.weight [h, v], W_o.weight [h, h] (and .bias [h] each with sizes.bias).
// The context is h wide.
// Legend: B batch, Tq queries, Tk keys, q query width, k key width, v the
// values' width (sizes.values_width(): k unless set), h hidden units, n heads.
#include <cmath>

#include "attograd/nn/attention.h"
#include "scoring_functions.h"

namespace ag::nn {

namespace {

class MultiHeadScoring : public ScoringFunction {
 public:
  explicit MultiHeadScoring(const ScoringSizes& sizes)
      : ScoringFunction("MultiHeadScoring", sizes),
        W_q(sizes.query_size, sizes.hidden_units(), sizes.bias),
        W_k(sizes.key_size, sizes.hidden_units(), sizes.bias),
        W_v(sizes.values_width(), sizes.hidden_units(), sizes.bias),
        W_o(sizes.hidden_units(), sizes.hidden_units(), sizes.bias) {
    AG_CHECK(sizes.hidden_units() % sizes.num_heads == 0, "MultiHeadScoring",
             "num_hiddens " + std::to_string(sizes.hidden_units()) +
                 " is not a multiple of num_heads " + std::to_string(sizes.num_heads));
    register_module("W_q", &W_q);
    register_module("W_k", &W_k);
    register_module("W_v", &W_v);
    register_module("W_o", &W_o);
  }

  int64_t context_size() const override { return sizes.hidden_units(); }

 protected:
  int64_t heads() const override { return sizes.num_heads; }

  // Once per source: K W_k^T, [B, Tk, k] -> [B, Tk, h] -> [B * n, Tk, h / n]
  Tensor remember_keys(const Tensor& keys) const override {
    Tensor per_head = transpose_qkv(W_k(keys), sizes.num_heads);
    per_head.set_name("keys_per_head");
    return per_head;
  }
  // Once per source: V W_v^T, [B, Tk, v] -> [B, Tk, h] -> [B * n, Tk, h / n]
  Tensor remember_values(const Tensor& values) const override {
    Tensor per_head = transpose_qkv(W_v(values), sizes.num_heads);
    per_head.set_name("values_per_head");
    return per_head;
  }

  // Every head's scaled dot product, dot's score (scoring_dot.cpp) with the
  // heads folded into the batch: [B * n, Tq, h / n], [B * n, Tk, h / n]
  // -> [B * n, Tq, Tk]
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    return scaled_dot_scores(queries_per_head(queries), keys);
  }

  // The same as scale * Q K^T, for the streamed path: Q and 1/sqrt(h / n).
  std::optional<DotForm> dot_form(const Tensor& queries) const override {
    const Tensor q = queries_per_head(queries);
    return DotForm{q, 1.0 / std::sqrt(static_cast<double>(q.size(2)))};
  }

  // [B * n, Tq, h / n] -> [B, Tq, h] -> W_o -> [B, Tq, h]
  Tensor merge_heads(const Tensor& pooled) const override {
    Tensor joined = transpose_output(pooled, sizes.num_heads);
    joined.set_name("heads_concatenated");
    return W_o(joined);
  }

 public:
  Linear W_q, W_k, W_v, W_o;

 private:
  // q W_q^T, [B, Tq, q] -> [B, Tq, h] -> [B * n, Tq, h / n]
  Tensor queries_per_head(const Tensor& queries) const {
    Tensor per_head = transpose_qkv(W_q(queries), sizes.num_heads);
    per_head.set_name("queries_per_head");
    return per_head;
  }
};

}  // namespace

std::unique_ptr<ScoringFunction> make_multihead_scoring(const ScoringSizes& sizes) {
  return std::make_unique<MultiHeadScoring>(sizes);
}

}  // namespace ag::nn
