// Tutorial 5 — Additive attention.
//
// d2l's toy example, run as the chapter runs it: 2 batch items, one query of
// size 20 each, 10 keys of size 2 that are all equal, values 0..39, valid
// lengths 2 and 6. The output is [[2, 3, 4, 5]] and [[10, 11, 12, 13]] and the
// weights are uniform; this tutorial shows why.
//
// Run: build/tutorial_05_additive_attention [--no-pause] [--out DIR]
#include "tutorial.h"

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 5, "Additive attention");
  ag::manual_seed(5);

  t.step("The toy example's inputs",
         "Queries [2, 1, 20]: one query of 20 features per batch item. Keys [2, 10, 2]: "
         "ten keys of 2 features, all ones. Values [2, 10, 4]: the numbers 0..39 in ten "
         "rows of four, the same for both items. valid_lens [2, 6]: item 0 may only look "
         "at its first 2 keys, item 1 at its first 6.");
  const ag::Tensor queries = ag::randn({2, 1, 20});  // [B=2, Tq=1, query_size=20]
  const ag::Tensor keys = ag::ones({2, 10, 2});      // [B=2, Tk=10, key_size=2]
  const ag::Tensor values =
      ag::expand(ag::reshape(ag::arange(40), {1, 10, 4}), {2, 10, 4});  // [B=2, Tk=10, v=4]
  const ag::Tensor valid_lens = ag::tensor({2, 6}, {2}, ag::kInt64);    // [B]
  t.show("queries", queries);
  t.show("values (batch item 0; item 1 is the same)", ag::narrow(values, 0, 0, 1));

  t.step("The additive scoring function",
         "Queries and keys have different sizes (20 and 2), so q . k is not even defined. "
         "Additive attention maps both into a shared space of h hidden units and compares "
         "them there: a(q, k) = w_v^T tanh(W_q q + W_k k), with W_q [h, 20], W_k [h, 2], "
         "w_v [1, h], no biases. It is an MLP with one hidden layer of h = 8 units applied "
         "to the pair (q, k). eval() switches its dropout (probability 0.1) off.");
  ag::nn::AdditiveAttention attention(/*key_size=*/2, /*query_size=*/20, /*num_hiddens=*/8,
                                      /*dropout=*/0.1);
  attention.eval();
  for (const auto& [name, parameter] : attention.named_parameters()) {
    std::cout << "  " << name << " " << ag::shape_str(parameter.shape()) << "\n";
  }

  t.step("Run it",
         "attention(queries, keys, values, valid_lens) gives one output per query: a "
         "weighted average of the value rows, [2, 1, 4]. The chapter prints [[2, 3, 4, 5]] "
         "and [[10, 11, 12, 13]].");
  const ag::Tensor output = attention(queries, keys, values, valid_lens);  // [2, 1, 4]
  t.show("output", output);
  t.check("output is [[2, 3, 4, 5]] and [[10, 11, 12, 13]]",
          tut::max_abs_diff(output, ag::tensor({2, 3, 4, 5, 10, 11, 12, 13}, {2, 1, 4})) < 1e-5,
          "max |difference| " + tut::num(tut::max_abs_diff(
                                    output, ag::tensor({2, 3, 4, 5, 10, 11, 12, 13}, {2, 1, 4}))));

  t.step("Why the weights are uniform",
         "Every key is the same vector, so W_k k is the same for all ten keys, and so is "
         "every score of a query: the learned parameters cannot tell the keys apart. Equal "
         "scores give equal weights over the valid keys: 1/2 on keys 0-1 for item 0, 1/6 "
         "on keys 0-5 for item 1, exactly 0 past the valid length. So the output is the "
         "plain mean of the first 2 value rows, (0..3 + 4..7) / 2 = [2, 3, 4, 5], and of "
         "the first 6, [10, 11, 12, 13].");
  // The scores as the module computes them: project, then sum_h w_v tanh(q_h + k_h).
  const ag::Tensor scores =
      ag::additive_scores(attention.W_q(queries), attention.W_k(keys),
                          ag::reshape(attention.w_v.weight, {-1}));  // [2, 1, 10]
  t.show("scores", scores);
  const ag::Tensor weights = attention.attention_weights();  // [2, 1, 10]
  t.show("attention.attention_weights()", weights);
  const ag::Tensor keep = ag::nn::lengths_to_keep(valid_lens, weights.shape());  // [2, 1, 10]
  const ag::Tensor expected = ag::where(
      keep, ag::reshape(ag::tensor({0.5, 1.0 / 6}, {2}), {2, 1, 1}), 0.0);  // 1/len, then 0
  t.check("every key of a query gets the same score",
          tut::max_abs_diff(scores, ag::narrow(scores, 2, 0, 1)) < 1e-6);
  t.check("weights are 1/2 and 1/6 on the valid keys", tut::max_abs_diff(weights, expected) < 1e-6);
  t.check("rows sum to one", tut::row_sum_error(weights) < 1e-6);
  t.check("zero weight past each valid length", tut::masked_weight(weights, keep) == 0.0);
  ag::viz::HeatmapOptions options;
  options.keep_mask = ag::reshape(keep, {1, 1, 2, 10});
  options.show_values = true;
  options.cell_size = 40;  // room for the printed values
  options.vmin = 0;        // weights on the full [0, 1] scale: dark means near 0
  options.vmax = 1;
  t.heatmap("additive_weights", ag::reshape(weights, {1, 1, 2, 10}), options);
  t.say(
      "In the heatmap, row 0 is item 0's query and row 1 item 1's; hatched cells lie past "
      "the valid length.");

  t.step("Scaled dot-product attention on the same keys",
         "The chapter repeats the example with DotProductAttention, whose queries must have "
         "the keys' size, 2. Its scores q . k / sqrt(2) are again the same for every key "
         "(the keys are equal), so the weights and the output are the same too.");
  const ag::Tensor small_queries = ag::randn({2, 1, 2});  // [B=2, Tq=1, d=2]
  ag::nn::DotProductAttention dot(/*dropout=*/0.5);
  dot.eval();
  const ag::Tensor dot_output = dot(small_queries, keys, values, valid_lens);  // [2, 1, 4]
  t.show("dot-product output", dot_output);
  t.check("dot-product output is [[2, 3, 4, 5]] and [[10, 11, 12, 13]] too",
          tut::max_abs_diff(dot_output, output) < 1e-5);
  t.check("and its weights equal the additive ones",
          tut::max_abs_diff(dot.attention_weights(), weights) < 1e-6);

  t.step("Inside the scores: d2l's broadcast, and the fused kernel",
         "d2l computes the scores by broadcasting: the projected queries [B, Tq, 1, h] plus "
         "the projected keys [B, 1, Tk, h] give every (query, key) pair's h hidden units "
         "[B, Tq, Tk, h]; tanh, then w_v sums them away. That tensor grows with Tq x Tk x h, "
         "so the module runs a fused kernel (ag::additive_scores) that never makes it, "
         "forward or backward. The broadcast is still in the library: "
         "ag::reference::additive_scores, beside the kernel in core/src/ops_attention.cpp. "
         "Run this tutorial with ATTOGRAD_REFERENCE=1 and every op takes its plain "
         "reference like this one, the module included.");
  const ag::Tensor projected_queries = attention.W_q(queries);  // [2, 1, 8]
  const ag::Tensor projected_keys = attention.W_k(keys);        // [2, 10, 8]
  const ag::Tensor hidden_units =
      ag::unsqueeze(projected_queries, 2) + ag::unsqueeze(projected_keys, 1);  // [2, 1, 10, 8]
  t.show("the broadcast's hidden units, item 0, key 0",
         ag::narrow(ag::narrow(hidden_units, 0, 0, 1), 2, 0, 1));
  const ag::Tensor broadcast_scores = ag::reference::additive_scores(
      projected_queries, projected_keys, ag::reshape(attention.w_v.weight, {-1}));
  std::cout << "reference mode is " << (ag::reference_mode() ? "on" : "off")
            << " (ATTOGRAD_REFERENCE=1 turns it on)\n";
  t.check("d2l's broadcast gives the fused kernel's scores",
          tut::max_abs_diff(broadcast_scores, scores) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(broadcast_scores, scores)));

  t.step("Why eval()",
         "In training mode dropout zeroes each weight with probability p and scales the rest "
         "by 1/(1 - p), so the output is random and no longer the mean of the values. The "
         "chapter's numbers hold in eval mode only:");
  attention.train();
  const ag::Tensor first_try = attention(queries, keys, values, valid_lens);
  const ag::Tensor second_try = attention(queries, keys, values, valid_lens);
  t.show("output in training mode (random)", first_try);
  attention.eval();
  const ag::Tensor in_eval_mode = attention(queries, keys, values, valid_lens);
  t.check("in training mode two calls differ, and neither is eval mode's output",
          tut::max_abs_diff(first_try, second_try) > 1e-3 &&
              tut::max_abs_diff(first_try, in_eval_mode) > 1e-3 &&
              tut::max_abs_diff(second_try, in_eval_mode) > 1e-3,
          "max |difference| " + tut::num(tut::max_abs_diff(first_try, second_try)));

  t.step("Summary",
         "Additive attention scores a query against a key of another size with a small "
         "MLP, w_v^T tanh(W_q q + W_k k). When all keys are equal, no scoring function can "
         "prefer one, and the weights are uniform over the valid keys.\n"
         "In the viewer: attograd-viewer --scene compare shows additive and dot-product "
         "weights side by side on the same inputs.\n"
         "Next: tutorial_06_additive_vs_dot, where the keys differ.");
  return t.finish();
}
