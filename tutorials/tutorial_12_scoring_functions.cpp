// Tutorial 12 — Scoring functions beyond the chapter.
//
// The chapter's exercises 2 and 3, answered by running them:
//   2. Using matrix multiplications only, can you design a new scoring
//      function for queries and keys with different vector lengths?
//   3. When queries and keys have the same vector length, is vector summation
//      a better design than dot product for the scoring function?
//
// Run: build/tutorial_12_scoring_functions [--no-pause] [--out DIR]
#include <cmath>

#include "tutorial.h"

namespace F = ag::nn::functional;

namespace {

// Attention with a given score matrix: masked softmax over the keys, then the
// weighted sum of the values. scores [B, Tq, Tk], values [B, Tk, v].
struct Pooled {
  ag::Tensor weights;  // [B, Tq, Tk]
  ag::Tensor output;   // [B, Tq, v]
};

Pooled pool(const ag::Tensor& scores, const ag::Tensor& values, const ag::Tensor& valid_lens) {
  const ag::Tensor weights = ag::nn::masked_softmax(scores, valid_lens);
  return {weights, ag::bmm(weights, values)};
}

// The bilinear (matmul-only) score q^T W k: queries [B, Tq, q], W [q, k],
// keys [B, Tk, k] -> [B, Tq, Tk].
ag::Tensor bilinear_scores(const ag::Tensor& queries, const ag::Tensor& W, const ag::Tensor& keys) {
  return ag::bmm(ag::matmul(queries, W), ag::transpose(keys, 1, 2));  // [B, Tq, k] @ [B, k, Tk]
}

// Summation as a score: sum(q + k) over the features -> [B, Tq, Tk].
ag::Tensor summation_scores(const ag::Tensor& queries, const ag::Tensor& keys) {
  return ag::sum(ag::unsqueeze(queries, 2) + ag::unsqueeze(keys, 1), -1);  // [B, Tq, Tk, d] -> sum
}

// How much the rows of weights [B, Tq, Tk] change from query to query:
// max |w[b, i, j] - mean over queries of w[b, :, j]|.
double query_spread(const ag::Tensor& weights) {
  return tut::max_abs_diff(weights, ag::mean(weights, 1, /*keepdim=*/true));
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 12, "Scoring functions beyond the chapter");
  ag::manual_seed(12);

  t.step("A matmul-only score for different sizes: q^T W k",
         "Queries of size 20 and keys of size 2 cannot be dotted, but a learned matrix W "
         "[20, 2] between them fixes that: a(q, k) = q^T W k. For a whole batch it is two "
         "matrix products, (Q W) K^T: [B, Tq, 20] @ [20, 2] -> [B, Tq, 2], then against "
         "the keys -> [B, Tq, Tk]. No tanh, no hidden layer. Checked against the double sum "
         "sum_a sum_c q[a] W[a, c] k[c], written as loops, for every (query, key) pair.");
  const ag::Tensor queries = ag::randn({2, 1, 20});  // [B=2, Tq=1, 20]
  const ag::Tensor values =
      ag::expand(ag::reshape(ag::arange(40), {1, 10, 4}), {2, 10, 4});  // [B=2, Tk=10, v=4]
  const ag::Tensor valid_lens = ag::tensor({2, 6}, {2}, ag::kInt64);
  const ag::Tensor W = ag::randn({20, 2}) / std::sqrt(20.0);  // [20, 2], learnable in a model
  const ag::Tensor random_keys = ag::randn({2, 10, 2});       // [B=2, Tk=10, 2]
  const ag::Tensor scores = bilinear_scores(queries, W, random_keys);  // [2, 1, 10]
  t.show("q^T W k", scores);
  const std::vector<double> q_values = queries.to_vector(), w_values = W.to_vector(),
                            k_values = random_keys.to_vector();
  std::vector<double> by_hand(20, 0.0);  // [2, 1, 10]
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < 10; ++j) {
      for (int a = 0; a < 20; ++a) {
        for (int c = 0; c < 2; ++c) {
          by_hand[b * 10 + j] +=
              q_values[b * 20 + a] * w_values[a * 2 + c] * k_values[(b * 10 + j) * 2 + c];
        }
      }
    }
  }
  t.check("(Q W) K^T equals sum_a sum_c q[a] W[a, c] k[c] for every pair",
          tut::max_abs_diff(scores, ag::tensor(by_hand, {2, 1, 10})) < 1e-5);

  t.step("It is dot-product attention after a projection",
         "q^T W k = (W^T q) . k: project each query to the keys' size with W^T, then take "
         "a plain dot product. So the bilinear score is scaled dot-product attention with a "
         "learned query projection and scale 1 (or 1/sqrt(2) if you want the variance "
         "argument of tutorial 4). Check it on random keys against the library's "
         "scaled_dot_product_attention with scale = 1.");
  const Pooled bilinear = pool(bilinear_scores(queries, W, random_keys), values, valid_lens);
  const ag::Tensor keep = ag::nn::lengths_to_keep(valid_lens, {2, 1, 10});  // bool [2, 1, 10]
  const F::AttentionResult projected = F::scaled_dot_product_attention_with_weights(
      ag::matmul(queries, W), random_keys, values, keep, 0.0, false, /*scale=*/1.0);
  t.show("bilinear weights", bilinear.weights);
  t.check("bilinear weights = dot-product weights of the projected queries",
          tut::max_abs_diff(bilinear.weights, projected.weights) < 1e-6);
  // And by loops (tutorial.h): linear_by_loops(x, M) is x M^T, so Q W is
  // linear_by_loops(Q, W^T); then unscaled attention over the valid keys.
  const ag::Tensor QW = tut::linear_by_loops(queries, ag::transpose(W, 0, 1).contiguous());
  const double bilinear_diff = tut::max_abs_diff(
      bilinear.weights, tut::attention_by_loops(QW, random_keys, values, 1.0, {2, 6}).weights);
  t.check("bilinear weights = softmax(q^T W k) over the valid keys, by loops", bilinear_diff < 1e-6,
          "max |difference| " + tut::num(bilinear_diff));
  const ag::Tensor W64 = W.to(ag::kFloat64).requires_grad_();
  const ag::GradcheckResult report = ag::gradcheck(
      [&](const std::vector<ag::Tensor>& in) {
        return pool(bilinear_scores(queries.to(ag::kFloat64), in[0], random_keys.to(ag::kFloat64)),
                    values.to(ag::kFloat64), valid_lens)
            .output;
      },
      {W64});
  std::cout << report.message << "\n";
  t.check("W gets correct gradients, so it can be learned", report.ok);
  t.say(
      "Cost per (query, key) pair: the bilinear score needs 2 multiplications once QW is "
      "computed (20 x 2 per query); additive attention needs h tanh evaluations per pair "
      "on top of its projections.");

  t.step("Summation as a score",
         "For queries and keys of the same size d, try a(q, k) = sum(q + k) = sum(q) + "
         "sum(k). The query's part, sum(q), is the same for every key, and softmax ignores "
         "what is added to a whole row: the weights are softmax(sum(k_j)), whatever the "
         "query. Every query gets the same mixture of values.");
  const ag::Tensor q = ag::randn({1, 6, 4});                             // [B=1, Tq=6, d=4]
  const ag::Tensor k = ag::randn({1, 8, 4});                             // [B=1, Tk=8, d=4]
  const ag::Tensor v = ag::randn({1, 8, 3});                             // [B=1, Tk=8, v=3]
  const ag::Tensor summation = ag::softmax(summation_scores(q, k), -1);  // [1, 6, 8]
  t.show("summation weights (one row per query)", summation);
  // softmax(sum(k_j)) by loops, no attograd op: one row, the same for all 6 queries.
  const std::vector<double> k_entries = k.to_vector();
  std::vector<double> key_sums(8, 0.0);
  for (size_t j = 0; j < 8; ++j)
    for (size_t x = 0; x < 4; ++x) key_sums[j] += k_entries[j * 4 + x];
  const ag::Tensor key_only = tut::softmax_by_loops(ag::tensor(key_sums, {1, 1, 8}));
  t.check("every query's row is softmax(sum(k_j)), by loops",
          tut::max_abs_diff(summation, key_only) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(summation, key_only)));
  ag::nn::DotProductAttention dot;
  dot(q, k, v);
  const ag::Tensor dot_weights = dot.attention_weights();  // [1, 6, 8]
  t.check("dot-product rows do depend on the query", query_spread(dot_weights) > 0.05,
          "spread " + tut::num(query_spread(dot_weights), "%.3f") + " vs summation's " +
              tut::num(query_spread(summation), "%.1e"));

  t.step("Summation with a nonlinearity is additive attention",
         "Put a tanh between the sum and the reduction, sum(scale * tanh(q + k)), and the "
         "query no longer separates from the key: tanh(q + k) is not tanh(q) + tanh(k). "
         "That is Keras' AdditiveAttention (additive attention without the projections): "
         "computed here by hand, softmax over the keys of sum(scale * tanh(q_i + k_j)) with "
         "the layer's own scale, in plain loops, it gives the layer's weights. Its rows differ "
         "from query to "
         "query.");
  ag::nn::keras::AdditiveAttention keras_additive(/*dim=*/4);
  keras_additive(q, v, /*key=*/k);
  const ag::Tensor tanh_weights = keras_additive.attention_weights();  // [1, 6, 8]
  // By loops with std::tanh, no attograd op: score[i, j] = sum_x scale[x]
  // tanh(q_i[x] + k_j[x]), then the softmax over the 8 keys.
  const std::vector<double> q_entries = q.to_vector(),
                            scale = keras_additive.scale.detach().to_vector();
  std::vector<double> tanh_scores(6 * 8, 0.0);
  for (size_t i = 0; i < 6; ++i)
    for (size_t j = 0; j < 8; ++j)
      for (size_t x = 0; x < 4; ++x)
        tanh_scores[i * 8 + j] += scale[x] * std::tanh(q_entries[i * 4 + x] + k_entries[j * 4 + x]);
  const ag::Tensor tanh_by_hand = tut::softmax_by_loops(ag::tensor(tanh_scores, {1, 6, 8}));
  t.check("Keras' AdditiveAttention weights are softmax(sum(scale * tanh(q + k))), by loops",
          tut::max_abs_diff(tanh_weights, tanh_by_hand) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(tanh_weights, tanh_by_hand), "%.1e"));
  t.check("sum(scale * tanh(q + k)) rows depend on the query", query_spread(tanh_weights) > 0.01,
          "spread " + tut::num(query_spread(tanh_weights), "%.3f"));
  ag::viz::HeatmapOptions options;
  options.titles = {"q . k / sqrt(d)", "sum(q + k)", "sum(scale * tanh(q + k))"};
  t.heatmap("scores_compared", ag::stack({dot_weights, summation, tanh_weights}, 1), options);
  t.say("In the heatmap, every row of the summation map is the same: the query has no say.");

  t.step("Summary",
         "Exercise 2: yes, q^T W k uses matrix products only and handles different sizes; "
         "it is dot-product attention after a learned projection. Exercise 3: no, plain "
         "summation is worse than the dot product: the query's part cancels in the "
         "softmax, so the weights ignore the query. A nonlinearity between sum and "
         "reduction rescues it, and that is additive attention.\n"
         "In the viewer: attograd-viewer --scene compare and --scene playground.\n"
         "Next: tutorial_13_bahdanau, where additive attention is trained inside a "
         "translation model (tutorials/README.md lists all eighteen).");
  return t.finish();
}
