// Tutorial 6 — Additive vs dot-product attention.
//
// The chapter's first exercise, answered by running it: "Modify keys in the
// toy example and visualize attention weights. Do additive attention and
// scaled dot-product attention still output the same attention weights? Why
// or why not?"
//
// Run: build/tutorial_06_additive_vs_dot [--no-pause] [--out DIR]
#include <algorithm>
#include <cmath>

#include "tutorial.h"

namespace {

// Weights of both kinds of attention for the same queries, keys and lengths.
struct Weights {
  ag::Tensor additive, dot;  // [B, Tq, Tk] each
};

Weights both(ag::nn::AdditiveAttention& additive, ag::nn::DotProductAttention& dot,
             const ag::Tensor& queries, const ag::Tensor& keys, const ag::Tensor& values,
             const ag::Tensor& valid_lens) {
  additive(queries, keys, values, valid_lens);
  dot(queries, keys, values, valid_lens);
  return {additive.attention_weights().detach(), dot.attention_weights().detach()};
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 6, "Additive vs dot-product attention");
  ag::manual_seed(6);

  t.step("The toy example, with queries both can use",
         "To compare the two on the same inputs, the queries must have the keys' size (2), "
         "which dot-product attention needs; additive attention takes any size. We keep the "
         "toy example's keys (all ones), values and valid lengths [2, 6], and ask 4 queries "
         "per batch item instead of 1, so that each map has 4 rows.");
  const ag::Tensor queries = ag::randn({2, 4, 2});  // [B=2, Tq=4, d=2]
  const ag::Tensor values =
      ag::expand(ag::reshape(ag::arange(40), {1, 10, 4}), {2, 10, 4});  // [B=2, Tk=10, v=4]
  const ag::Tensor valid_lens = ag::tensor({2, 6}, {2}, ag::kInt64);
  ag::nn::AdditiveAttention additive(/*key_size=*/2, /*query_size=*/2, /*num_hiddens=*/8);
  ag::nn::DotProductAttention dot;
  const Weights same = both(additive, dot, queries, ag::ones({2, 10, 2}), values, valid_lens);
  t.show("additive weights = dot-product weights, batch item 0",
         ag::narrow(same.additive, 0, 0, 1));
  t.check("with equal keys the two weight maps are identical",
          tut::max_abs_diff(same.additive, same.dot) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(same.additive, same.dot)));
  // By hand: equal keys get equal scores, so each row is uniform over its
  // valid keys: 1/2 on keys 0 and 1 of item 0, 1/6 on keys 0..5 of item 1.
  std::vector<double> uniform(2 * 4 * 10, 0.0);
  for (size_t row = 0; row < 8; ++row)
    for (size_t j = 0; j < (row < 4 ? 2u : 6u); ++j)
      uniform[row * 10 + j] = row < 4 ? 0.5 : 1.0 / 6;
  t.check("and both are 1/2 and 1/6 on the valid keys, 0 past them",
          std::max(tut::max_abs_diff(same.additive, ag::tensor(uniform, {2, 4, 10})),
                   tut::max_abs_diff(same.dot, ag::tensor(uniform, {2, 4, 10}))) < 1e-6);

  t.step("Modify the keys",
         "Now draw the keys at random, [2, 10, 2]. Each scoring function sees different "
         "keys now, and there is no reason for them to agree: q . k / sqrt(d) measures how "
         "well q and k point the same way (and how long they are), while "
         "w_v^T tanh(W_q q + W_k k) is whatever function its (here random, untrained) "
         "parameters make it. (With one valid key per item they would still agree: all the "
         "weight on that key.)");
  const ag::Tensor keys = ag::randn({2, 10, 2});  // [B=2, Tk=10, d=2]
  const Weights differ = both(additive, dot, queries, keys, values, valid_lens);
  t.show("additive weights, batch item 1", ag::narrow(differ.additive, 0, 1, 1));
  t.show("dot-product weights, batch item 1", ag::narrow(differ.dot, 0, 1, 1));
  const double difference = tut::max_abs_diff(differ.additive, differ.dot);
  t.check("with random keys the maps differ", difference > 0.05,
          "max |difference| " + tut::num(difference));
  const ag::Tensor keep = ag::nn::lengths_to_keep(valid_lens, differ.dot.shape());  // [2, 4, 10]
  t.check("both still give zero weight past each valid length",
          tut::masked_weight(differ.additive, keep) == 0.0 &&
              tut::masked_weight(differ.dot, keep) == 0.0);
  // The dot-product map in plain loops (tutorial.h), no attograd op.
  const double dot_diff = tut::max_abs_diff(
      differ.dot,
      tut::attention_by_loops(queries, keys, values, 1 / std::sqrt(2.0), {2, 6}).weights);
  t.check("the dot-product map is softmax(q . k / sqrt(2)) over the valid keys, by loops",
          dot_diff < 1e-6, "max |difference| " + tut::num(dot_diff));
  // With one valid key there is nothing to choose, whatever the keys are.
  const Weights single =
      both(additive, dot, queries, keys, values, ag::tensor({1, 1}, {2}, ag::kInt64));
  std::vector<double> first_key(2 * 4 * 10, 0.0);
  for (size_t row = 0; row < 8; ++row) first_key[row * 10] = 1.0;
  t.check("with one valid key per item both put all the weight on it",
          std::max(tut::max_abs_diff(single.additive, ag::tensor(first_key, {2, 4, 10})),
                   tut::max_abs_diff(single.dot, ag::tensor(first_key, {2, 4, 10}))) == 0.0);
  ag::viz::HeatmapOptions options;
  options.titles = {"additive, item 0", "additive, item 1", "dot product, item 0",
                    "dot product, item 1"};
  options.keep_mask = ag::unsqueeze(keep, 0);  // [1, 2, 4, 10]: the same for both rows
  t.heatmap("random_keys", ag::stack({differ.additive, differ.dot}), options);  // [2, 2, 4, 10]
  ag::viz::HeatmapOptions diverging;
  diverging.titles = {"additive - dot, item 0", "additive - dot, item 1"};
  diverging.colormap = ag::viz::Colormap::Diverging;
  diverging.keep_mask = ag::unsqueeze(keep, 0);
  t.heatmap("difference", ag::unsqueeze(differ.additive - differ.dot, 0), diverging);

  t.step("Which key does each query prefer?",
         "The favourite key (argmax of a row) is where the two disagree most visibly. For "
         "the dot product it is the valid key with the largest projection on q; for "
         "untrained additive attention it is an accident of the initial parameters.");
  const ag::Tensor favourite_additive = ag::argmax(differ.additive, -1);  // [2, 4] int64
  const ag::Tensor favourite_dot = ag::argmax(differ.dot, -1);            // [2, 4] int64
  t.show("favourite key, additive", favourite_additive);
  t.show("favourite key, dot product", favourite_dot);
  std::cout << ag::sum(ag::eq(favourite_additive, favourite_dot).to(ag::kInt64)).item()
            << " of 8 queries agree on their favourite key.\n";
  const std::vector<double> favourites = favourite_additive.to_vector();  // [2, 4]
  // True of this draw (seed 6), not of every one: seeds 1-20 gave it in 10 draws.
  bool one_per_item = true;
  for (size_t i = 0; i < 8; ++i) one_per_item &= favourites[i] == favourites[i < 4 ? 0 : 4];
  t.check("additive attention picks one key for all 4 queries of an item", one_per_item);
  t.say(
      "Notice that here additive attention picks the same key for every query of an item "
      "(with other random parameters it may not, but its rows always change little from "
      "one query to the next). "
      "Leave tanh out and a(q, k) = w_v^T W_q q + w_v^T W_k k: the query's term is the same "
      "for every key, and softmax cancels it exactly, so every query gets the same row. "
      "tanh is not linear over these inputs (they reach about 2.5, where tanh(x) is only "
      "0.4 x), yet the "
      "untrained additive weights stay close to that query-free picture: they hardly look "
      "at the query (tutorial 12 meets this again with summation as a score).");
  const ag::Tensor projected_queries = ag::unsqueeze(additive.W_q(queries), 2);  // [2, 4, 1, 8]
  const ag::Tensor projected_keys = ag::unsqueeze(additive.W_k(keys), 1);        // [2, 1, 10, 8]
  const ag::Tensor linear_weights =
      ag::nn::masked_softmax(ag::squeeze(additive.w_v(projected_queries + projected_keys), -1),
                             valid_lens)
          .detach();  // [2, 4, 10]
  const double largest_input = ag::max(ag::abs(projected_queries + projected_keys)).item();
  const double tanh_ratio = std::tanh(largest_input) / largest_input;
  t.check("the largest |W_q q + W_k k| is about 2.5, and tanh(x) / x there about 0.4",
          std::abs(largest_input - 2.5) < 0.1 && std::abs(tanh_ratio - 0.4) < 0.02,
          tut::num(largest_input, "%.3f") + ", " + tut::num(tanh_ratio, "%.3f"));
  // How much a row of weights changes from one query to the next: max over
  // keys and queries of |w[b, i, j] - mean over queries of w[b, :, j]|.
  const auto query_spread = [](const ag::Tensor& w) {
    return tut::max_abs_diff(w, ag::mean(w, 1, /*keepdim=*/true));
  };
  // These two orderings are of random, untrained parameters: over seeds 1-20
  // the first ratio (additive / dot spread) was 0.02-0.26, above 0.25 once
  // (seed 5); the second 0.04-0.69, above 0.5 once (seed 17). Seed 6 gives
  // 0.09 and 0.30.
  t.check("additive rows vary far less across queries than dot-product rows",
          query_spread(differ.additive) < 0.25 * query_spread(differ.dot),
          tut::num(query_spread(differ.additive), "%.3f") + " vs " +
              tut::num(query_spread(differ.dot), "%.3f"));
  t.check("without tanh every query gets the same row", query_spread(linear_weights) < 1e-6,
          "spread " + tut::num(query_spread(linear_weights), "%.1e"));
  const double from_linear = tut::max_abs_diff(differ.additive, linear_weights);
  t.check(
      "the additive weights are nearer that query-free row than dot-product rows are to "
      "their mean",
      from_linear < 0.5 * query_spread(differ.dot),
      tut::num(from_linear, "%.3f") + " vs " + tut::num(query_spread(differ.dot), "%.3f"));

  t.step("Longer keys: one sharpens, one saturates",
         "A structural difference, whatever the parameters: multiply every key by c. Dot "
         "product scores grow like c, so the weights sharpen towards one-hot. Additive "
         "scores pass through tanh, which stays in (-1, 1), so every score is bounded by "
         "sum |w_v| and the weights can never become sharper than that bound allows. "
         "Where do they go instead? Each unit's tanh(W_q q + c W_k k) tends to the sign "
         "of W_k k: the score tends to w_v . sign(W_k k_j), which no longer depends on the "
         "query at all.");
  const double bound = ag::sum(ag::abs(additive.w_v.weight)).item();
  std::vector<ag::Tensor> rows_additive, rows_dot;
  std::cout << "    c   largest weight: additive   dot product   largest |additive score|\n";
  for (const double c : {1.0, 10.0, 100.0}) {
    const Weights scaled = both(additive, dot, queries, keys * c, values, valid_lens);
    rows_additive.push_back(ag::narrow(scaled.additive, 0, 1, 1));  // item 1: [1, 4, 10]
    rows_dot.push_back(ag::narrow(scaled.dot, 0, 1, 1));
    const ag::Tensor additive_scores =
        ag::additive_scores(additive.W_q(queries), additive.W_k(keys * c),
                            ag::reshape(additive.w_v.weight, {-1}));  // [2, 4, 10]
    const double largest = ag::max(ag::abs(additive_scores)).item();
    std::cout << tut::num(c, "%5.0f") << tut::num(ag::max(scaled.additive).item(), "%27.3f")
              << tut::num(ag::max(scaled.dot).item(), "%14.3f") << tut::num(largest, "%27.3f")
              << "\n";
  }
  std::cout << "sum |w_v|, the bound on every additive score: " << tut::num(bound, "%.3f") << "\n";
  // Every row's largest weight, not only the largest of all (0.9995 with
  // seed 6; seeds 1-20 ranged 0.62-1.0: how near one-hot c = 100 gets depends
  // on how close a row's best two keys are).
  const std::vector<double> peaks = ag::max(rows_dot.back(), -1).to_vector();  // [1, 4]
  const double least_peak = *std::min_element(peaks.begin(), peaks.end());
  t.check("dot product at c = 100 is nearly one-hot: every row's largest weight is over 0.99",
          least_peak > 0.99, "smallest " + tut::num(least_peak, "%.4f"));
  // Where the additive scores go: for large c, tanh(W_q q + c W_k k) tends to
  // sign(W_k k) in every unit, so the score tends to w_v . sign(W_k k_j), the
  // key's alone, the same for every query. The limit is computed here by hand
  // from W_k k and w_v; the library's scores must reach it.
  const std::vector<double> wk_keys = additive.W_k(keys).detach().to_vector();  // [2, 10, 8]
  const std::vector<double> w_v = additive.w_v.weight.detach().to_vector();     // [8]
  std::vector<double> limit(2 * 10);
  for (size_t j = 0; j < limit.size(); ++j) {
    for (size_t x = 0; x < w_v.size(); ++x) {
      const double unit = wk_keys[j * w_v.size() + x];
      limit[j] += w_v[x] * (unit > 0 ? 1.0 : unit < 0 ? -1.0 : 0.0);
    }
  }
  const ag::Tensor key_limit = ag::unsqueeze(ag::tensor(limit, {2, 10}), 1);  // [2, 1, 10]
  const auto distance_to_limit = [&](double c) {
    const ag::Tensor scores = ag::additive_scores(additive.W_q(queries), additive.W_k(keys * c),
                                                  ag::reshape(additive.w_v.weight, {-1}));
    return tut::max_abs_diff(scores, key_limit);
  };
  for (const double c : {1.0, 100.0, 1e4}) {
    std::cout << "c = " << tut::num(c, "%g")
              << ": max |score - w_v . sign(W_k k_j)| = " << tut::num(distance_to_limit(c), "%.4f")
              << "\n";
  }
  t.check("at c = 10^4 every additive score is w_v . sign(W_k k_j), whatever the query",
          distance_to_limit(1e4) < 1e-3);
  ag::viz::HeatmapOptions sharpen;
  sharpen.titles = {"additive, c = 1", "additive, c = 10", "additive, c = 100",
                    "dot, c = 1",      "dot, c = 10",      "dot, c = 100"};
  sharpen.keep_mask = ag::narrow(keep, 0, 1, 1);  // [1, 4, 10]
  t.heatmap("key_scale",
            ag::stack({ag::cat(rows_additive, 0), ag::cat(rows_dot, 0)}),  // [2, 3, 4, 10]
            sharpen);

  t.step("Summary",
         "They agree when the keys cannot be told apart (equal keys, or a single valid "
         "key): then every scoring function gives uniform weights. Otherwise they are two "
         "different functions of (q, k): the dot product is a fixed similarity that grows "
         "without bound with the keys' length; additive attention is learned and "
         "saturates. What each prefers after training depends on the task (tutorial 13 "
         "trains both on dates and draws their alignments).\n"
         "In the viewer: attograd-viewer --scene compare puts both maps side by side, and "
         "--scene playground lets you drag the keys and the query.\n"
         "Next: tutorial_07_masks.");
  return t.finish();
}
