// Tutorial 2 — Masked softmax.
//
// The first op of attention: softmax turns scores into weights, and a mask
// keeps padding out of them. d2l's two demonstrations (one valid length per
// batch item, one per row), what its -1e6 fill really does, and what a row
// with no valid key gives.
//
// Run: build/tutorial_02_masked_softmax [--no-pause] [--out DIR]
#include <cmath>
#include <limits>

#include "tutorial.h"

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 2, "Masked softmax");
  ag::manual_seed(2);

  t.step("Softmax turns scores into weights",
         "Attention gives every key a score and turns the scores of one query into "
         "weights with softmax over the last axis: w_j = exp(s_j) / sum_k exp(s_k). The "
         "weights are positive and sum to one, so the output is a weighted average of the "
         "values. X holds 2 batch items of 2 queries x 4 keys.");
  const ag::Tensor X = ag::rand({2, 2, 4});  // [B=2, Tq=2, Tk=4] scores in [0, 1)
  t.show("X", X);
  const ag::Tensor plain = ag::softmax(X, -1);  // [2, 2, 4]
  t.show("softmax(X, -1)", plain);
  t.check("softmax: rows sum to one", tut::row_sum_error(plain) < 1e-6,
          "max error " + tut::num(tut::row_sum_error(plain)));
  // The formula in plain loops with std::exp (tutorial.h), no attograd op.
  const double plain_diff = tut::max_abs_diff(plain, tut::softmax_by_loops(X));
  t.check("softmax: w_j = exp(s_j) / sum_k exp(s_k), by loops", plain_diff < 1e-6,
          "max |difference| " + tut::num(plain_diff));

  t.step("One valid length per batch item",
         "Sequences in a batch are padded to one length, and the padding must get no "
         "weight. d2l passes valid lengths: valid_lens = [2, 3] means batch item 0 has 2 "
         "real keys and item 1 has 3; every query row of an item shares its length. The "
         "keep mask is what the lengths mean: true where key j < length.");
  const ag::Tensor lens_per_item = ag::tensor({2, 3}, {2}, ag::kInt64);        // [B]
  const ag::Tensor W1 = ag::nn::masked_softmax(X, lens_per_item);              // [2, 2, 4]
  const ag::Tensor keep1 = ag::nn::lengths_to_keep(lens_per_item, X.shape());  // bool [2, 2, 4]
  t.show("keep", keep1);
  t.show("masked_softmax(X, [2, 3])", W1);
  t.check("lengths per item: zero weight past each valid length",
          tut::masked_weight(W1, keep1) == 0.0);
  t.check("lengths per item: rows sum to one", tut::row_sum_error(W1) < 1e-6);
  // By loops: the softmax of each row's first 2 (item 0) or 3 (item 1) scores.
  t.check("lengths per item: the softmax of the valid keys' scores, by loops",
          tut::max_abs_diff(W1, tut::softmax_by_loops(X, {2, 2, 3, 3})) < 1e-6);
  ag::viz::HeatmapOptions options;
  options.titles = {"batch 0: length 2", "batch 1: length 3"};
  options.keep_mask = ag::reshape(keep1, {1, 2, 2, 4});
  options.show_values = true;
  options.cell_size = 40;  // room for the printed values
  options.vmin = 0;        // weights on the full [0, 1] scale: dark means near 0
  options.vmax = 1;
  t.heatmap("lengths_per_item", ag::reshape(W1, {1, 2, 2, 4}), options);
  t.say("In the heatmap, hatched cells are masked keys (they are not just small weights).");

  t.step("One valid length per row",
         "valid_lens may also have the shape of X without its last axis, [2, 2]: one "
         "length per query row. [[1, 3], [2, 4]] gives row 0 of item 0 a single key, so "
         "all its weight lands there, and row 1 of item 1 all four keys, a plain softmax.");
  const ag::Tensor lens_per_row = ag::tensor({1, 3, 2, 4}, {2, 2}, ag::kInt64);  // [B, Tq]
  const ag::Tensor W2 = ag::nn::masked_softmax(X, lens_per_row);                 // [2, 2, 4]
  const ag::Tensor keep2 = ag::nn::lengths_to_keep(lens_per_row, X.shape());
  t.show("masked_softmax(X, [[1, 3], [2, 4]])", W2);
  t.check("lengths per row: zero weight past each valid length",
          tut::masked_weight(W2, keep2) == 0.0);
  t.check("lengths per row: rows sum to one", tut::row_sum_error(W2) < 1e-6);
  t.check("lengths per row: the softmax of the valid keys' scores, by loops",
          tut::max_abs_diff(W2, tut::softmax_by_loops(X, {1, 3, 2, 4})) < 1e-6);
  t.check("a row of length 1 is [1, 0, 0, 0]",
          tut::max_abs_diff(ag::narrow(ag::narrow(W2, 0, 0, 1), 1, 0, 1),
                            ag::tensor({1, 0, 0, 0}, {1, 1, 4})) == 0.0);
  t.check("a row of length 4 is the plain softmax",
          tut::max_abs_diff(ag::narrow(ag::narrow(W2, 0, 1, 1), 1, 1, 1),
                            ag::narrow(ag::narrow(plain, 0, 1, 1), 1, 1, 1)) < 1e-7);
  options.titles = {"batch 0: lengths 1, 3", "batch 1: lengths 2, 4"};
  options.keep_mask = ag::reshape(keep2, {1, 2, 2, 4});
  t.heatmap("lengths_per_row", ag::reshape(W2, {1, 2, 2, 4}), options);

  t.step("What the -1e6 does",
         "masked_softmax writes -1e6 over every masked score before the softmax. "
         "exp(-1e6 - max) is far below the smallest positive float (printed below), so it "
         "rounds to exactly 0: the masked keys get exactly zero weight, not a small one. A "
         "mild fill value would leak: with -1 the padding still gets a share, because the "
         "real scores lie in [0, 1) and e^-1 is not small next to e^0.");
  std::cout << "smallest positive float32 " << std::numeric_limits<float>::denorm_min()
            << ", float64 " << std::numeric_limits<double>::denorm_min() << "\n";
  const ag::Tensor filled = ag::masked_fill(X, ag::logical_not(keep1), ag::nn::kD2lMaskValue);
  t.show("X with masked scores replaced by -1e6", filled);
  const ag::Tensor underflow32 = ag::exp(ag::tensor({-1e6}, {1}));
  const ag::Tensor underflow64 = ag::exp(ag::tensor({-1e6}, {1}, ag::kFloat64));
  t.show("exp(-1e6) in float32", underflow32);
  t.show("exp(-1e6) in float64", underflow64);
  const ag::Tensor leaky = ag::nn::masked_softmax(X, lens_per_item, /*mask_value=*/-1.0);
  t.show("masked_softmax(X, [2, 3], mask_value = -1)", leaky);
  t.check("exp(-1e6) is exactly 0 in float32 and float64",
          underflow32.item() == 0.0 && underflow64.item() == 0.0);
  // By hand: with scores in [0, 1), a key filled with -1 among 4 keys gets at
  // least e^-1 / (e^-1 + 3 e) = 0.043, so 0.01 holds whatever X is drawn.
  t.check("with -1 they still get weight", tut::masked_weight(leaky, keep1) > 0.01,
          "largest masked weight " + tut::num(tut::masked_weight(leaky, keep1)));

  t.step("A row with no valid key",
         "What if a valid length is 0? Every score of the row becomes -1e6, all equal, so "
         "d2l's softmax spreads the weight evenly: 1/4 on each key, padding included "
         "(MaskedRows::Uniform). attograd can give zeros instead (MaskedRows::Zero), and "
         "its scaled_dot_product_attention does. The naive alternative, filling with -inf, "
         "divides 0 by 0: the row becomes NaN, which then spreads through every later "
         "computation.");
  const ag::Tensor lens_empty = ag::tensor({2, 0}, {2}, ag::kInt64);  // item 1: no key
  const ag::Tensor keep_empty = ag::nn::lengths_to_keep(lens_empty, X.shape());
  const ag::Tensor uniform = ag::nn::masked_softmax(X, lens_empty);
  const ag::Tensor zero = ag::nn::masked_softmax_keep(X, keep_empty, ag::nn::MaskedRows::Zero);
  const ag::Tensor nan = ag::softmax(
      ag::masked_fill(X, ag::logical_not(keep_empty), -std::numeric_limits<double>::infinity()),
      -1);
  t.show("MaskedRows::Uniform (d2l, the default)", uniform);
  t.show("MaskedRows::Zero", zero);
  t.show("filling with -inf", nan);
  const ag::Tensor empty_item = ag::narrow(uniform, 0, 1, 1);  // [1, 2, 4]
  t.check("Uniform: the empty rows are 1/4 on every key",
          tut::max_abs_diff(empty_item, ag::full({1, 2, 4}, 0.25)) < 1e-7);
  t.check("Zero: the empty rows are all 0",
          tut::max_abs_diff(ag::narrow(zero, 0, 1, 1), ag::zeros({1, 2, 4})) == 0.0);
  t.check("neither policy gives NaN",
          !std::isnan(ag::sum(uniform).item()) && !std::isnan(ag::sum(zero).item()));
  t.check("filling with -inf does", std::isnan(ag::sum(nan).item()));
  // The same empty rows through attention itself: PyTorch's function would
  // give NaN there, attograd's gives zero weights and a zero output.
  const ag::Tensor q = ag::randn({2, 2, 3}), k = ag::randn({2, 4, 3}), v = ag::randn({2, 4, 3});
  const auto [output, weights] =
      ag::nn::functional::scaled_dot_product_attention_with_weights(q, k, v, keep_empty);
  t.show("scaled_dot_product_attention's weights with item 1 masked", weights);
  t.check("scaled_dot_product_attention: the empty rows get zero weights and a zero output",
          tut::max_abs_diff(ag::narrow(weights, 0, 1, 1), ag::zeros({1, 2, 4})) == 0.0 &&
              tut::max_abs_diff(ag::narrow(output, 0, 1, 1), ag::zeros({1, 2, 3})) == 0.0);
  ag::viz::HeatmapOptions policies;
  policies.titles = {"Uniform: item 0", "Uniform: item 1 (empty)", "Zero: item 0",
                     "Zero: item 1 (empty)"};
  policies.show_values = true;
  policies.cell_size = 40;  // room for the printed values
  policies.vmin = 0;        // weights on the full [0, 1] scale: dark means near 0
  policies.vmax = 1;
  t.heatmap("fully_masked_rows", ag::reshape(ag::stack({uniform, zero}), {2, 2, 2, 4}), policies);

  t.step("Summary",
         "masked_softmax(X, valid_lens) takes one length per batch item or one per row; "
         "masked keys get exactly zero weight because exp(-1e6) underflows to 0, and a row "
         "with no valid key is uniform (d2l) or zero (MaskedRows::Zero), never NaN.\n"
         "In the viewer: attograd-viewer --scene masks lets you drag the valid length and "
         "watch the weights move.\n"
         "Next: tutorial_03_bmm, the batched matrix products that compute the scores.");
  return t.finish();
}
