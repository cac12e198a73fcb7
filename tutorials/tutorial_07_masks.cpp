// Tutorial 7 — Masks in practice.
//
// Four ways to say "query i may not look at key j", each from a text a
// learner will meet: the Keras post's padding mask (scores += -1e9 * M), the
// decoder's look-ahead mask, Keras' query and value masks, and d2l's valid
// lengths. All of them meet in one converter (nn/masks.h) as a bool keep mask.
//
// Run: build/tutorial_07_masks [--no-pause] [--out DIR]
#include <cmath>

#include "tutorial.h"

namespace F = ag::nn::functional;

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 7, "Masks in practice");
  ag::manual_seed(7);

  t.step("A padding mask: scores += -1e9 * M",
         "The Keras post pads a sequence of 4 real scores with 4 zeros: "
         "vec = [2, 0.5, 0.8, 1, 0, 0, 0, 0]. A plain softmax hands the padding 0.06 "
         "each. Its fix is a padding indicator M (1 at padding, 0 elsewhere) and "
         "vec += -1e9 * M: the padded scores fall so low that exp() of them is 0. The post "
         "prints [0.41, 0.09, 0.12, 0.15, 0.06, ...] before and [0.53, 0.12, 0.16, 0.19, "
         "0, ...] after.");
  const ag::Tensor vec = ag::tensor({2, 0.5, 0.8, 1, 0, 0, 0, 0}, {8});
  const ag::Tensor M = ag::tensor({0, 0, 0, 0, 1, 1, 1, 1}, {8});  // 1 = padding
  const ag::Tensor before = ag::softmax(vec, -1);
  const ag::Tensor after = ag::softmax(vec + ag::nn::padding_to_additive(M), -1);  // vec - 1e9 M
  t.show("softmax(vec)", before);
  t.show("softmax(vec - 1e9 * M)", after);
  t.check("before: the post's [0.41, 0.09, 0.12, 0.15, 0.06, 0.06, 0.06, 0.06]",
          tut::max_abs_diff(
              before, ag::tensor({0.41, 0.09, 0.12, 0.15, 0.06, 0.06, 0.06, 0.06}, {8})) < 0.005);
  t.check("after: the post's [0.53, 0.12, 0.16, 0.19, 0, 0, 0, 0]",
          tut::max_abs_diff(after, ag::tensor({0.53, 0.12, 0.16, 0.19, 0, 0, 0, 0}, {8})) < 0.005);
  t.check("padding_to_additive(M) is -1e9 * M",
          tut::max_abs_diff(ag::nn::padding_to_additive(M), M * -1e9) == 0.0);

  t.step("A look-ahead mask for a decoder",
         "A decoder predicts token t from tokens before it; in training it sees the whole "
         "target sequence at once, so query t must be kept from keys after t. "
         "causal_mask(T, T) is the bool keep mask (true where key j <= query i): lower "
         "triangular. The post writes the same thing as M = 1 above the diagonal and adds "
         "-1e9 * M.");
  const int64_t T = 5;
  const ag::Tensor causal = ag::nn::causal_mask(T, T);  // bool [5, 5]
  t.show("causal_mask(5, 5)", causal);
  std::vector<double> lower(T * T);  // by hand: 1 where j <= i
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) lower[static_cast<size_t>(i * T + j)] = j <= i;
  t.check("causal_mask(5, 5) is true exactly where j <= i",
          tut::max_abs_diff(causal.to(ag::kFloat32), ag::tensor(lower, {T, T})) == 0.0);
  const ag::Tensor x = ag::randn({1, T, 4});  // self-attention: queries = keys = values
  const F::AttentionResult decoder =
      F::scaled_dot_product_attention_with_weights(x, x, x, {}, 0.0, /*is_causal=*/true);
  const F::AttentionResult by_post = F::scaled_dot_product_attention_with_weights(
      x, x, x, ag::nn::padding_to_additive(ag::nn::keep_to_padding(causal)));  // scores += -1e9 * M
  t.show("weights with is_causal", decoder.weights);
  t.check("nothing above the diagonal", tut::masked_weight(decoder.weights, causal) == 0.0);
  t.check("query 0 sees only key 0, so its output is value 0",
          tut::max_abs_diff(ag::narrow(decoder.output, 1, 0, 1), ag::narrow(x, 1, 0, 1)) < 1e-6);
  t.check("is_causal and the post's -1e9 * M give the same weights",
          tut::max_abs_diff(decoder.weights, by_post.weights) < 1e-6);
  // By loops: row i is the softmax of x_i . x_j / sqrt(4) over keys j <= i.
  const ag::Tensor x0 = ag::squeeze(x, 0);  // [5, 4]
  const double causal_diff = tut::max_abs_diff(
      decoder.weights,
      tut::softmax_by_loops(tut::linear_by_loops(x0, x0) * 0.5, {1, 2, 3, 4, 5}).unsqueeze(0));
  t.check("row i is softmax(x_i . x_j / 2) over keys j <= i, by loops", causal_diff < 1e-6,
          "max |difference| " + tut::num(causal_diff));

  t.step("Keras: query and value masks",
         "Keras' attention layers take two bool masks, true = real token. value_mask [B, Tv] "
         "keeps padded keys out of every query's weights; query_mask [B, Tq] zeroes the "
         "output rows of padded queries, whose results nobody should read.");
  const ag::Tensor query = ag::randn({2, 3, 4});  // [B, Tq, dim]
  const ag::Tensor value = ag::randn({2, 6, 4});  // [B, Tv, dim]
  const ag::Tensor value_mask =
      ag::nn::sequence_mask(ag::tensor({3, 5}, {2}, ag::kInt64), 6);  // [2, 6]
  const ag::Tensor query_mask =
      ag::nn::sequence_mask(ag::tensor({3, 2}, {2}, ag::kInt64), 3);  // [2, 3]
  ag::nn::keras::Attention keras_attention;  // Luong (dot-product) attention, unscaled
  const ag::Tensor keras_output =
      keras_attention(query, value, /*key=*/{}, query_mask, value_mask);  // [2, 3, 4]
  t.show("value_mask", value_mask);
  t.show("query_mask", query_mask);
  t.show("weights", keras_attention.attention_weights());
  t.show("output", keras_output);
  t.say(
      "(-0.0000 is a negative zero: Keras zeroes a masked query's row by multiplying it "
      "by 0, and a negative number times 0 is -0.)");
  const ag::Tensor value_keep = ag::nn::key_keep_to_keep(value_mask, {2, 3, 6});  // [2, 1, 6]
  t.check("masked values get zero weight",
          tut::masked_weight(keras_attention.attention_weights(), value_keep) == 0.0);
  t.check("masked queries get a zero output row",
          tut::masked_weight(keras_output, ag::unsqueeze(query_mask, -1)) == 0.0);
  // By loops: Keras' default score is Luong's dot product, unscaled (scale 1),
  // over the first 3 and 5 values; the value is also the key.
  const tut::LoopAttention luong = tut::attention_by_loops(query, value, value, 1.0, {3, 5});
  const double keras_diff = tut::max_abs_diff(keras_attention.attention_weights(), luong.weights);
  t.check("the weights are softmax(q . k), unscaled, over the real values, by loops",
          keras_diff < 1e-6, "max |difference| " + tut::num(keras_diff));
  // Item 0: every query is real, so its output is the loops'.
  const double real_diff =
      tut::max_abs_diff(ag::narrow(keras_output, 0, 0, 1), ag::narrow(luong.output, 0, 0, 1));
  t.check("a real query's output is those weights times the values, by loops", real_diff < 1e-6,
          "max |difference| " + tut::num(real_diff));
  // Item 1's query 2 is masked: each zero of its row has the sign of the
  // output it would have had.
  const std::vector<double> unmasked =
      ag::narrow(ag::narrow(luong.output, 0, 1, 1), 1, 2, 1).to_vector();
  const std::vector<double> zeroed =
      ag::narrow(ag::narrow(keras_output, 0, 1, 1), 1, 2, 1).to_vector();
  bool signs_match = true;
  for (size_t i = 0; i < zeroed.size(); ++i)
    signs_match &= zeroed[i] == 0.0 && std::signbit(zeroed[i]) == (unmasked[i] < 0);
  t.check("the masked row's -0s are where its unmasked output is negative", signs_match);

  t.step("One converter",
         "Valid lengths [3, 5], a padding indicator M, an additive mask -1e9 * M and a "
         "Keras value_mask all say the same thing for 6 keys: item 0 has 3 real keys, "
         "item 1 has 5. nn/masks.h turns each into the one normal form, a bool keep mask "
         "that broadcasts to the scores [B, Tq, Tk]; attention then needs to handle only "
         "that. Merging with the causal mask is a logical and.");
  const ag::Shape scores_shape = {2, 6, 6};  // self-attention over 6 tokens
  const ag::Tensor lens = ag::tensor({3, 5}, {2}, ag::kInt64);
  const ag::Tensor padding =
      ag::unsqueeze(ag::nn::keep_to_padding(value_mask), 1);  // [2, 1, 6], 1 = pad
  const ag::Tensor from_lengths = ag::nn::lengths_to_keep(lens, scores_shape);  // [2, 6, 6]
  const ag::Tensor from_padding = ag::nn::padding_to_keep(padding);             // [2, 1, 6]
  const ag::Tensor from_additive = ag::nn::additive_to_keep(ag::nn::padding_to_additive(padding));
  const ag::Tensor from_keras = ag::nn::key_keep_to_keep(value_mask, scores_shape);  // [2, 1, 6]
  t.show("padding indicator M", padding);
  t.show("keep mask from the lengths", from_lengths);
  std::vector<double> by_hand(2 * 6 * 6);  // keep[b, i, j] = j < lens[b]
  for (size_t b = 0; b < 2; ++b)
    for (size_t n = 0; n < 36; ++n) by_hand[b * 36 + n] = n % 6 < (b == 0 ? 3u : 5u);
  t.check(
      "the keep mask from the lengths is true exactly where j < length",
      tut::max_abs_diff(from_lengths.to(ag::kFloat32), ag::tensor(by_hand, scores_shape)) == 0.0);
  const auto same_mask = [&](const ag::Tensor& keep) {
    return ag::sum(ag::ne(ag::broadcast_to(keep, scores_shape), from_lengths).to(ag::kInt64))
               .item() == 0;
  };
  t.check("lengths, M, -1e9 * M and value_mask give the same keep mask",
          same_mask(from_padding) && same_mask(from_additive) && same_mask(from_keras));
  const ag::Tensor tokens = ag::randn({2, 6, 4});
  ag::nn::DotProductAttention attention;
  attention(tokens, tokens, tokens, lens);
  const ag::Tensor with_lengths = attention.attention_weights();
  attention(tokens, tokens, tokens, /*valid_lens=*/{}, from_padding);
  const ag::Tensor with_keep = attention.attention_weights();
  attention(tokens, tokens, tokens, /*valid_lens=*/{}, ag::nn::padding_to_additive(padding));
  const ag::Tensor with_additive = attention.attention_weights();
  // And those weights by loops: softmax(x_i . x_j / sqrt(4)) over the real keys.
  const double lengths_diff = tut::max_abs_diff(
      with_lengths, tut::attention_by_loops(tokens, tokens, tokens, 0.5, {3, 5}).weights);
  t.check("with the lengths: softmax(x_i . x_j / 2) over the real keys, by loops",
          lengths_diff < 1e-6, "max |difference| " + tut::num(lengths_diff));
  t.check("attention gives the same weights under each form",
          tut::max_abs_diff(with_lengths, with_keep) < 1e-7 &&
              tut::max_abs_diff(with_lengths, with_additive) < 1e-7,
          "max |difference| " + tut::num(std::max(tut::max_abs_diff(with_lengths, with_keep),
                                                  tut::max_abs_diff(with_lengths, with_additive))));
  const ag::Tensor merged =
      ag::nn::merge_keep(from_padding, ag::nn::causal_mask(6, 6));  // [2, 6, 6]
  attention(tokens, tokens, tokens, /*valid_lens=*/{}, merged);
  const ag::Tensor decoder_weights = attention.attention_weights();  // [2, 6, 6]
  t.show("padding and look-ahead merged (item 1)", ag::narrow(merged, 0, 1, 1));
  std::vector<double> merged_by_hand(2 * 6 * 6);  // j <= i and j < lens[b]
  for (size_t n = 0; n < merged_by_hand.size(); ++n) {
    const size_t b = n / 36, i = n / 6 % 6, j = n % 6;
    merged_by_hand[n] = j <= i && j < (b == 0 ? 3u : 5u);
  }
  t.check("merged: true exactly where j <= i and j < length",
          tut::max_abs_diff(merged.to(ag::kFloat32), ag::tensor(merged_by_hand, {2, 6, 6})) == 0.0);
  t.check("merged: zero weight on padding and on the future",
          tut::masked_weight(decoder_weights, merged) == 0.0);
  t.check("merged: rows sum to one", tut::row_sum_error(decoder_weights) < 1e-6);
  ag::viz::HeatmapOptions masks;
  masks.titles = {"padding (item 1)", "look-ahead", "merged", "weights"};
  // Hatch the masked keys in the weights map only; the three masks show every cell.
  const ag::Tensor all = ag::ones({1, 6, 6}, ag::kBool);
  masks.keep_mask = ag::stack({all, all, all, ag::narrow(merged, 0, 1, 1)}, 1);  // [1, 4, 6, 6]
  const ag::Tensor item1 = ag::narrow(merged, 0, 1, 1);                          // [1, 6, 6]
  t.heatmap(
      "masks",
      ag::stack({ag::broadcast_to(ag::narrow(from_padding, 0, 1, 1), {1, 6, 6}).to(ag::kFloat32),
                 ag::unsqueeze(ag::nn::causal_mask(6, 6), 0).to(ag::kFloat32),
                 item1.to(ag::kFloat32), ag::narrow(decoder_weights, 0, 1, 1)},
                1),  // [1, 4, 6, 6]
      masks);
  t.say(
      "The first three maps are keep masks (yellow = may attend); the last is the "
      "weights under the merged mask, its masked keys hatched.");

  t.step("Summary",
         "Padding masks, look-ahead masks, Keras' masks and d2l's lengths differ in form, "
         "not in meaning: each becomes a bool keep mask, masks combine with a logical and, "
         "and masked keys get exactly zero weight.\n"
         "In the viewer: attograd-viewer --scene masks, with every kind of mask on a "
         "switch.\n"
         "Next: tutorial_08_nadaraya_watson, where attention began.");
  return t.finish();
}
