// Tutorial 9 — Multi-head attention.
//
// d2l's MultiHeadAttention: project queries, keys and values to h features,
// split the features into num_heads groups, run scaled dot-product attention
// on each group separately (all heads in one batched call), join the groups
// and project once more. Each head has its own map of weights.
//
// Run: build/tutorial_09_multihead [--no-pause] [--out DIR]
#include <cmath>
#include <vector>

#include "tutorial.h"

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 9, "Multi-head attention");
  ag::manual_seed(9);

  t.step("The module",
         "d2l's example: h = 100 hidden features split into 5 heads of 20. W_q, W_k, W_v "
         "project the inputs to 100 features; W_o mixes the joined heads back into 100. "
         "eval() switches its dropout (probability 0.5) off.");
  const int64_t num_hiddens = 100, num_heads = 5;
  ag::nn::MultiHeadAttention attention(/*key_size=*/num_hiddens, /*query_size=*/num_hiddens,
                                       /*value_size=*/num_hiddens, num_hiddens, num_heads,
                                       /*dropout=*/0.5);
  attention.eval();
  for (const auto& [name, parameter] : attention.named_parameters()) {
    std::cout << "  " << name << " " << ag::shape_str(parameter.shape()) << "\n";
  }

  t.step("Splitting the heads is a reshape",
         "transpose_qkv turns [B, T, 100] into [B * 5, T, 20]: reshape the features to "
         "[B, T, 5, 20], move the head axis next to the batch, [B, 5, T, 20], and fold it "
         "into the batch. Head k of batch item b is row b * 5 + k, and it holds features "
         "20k .. 20k + 19. Nothing is computed; the heads are slices of the features, "
         "and transpose_output undoes it exactly.");
  const ag::Tensor X = ag::randn({2, 4, num_hiddens});           // [B=2, Tq=4, 100]
  const ag::Tensor heads = ag::nn::transpose_qkv(X, num_heads);  // [10, 4, 20]
  t.say("transpose_qkv(X): " + ag::shape_str(X.shape()) + " -> " + ag::shape_str(heads.shape()));
  const ag::Tensor head_1_3 = ag::narrow(heads, 0, 1 * num_heads + 3, 1);  // item 1, head 3
  const ag::Tensor features_1_3 = ag::narrow(ag::narrow(X, 0, 1, 1), 2, 3 * 20, 20);
  t.check("head 3 of item 1 is features 60..79 of item 1",
          tut::max_abs_diff(head_1_3, features_1_3) == 0.0);
  t.check("transpose_output undoes transpose_qkv",
          tut::max_abs_diff(ag::nn::transpose_output(heads, num_heads), X) == 0.0);

  t.step("Run it",
         "Queries X [2, 4, 100] against 6 keys and values Y [2, 6, 100], with valid lengths "
         "[3, 2]: item 0 sees keys 0-2, item 1 keys 0-1, in every head (d2l repeats the "
         "lengths once per head). The output has the queries' shape; the weights have one "
         "[4, 6] map per item and head: [2, 5, 4, 6].");
  const ag::Tensor Y = ag::randn({2, 6, num_hiddens});  // [B=2, Tk=6, 100]
  const ag::Tensor valid_lens = ag::tensor({3, 2}, {2}, ag::kInt64);
  const ag::Tensor output = attention(X, Y, Y, valid_lens);  // [2, 4, 100]
  const ag::Tensor weights = attention.attention_weights();  // [2, 5, 4, 6]
  t.say("output " + ag::shape_str(output.shape()) + ", attention_weights() " +
        ag::shape_str(weights.shape()));
  t.show("item 0, head 0",
         ag::reshape(ag::narrow(ag::narrow(weights.detach(), 0, 0, 1), 1, 0, 1), {4, 6}));
  const ag::Tensor keep =
      ag::unsqueeze(ag::nn::lengths_to_keep(valid_lens, {2, 4, 6}), 1);  // [2, 1, 4, 6]
  t.check("output [2, 4, 100] and weights [2, 5, 4, 6]",
          output.shape() == ag::Shape{2, 4, 100} && weights.shape() == ag::Shape{2, 5, 4, 6});
  t.check("every head: rows sum to one", tut::row_sum_error(weights) < 1e-6);
  t.check("every head: zero weight past each valid length",
          tut::masked_weight(weights, keep) == 0.0);
  ag::viz::HeatmapOptions options;
  for (int b = 0; b < 2; ++b) {
    for (int k = 0; k < num_heads; ++k) {
      options.titles.push_back("item " + std::to_string(b) + ", head " + std::to_string(k));
    }
  }
  options.keep_mask = keep;
  t.heatmap("heads", weights, options);  // a grid: rows = batch items, columns = heads
  t.say(
      "One map per head: the same queries and keys, five different ways of weighting "
      "them, because each head compares a different 20-feature slice of the "
      "projections.");

  t.step("Every head by hand",
         "Each head is plain scaled dot-product attention on its 20 features of the "
         "projected queries, keys and values: head 2 on features 40..59 of W_q X, W_k Y "
         "and W_v Y. Here every sum and product of it in loops over the plain numbers "
         "(tutorial.h), no library arithmetic: the three projections, each head's "
         "softmax(q k^T / sqrt(20)) over the valid keys and its weighted values, then W_o "
         "on the heads side by side.");
  const int64_t width = num_hiddens / num_heads;
  const ag::Tensor projected_q = tut::linear_by_loops(X, attention.W_q.weight);  // [2, 4, 100]
  const ag::Tensor projected_k = tut::linear_by_loops(Y, attention.W_k.weight);  // [2, 6, 100]
  const ag::Tensor projected_v = tut::linear_by_loops(Y, attention.W_v.weight);  // [2, 6, 100]
  std::vector<ag::Tensor> head_outputs;                                          // each [2, 4, 20]
  ag::Tensor head2_by_loops;
  for (int64_t h = 0; h < num_heads; ++h) {
    const tut::LoopAttention head = tut::attention_by_loops(
        ag::narrow(projected_q, 2, h * width, width), ag::narrow(projected_k, 2, h * width, width),
        ag::narrow(projected_v, 2, h * width, width), 1 / std::sqrt(double(width)), {3, 2});
    if (h == 2) head2_by_loops = head.weights;
    head_outputs.push_back(head.output);
  }
  const ag::Tensor output_by_loops =
      tut::linear_by_loops(ag::cat(head_outputs, 2), attention.W_o.weight);  // [2, 4, 100]
  const ag::Tensor head2 = ag::squeeze(ag::narrow(weights, 1, 2, 1), 1);     // [2, 4, 6]
  t.check("head 2's weights are softmax(q k^T / sqrt(20)) on features 40..59, by loops",
          tut::max_abs_diff(head2_by_loops, head2) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(head2_by_loops, head2)));
  t.check("the output is W_o of the joined heads, by loops",
          tut::max_abs_diff(output_by_loops, output) < 1e-4,
          "max |difference| " + tut::num(tut::max_abs_diff(output_by_loops, output)));

  t.step("Summary",
         "Multi-head attention is one batched scaled dot-product attention over B * heads "
         "items: splitting heads is a reshape and a transpose, each head sees its own slice "
         "of the projected features, and W_o mixes the heads' outputs.\n"
         "In the viewer: attograd-viewer --scene multihead shows the per-head maps live.\n"
         "Next: tutorial_10_backward_by_hand.");
  return t.finish();
}
