// Attention: d2l's toy example, the three modules, functional
// scaled_dot_product_attention, fully masked rows, named graphs, a float64
// gradcheck of the whole stack under every mask kind, and bad input.
#include <cmath>
#include <functional>
#include <set>

#include "test_util.h"

namespace ag {
namespace {

namespace F = nn::functional;
using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

using testing::bools;
using testing::has_nan;
using testing::lens;

// Names of every tensor in the graph that produced t (for the viewer).
std::set<std::string> graph_names(const Tensor& t) {
  std::set<std::string> names;
  if (!t.name().empty()) names.insert(t.name());
  std::vector<const Node*> stack{t.grad_fn().get()};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (!node || !seen.insert(node).second) continue;
    for (const NodeInput& input : node->inputs()) {
      if (!input.defined()) continue;  // e.g. the missing bias of a Linear
      if (!input.name().empty()) names.insert(input.name());
      stack.push_back(input.grad_fn().get());
    }
  }
  return names;
}

// d2l's toy example: queries (2, 1, *), keys ones (2, 10, 2), values
// arange(40).reshape(1, 10, 4) repeated twice, valid_lens [2, 6]. All keys
// are equal, so the weights are uniform over the valid keys and the output is
// the mean of the first 2 (resp. 6) value rows.
struct ToyExample {
  Tensor keys = ones({2, 10, 2});
  Tensor values = expand(reshape(arange(40), {1, 10, 4}), {2, 10, 4}).contiguous();
  Tensor valid_lens = lens({2, 6});
};

TEST(AttentionToyExampleTest, AdditiveAttentionAsInD2l) {
  manual_seed(0);
  ToyExample toy;
  Tensor queries = randn({2, 1, 20});
  nn::AdditiveAttention attention(/*key_size=*/2, /*query_size=*/20, /*num_hiddens=*/8,
                                  /*dropout=*/0.1);
  attention.eval();
  Tensor out = attention(queries, toy.keys, toy.values, toy.valid_lens);
  EXPECT_EQ(out.shape(), (Shape{2, 1, 4}));
  EXPECT_TRUE(all_close(out, {2, 3, 4, 5, 10, 11, 12, 13}, 1e-5));
  Tensor w = attention.attention_weights();
  EXPECT_EQ(w.shape(), (Shape{2, 1, 10}));
  EXPECT_TRUE(all_close(w, {0.5,    0.5,    0,      0,      0,      0,      0, 0, 0, 0,  //
                            1 / 6., 1 / 6., 1 / 6., 1 / 6., 1 / 6., 1 / 6., 0, 0, 0, 0},
                        1e-6));
}

TEST(AttentionToyExampleTest, DotProductAttentionAsInD2l) {
  manual_seed(1);
  ToyExample toy;
  Tensor queries = randn({2, 1, 2});
  nn::DotProductAttention attention(/*dropout=*/0.5);
  attention.eval();
  Tensor out = attention(queries, toy.keys, toy.values, toy.valid_lens);
  EXPECT_TRUE(all_close(out, {2, 3, 4, 5, 10, 11, 12, 13}, 1e-5));
  EXPECT_EQ(attention.attention_weights().shape(), (Shape{2, 1, 10}));
}

// ---- the modules ----------------------------------------------------------------------------

TEST(AdditiveAttentionTest, ParametersAsD2lNamesThem) {
  nn::AdditiveAttention attention(2, 20, 8, 0.1);
  const auto named = attention.named_parameters();
  ASSERT_EQ(named.size(), 3u);
  EXPECT_EQ(named[0].first, "W_k.weight");
  EXPECT_EQ(named[0].second.shape(), (Shape{8, 2}));
  EXPECT_EQ(named[1].first, "W_q.weight");
  EXPECT_EQ(named[1].second.shape(), (Shape{8, 20}));
  EXPECT_EQ(named[2].first, "w_v.weight");
  EXPECT_EQ(named[2].second.shape(), (Shape{1, 8}));
  EXPECT_TRUE(nn::DotProductAttention(0.1).named_parameters().empty());
}

TEST(MultiHeadAttentionTest, D2lShapes) {
  // d2l: num_hiddens 100, 5 heads, batch 2, 4 queries, 6 key-value pairs.
  nn::MultiHeadAttention attention(100, 100, 100, 100, 5, 0.5);
  attention.eval();
  Tensor X = ones({2, 4, 100}), Y = ones({2, 6, 100});
  Tensor out = attention(X, Y, Y, lens({3, 2}));
  EXPECT_EQ(out.shape(), (Shape{2, 4, 100}));
  Tensor w = attention.attention_weights();
  EXPECT_EQ(w.shape(), (Shape{2, 5, 4, 6}));
  const std::vector<double> v = w.to_vector();
  for (size_t row = 0; row < 40; ++row) {
    const size_t valid = row < 20 ? 3 : 2;  // item 0 has 3 valid keys, item 1 has 2
    double total = 0;
    for (size_t j = 0; j < 6; ++j) {
      total += v[row * 6 + j];
      if (j >= valid) {
        EXPECT_EQ(v[row * 6 + j], 0.0);
      }
    }
    EXPECT_NEAR(total, 1.0, 1e-6);
  }
}

TEST(MultiHeadAttentionTest, ParameterNamesWithAndWithoutBias) {
  std::vector<std::string> names;
  for (const auto& [name, p] : nn::MultiHeadAttention(5, 4, 3, 8, 2, 0, false).named_parameters())
    names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"W_q.weight", "W_k.weight", "W_v.weight", "W_o.weight"}));
  names.clear();
  nn::MultiHeadAttention with_bias(5, 4, 3, 8, 2, 0, true);
  for (const auto& [name, p] : with_bias.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"W_q.weight", "W_q.bias", "W_k.weight", "W_k.bias",
                                             "W_v.weight", "W_v.bias", "W_o.weight", "W_o.bias"}));
  EXPECT_EQ(with_bias.W_k.weight.shape(), (Shape{8, 5}));
  EXPECT_EQ(with_bias.W_q.weight.shape(), (Shape{8, 4}));
  EXPECT_EQ(with_bias.W_v.weight.shape(), (Shape{8, 3}));
  EXPECT_EQ(with_bias.W_o.weight.shape(), (Shape{8, 8}));
}

TEST(MultiHeadAttentionTest, TransposeQkvAndOutputAreInverse) {
  Tensor X = reshape(arange(2 * 3 * 4), {2, 3, 4});
  Tensor heads = nn::transpose_qkv(X, 2);
  EXPECT_EQ(heads.shape(), (Shape{4, 3, 2}));
  // Head 1 of item 0 holds features 2..3 of every step.
  EXPECT_EQ(narrow(heads, 0, 1, 1).to_vector(), (std::vector<double>{2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(nn::transpose_output(heads, 2).to_vector(), X.to_vector());
  EXPECT_TRUE(throws_error([&] { nn::transpose_qkv(X, 3); }, {"transpose_qkv", "[2, 3, 4]", "3"}));
}

TEST(MultiHeadAttentionTest, EqualsPerHeadScaledDotProductAttention) {
  // The same computation without d2l's folding of heads into the batch:
  // [B, T, h] -> [B, T, H, h/H] -> [B, H, T, h/H], sdpa over the last two
  // axes, back to [B, T, h], W_o.
  manual_seed(2);
  nn::MultiHeadAttention attention(5, 4, 3, 8, 2, 0, true);
  attention.to(kFloat64);
  Tensor q = randn({2, 3, 4}, kFloat64), k = randn({2, 5, 5}, kFloat64),
         v = randn({2, 5, 3}, kFloat64);
  auto split = [](const Tensor& x) {
    return permute(reshape(x, {x.size(0), x.size(1), 2, 4}), {0, 2, 1, 3});
  };
  Tensor keep = unsqueeze(unsqueeze(nn::sequence_mask(lens({2, 4}), 5), 1), 1);  // [B, 1, 1, Tk]
  auto [heads, weights] = F::scaled_dot_product_attention_with_weights(
      split(attention.W_q(q)), split(attention.W_k(k)), split(attention.W_v(v)), keep);
  Tensor expected = attention.W_o(reshape(permute(heads, {0, 2, 1, 3}), {2, 3, 8}));
  EXPECT_TRUE(all_close(attention(q, k, v, lens({2, 4})), expected, 1e-12));
  EXPECT_TRUE(all_close(attention.attention_weights(), weights, 1e-12));
}

TEST(AttentionModulesTest, MasksAgreeWithValidLengths) {
  manual_seed(3);
  nn::DotProductAttention attention;
  Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 2});
  Tensor by_lens = attention(q, k, v, lens({2, 4}));
  Tensor keep = nn::key_keep_to_keep(nn::sequence_mask(lens({2, 4}), 5), {2, 3, 5});
  EXPECT_TRUE(all_close(attention(q, k, v, Tensor(), keep), by_lens, 1e-6));
  EXPECT_TRUE(all_close(attention(q, k, v, Tensor(), nn::keep_to_additive(keep)), by_lens, 1e-6));
  // Both at once: a key must be allowed by both.
  attention(q, k, v, lens({2, 4}), nn::causal_mask(3, 5));
  const std::vector<double> w = attention.attention_weights().to_vector();
  EXPECT_EQ(w[1], 0.0);               // item 0, query 0: only key 0
  EXPECT_NE(w[5 + 1], 0.0);           // item 0, query 1: keys 0, 1
  EXPECT_EQ(w[2 * 5 + 2], 0.0);       // item 0, query 2: key 2 is beyond length 2
  EXPECT_NE(w[15 + 2 * 5 + 2], 0.0);  // item 1, query 2: keys 0..2
}

TEST(AttentionModulesTest, MultiHeadMasksBroadcastOverHeads) {
  manual_seed(4);
  nn::MultiHeadAttention attention(3, 3, 3, 4, 2, 0);
  Tensor q = randn({2, 3, 3}), k = randn({2, 4, 3});
  Tensor keep3 = gt(rand({2, 3, 4}), scalar_tensor(0.3));
  Tensor out3 = attention(q, k, k, Tensor(), keep3);
  Tensor w3 = attention.attention_weights();
  // [B, Tq, Tk] is read as [B, 1, Tq, Tk] (shared by the heads) ...
  EXPECT_TRUE(all_close(attention(q, k, k, Tensor(), unsqueeze(keep3, 1)), out3, 0, 0));
  // ... and lengths agree with their keep mask; [Tq, Tk] broadcasts.
  Tensor by_lens = attention(q, k, k, lens({1, 3}));
  EXPECT_TRUE(all_close(attention(q, k, k, Tensor(), nn::lengths_to_keep(lens({1, 3}), {2, 3, 4})),
                        by_lens, 0, 0));
  attention(q, k, k, Tensor(), nn::causal_mask(3, 4));
  EXPECT_EQ(attention.attention_weights().to_vector()[1], 0.0);
  // [B, H, Tq, Tk]: a different mask per head.
  Tensor per_head = bools({1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0,  //
                           0, 0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 1},
                          {1, 2, 3, 4});
  attention(q, k, k, Tensor(), per_head);
  const std::vector<double> w = attention.attention_weights().to_vector();
  EXPECT_EQ(w[1], 0.0);
  EXPECT_EQ(w[12], 0.0);
  EXPECT_EQ(w[15], 1.0);
  EXPECT_FALSE(has_nan(w3));
}

// ---- fully masked rows ----------------------------------------------------------------------

TEST(AttentionModulesTest, FullyMaskedRowsUniformByDefaultZeroOnRequest) {
  manual_seed(5);
  Tensor q = randn({2, 2, 3}), k = randn({2, 4, 3}), v = randn({2, 4, 2});
  Tensor valid = lens({0, 3});
  nn::DotProductAttention dot;
  nn::AdditiveAttention additive(3, 3, 5);
  nn::MultiHeadAttention mha(3, 3, 2, 4, 2);
  // d2l: length 0 -> weights 1/Tk over all keys, output = mean of the values.
  Tensor mean_values = mean(narrow(v, 0, 0, 1), 1);  // [1, 2]
  Tensor out = dot(q, k, v, valid);
  EXPECT_TRUE(all_close(narrow(out, 0, 0, 1),
                        expand(unsqueeze(mean_values, 1), {1, 2, 2}).contiguous(), 1e-6));
  EXPECT_TRUE(all_close(narrow(dot.attention_weights(), 0, 0, 1),
                        {.25, .25, .25, .25, .25, .25, .25, .25}, 1e-7));
  out = additive(q, k, v, valid);
  EXPECT_TRUE(all_close(narrow(out, 0, 0, 1),
                        expand(unsqueeze(mean_values, 1), {1, 2, 2}).contiguous(), 1e-6));
  mha(q, k, v, valid);
  EXPECT_TRUE(all_close(narrow(mha.attention_weights(), 0, 0, 1), ones({1, 2, 2, 4}) * 0.25, 1e-7));
  // MaskedRows::Zero: zero weights, zero output rows (before W_o for MHA).
  dot.masked_rows = additive.masked_rows = mha.masked_rows = nn::MaskedRows::Zero;
  EXPECT_TRUE(all_close(narrow(dot(q, k, v, valid), 0, 0, 1), zeros({1, 2, 2}), 0, 0));
  EXPECT_TRUE(all_close(narrow(additive(q, k, v, valid), 0, 0, 1), zeros({1, 2, 2}), 0, 0));
  Tensor mha_out = mha(q, k, v, valid);
  EXPECT_TRUE(all_close(narrow(mha.attention_weights(), 0, 0, 1), zeros({1, 2, 2, 4}), 0, 0));
  EXPECT_FALSE(has_nan(mha_out));
  // Rows with valid keys are the same under both choices.
  Tensor zero_rows = dot(q, k, v, valid);
  dot.masked_rows = nn::MaskedRows::Uniform;
  EXPECT_TRUE(all_close(narrow(dot(q, k, v, valid), 0, 1, 1), narrow(zero_rows, 0, 1, 1), 0, 0));
}

// ---- dropout, names, heatmaps ---------------------------------------------------------------

TEST(AttentionModulesTest, WeightsAreKeptBeforeDropout) {
  manual_seed(6);
  Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 2});
  nn::DotProductAttention attention(0.5);
  ASSERT_TRUE(attention.is_training());
  manual_seed(7);
  Tensor train_out = attention(q, k, v, lens({3, 5}));
  EXPECT_TRUE(all_close(sum(attention.attention_weights(), -1), ones({2, 3}), 1e-6));
  manual_seed(7);
  EXPECT_TRUE(all_close(attention(q, k, v, lens({3, 5})), train_out, 0, 0));  // reproducible
  attention.eval();
  Tensor eval_out = attention(q, k, v, lens({3, 5}));
  EXPECT_GT(testing::max_abs_diff(eval_out, train_out), 1e-3);
  // The eval output is exactly weights @ values.
  EXPECT_TRUE(all_close(eval_out, bmm(attention.attention_weights(), v), 0, 0));
}

TEST(AttentionModulesTest, IntermediatesAreNamedAndWeightsHeatmapReady) {
  manual_seed(8);
  nn::AdditiveAttention additive(2, 3, 4);
  Tensor out = additive(randn({2, 1, 3}), randn({2, 5, 2}), randn({2, 5, 2}), lens({2, 5}));
  EXPECT_EQ(out.name(), "output");
  const std::set<std::string> names = graph_names(out);
  for (const char* name : {"projected_queries", "projected_keys", "scores", "attention_weights"})
    EXPECT_TRUE(names.count(name)) << name;
  Tensor heatmap = additive.attention_weights().detach();
  EXPECT_EQ(heatmap.shape(), (Shape{2, 1, 5}));
  EXPECT_FALSE(heatmap.requires_grad());
  EXPECT_EQ(additive.attention_weights().name(), "attention_weights");

  nn::MultiHeadAttention mha(2, 3, 2, 4, 2);
  Tensor mha_out = mha(randn({2, 1, 3}), randn({2, 5, 2}), randn({2, 5, 2}));
  const std::set<std::string> mha_names = graph_names(mha_out);
  for (const char* name : {"queries_per_head", "keys_per_head", "values_per_head", "scores",
                           "attention_weights", "heads_concatenated"})
    EXPECT_TRUE(mha_names.count(name)) << name;
  EXPECT_FALSE(nn::DotProductAttention().attention_weights().defined());  // before any call
}

// ---- functional scaled_dot_product_attention -------------------------------------------------

TEST(ScaledDotProductAttentionTest, MatchesTheFormula) {
  manual_seed(9);
  Tensor q = randn({2, 3, 4}, kFloat64), k = randn({2, 5, 4}, kFloat64),
         v = randn({2, 5, 2}, kFloat64);
  Tensor weights = softmax(matmul(q, transpose(k, 1, 2)) / 2.0, -1);
  auto [out, w] = F::scaled_dot_product_attention_with_weights(q, k, v);
  EXPECT_TRUE(all_close(w, weights, 1e-14));
  EXPECT_TRUE(all_close(out, matmul(weights, v), 1e-14));
  // Without weights the output is streamed (flash_attention): the same sums
  // in another order, so equal to rounding.
  EXPECT_TRUE(all_close(F::scaled_dot_product_attention(q, k, v), out, 1e-14));
  // The DotProductAttention module computes the same thing.
  EXPECT_TRUE(all_close(nn::DotProductAttention()(q, k, v), out, 1e-14));
  // Custom scale; NaN means the default.
  Tensor scaled = softmax(matmul(q, transpose(k, 1, 2)) * 0.3, -1);
  EXPECT_TRUE(
      all_close(F::scaled_dot_product_attention_with_weights(q, k, v, {}, 0, false, 0.3).weights,
                scaled, 1e-14));
  EXPECT_TRUE(all_close(F::scaled_dot_product_attention(q, k, v, {}, 0, false, NAN),
                        F::scaled_dot_product_attention(q, k, v), 0, 0));
}

TEST(ScaledDotProductAttentionTest, MasksAndCausal) {
  manual_seed(10);
  Tensor q = randn({2, 3, 4}, kFloat64), k = randn({2, 3, 4}, kFloat64),
         v = randn({2, 3, 2}, kFloat64);
  Tensor scores = matmul(q, transpose(k, 1, 2)) / 2.0;
  // is_causal == a bool causal mask == an additive -inf mask
  Tensor causal = F::scaled_dot_product_attention(q, k, v, {}, 0, true);
  EXPECT_TRUE(
      all_close(F::scaled_dot_product_attention(q, k, v, nn::causal_mask(3, 3)), causal, 0, 0));
  EXPECT_TRUE(
      all_close(F::scaled_dot_product_attention(
                    q, k, v, nn::keep_to_additive(nn::causal_mask(3, 3), kFloat64, -INFINITY)),
                causal, 1e-15));
  // A float mask is added to the scores.
  Tensor bias = randn({3, 3}, kFloat64);
  EXPECT_TRUE(all_close(F::scaled_dot_product_attention(q, k, v, bias),
                        matmul(softmax(scores + bias, -1), v), 1e-14));
  // is_causal and a mask combine (PyTorch would refuse).
  Tensor keep = bools({1, 0, 1, 1, 1, 0, 1, 1, 1}, {3, 3});
  Tensor w = F::scaled_dot_product_attention_with_weights(q, k, v, keep, 0, true).weights;
  EXPECT_EQ(logical_and(keep, nn::causal_mask(3, 3)).to_vector(),
            (std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_TRUE(all_close(w,
                        nn::masked_softmax_keep(scores, logical_and(keep, nn::causal_mask(3, 3)),
                                                nn::MaskedRows::Zero),
                        1e-15));
}

TEST(ScaledDotProductAttentionTest, FullyMaskedRowsGiveZerosNotNaN) {
  // PyTorch returns NaN here; we return zero weights and a zero output row.
  Tensor q = leaf64({1, 2, 3}), k = leaf64({1, 4, 3}), v = leaf64({1, 4, 2});
  Tensor keep = bools({0, 0, 0, 0, 1, 1, 0, 1}, {2, 4});
  auto [out, w] = F::scaled_dot_product_attention_with_weights(q, k, v, keep);
  EXPECT_FALSE(has_nan(out));
  EXPECT_EQ(narrow(w, 1, 0, 1).to_vector(), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(narrow(out, 1, 0, 1).to_vector(), (std::vector<double>{0, 0}));
  EXPECT_NEAR(sum(narrow(w, 1, 1, 1)).item(), 1.0, 1e-12);
  sum(out).backward();
  for (const Tensor& t : {q, k, v}) EXPECT_FALSE(has_nan(t.grad()));
  EXPECT_EQ(narrow(q.grad(), 1, 0, 1).to_vector(), (std::vector<double>{0, 0, 0}));
  // The same with -inf in a float mask.
  Tensor bias = nn::keep_to_additive(keep, kFloat64, -INFINITY);
  EXPECT_TRUE(all_close(F::scaled_dot_product_attention(q, k, v, bias), out, 1e-15));
}

TEST(ScaledDotProductAttentionTest, BatchDimsBroadcast) {
  manual_seed(11);
  Tensor q = randn({2, 2, 3, 4}, kFloat64), k = randn({5, 4}, kFloat64),
         v = randn({2, 1, 5, 2}, kFloat64);
  Tensor out = F::scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(out.shape(), (Shape{2, 2, 3, 2}));
  Tensor w = softmax(matmul(q, transpose(k, 0, 1)) / 2.0, -1);
  EXPECT_TRUE(all_close(out, matmul(w, v), 1e-14));
}

TEST(ScaledDotProductAttentionTest, DropoutAppliesAfterTheWeights) {
  manual_seed(12);
  Tensor q = randn({2, 3, 4}), k = randn({2, 6, 4}), v = randn({2, 6, 2});
  manual_seed(13);
  auto [out, w] = F::scaled_dot_product_attention_with_weights(q, k, v, {}, 0.5);
  EXPECT_TRUE(all_close(sum(w, -1), ones({2, 3}), 1e-6));  // weights before dropout
  EXPECT_GT(testing::max_abs_diff(out, matmul(w, v)), 1e-3);
  manual_seed(13);
  EXPECT_TRUE(all_close(F::scaled_dot_product_attention(q, k, v, {}, 0.5), out, 0, 0));
}

// ---- gradcheck of the whole stack -------------------------------------------------------------

// Every mask kind on scores [2, 3, 4], with rows that keep a single key and
// rows that keep none.
struct MaskKind {
  std::string name;
  Tensor valid_lens, attn_mask;
};

std::vector<MaskKind> mask_kinds() {
  Tensor additive = tensor({0,         -1e9,      0,         0,                                //
                            -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0.3, -0.5, 0.1, -1e9,  //
                            0,         0,         -1e9,      -1e9,                             //
                            -1e9,      0,         0,         0,                                //
                            0.2,       0,         0,         -0.7},
                           {2, 3, 4}, kFloat64);
  return {
      {"none", {}, {}},
      {"lens 1-D", lens({1, 0}), {}},
      {"lens 2-D", lens({1, 0, 4, 2, 3, 0}, {2, 3}), {}},
      {"bool",
       {},
       bools({1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0,  //
              1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0},
             {2, 3, 4})},
      {"additive", {}, additive},
      {"causal", {}, nn::causal_mask(3, 4)},
  };
}

// gradcheck of module(q, k, v, mask) w.r.t. q, k, v and every parameter
// (`slots` must list the module's parameters in named_parameters() order).
template <typename M>
void check_module_gradients(M& module, const std::vector<Tensor*>& slots, int64_t query_size,
                            int64_t key_size, int64_t value_size) {
  module.to(kFloat64);
  module.eval();
  const auto named = module.named_parameters();
  ASSERT_EQ(named.size(), slots.size());
  for (size_t i = 0; i < slots.size(); ++i)
    ASSERT_TRUE(named[i].second.is_same(*slots[i])) << named[i].first;
  manual_seed(14);
  std::vector<Tensor> inputs{leaf64({2, 3, query_size}), leaf64({2, 4, key_size}),
                             leaf64({2, 4, value_size})};
  for (Tensor* slot : slots) inputs.push_back(*slot);
  for (const MaskKind& kind : mask_kinds()) {
    for (nn::MaskedRows rows : {nn::MaskedRows::Uniform, nn::MaskedRows::Zero}) {
      auto fn = [&](const std::vector<Tensor>& in) {
        for (size_t i = 0; i < slots.size(); ++i) *slots[i] = in[3 + i];
        return module(in[0], in[1], in[2], kind.valid_lens, kind.attn_mask);
      };
      module.masked_rows = rows;
      EXPECT_TRUE(grad_ok(fn, inputs))
          << module.type_name() << ", mask " << kind.name
          << (rows == nn::MaskedRows::Zero ? ", zero rows" : ", uniform rows");
    }
  }
}

TEST(AttentionGradcheckTest, DotProductAttention) {
  nn::DotProductAttention attention(0.2);
  check_module_gradients(attention, {}, 3, 3, 2);
}

TEST(AttentionGradcheckTest, AdditiveAttention) {
  nn::AdditiveAttention attention(/*key_size=*/2, /*query_size=*/3, /*num_hiddens=*/4, 0.2);
  check_module_gradients(
      attention, {&attention.W_k.weight, &attention.W_q.weight, &attention.w_v.weight}, 3, 2, 2);
}

TEST(AttentionGradcheckTest, MultiHeadAttention) {
  for (bool bias : {false, true}) {
    nn::MultiHeadAttention attention(3, 2, 2, 4, 2, 0.2, bias);
    std::vector<Tensor*> slots;
    for (nn::Linear* linear : {&attention.W_q, &attention.W_k, &attention.W_v, &attention.W_o}) {
      slots.push_back(&linear->weight);
      if (bias) slots.push_back(&linear->bias);
    }
    check_module_gradients(attention, slots, 2, 3, 2);
  }
}

TEST(AttentionGradcheckTest, ScaledDotProductAttention) {
  manual_seed(15);
  std::vector<Tensor> inputs{leaf64({2, 3, 3}), leaf64({2, 4, 3}), leaf64({2, 4, 2})};
  for (const MaskKind& kind : mask_kinds()) {
    if (kind.valid_lens.defined()) continue;  // sdpa takes masks, not lengths
    EXPECT_TRUE(grad_ok(
        [&](const std::vector<Tensor>& in) {
          return F::scaled_dot_product_attention(in[0], in[1], in[2], kind.attn_mask);
        },
        inputs))
        << kind.name;
  }
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0, true, 0.7);
      },
      inputs))
      << "is_causal, scale";
  // Leading dims broadcast: [2, 2, 3, 3] queries against [4, 3] keys.
  std::vector<Tensor> broadcast{leaf64({2, 2, 3, 3}), leaf64({4, 3}), leaf64({2, 1, 4, 2})};
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return F::scaled_dot_product_attention(in[0], in[1], in[2], nn::causal_mask(3, 4));
      },
      broadcast))
      << "broadcast";
}

// ---- bad input -------------------------------------------------------------------------------

TEST(AttentionErrorsTest, DotProductAttention) {
  nn::DotProductAttention attention;
  Tensor q = rand({2, 1, 20}), k = rand({2, 10, 2}), v = rand({2, 10, 4});
  EXPECT_TRUE(throws_error([&] { attention(q, k, v); },
                           {"DotProductAttention", "[2, 1, 20]", "[2, 10, 2]", "feature size"}));
  Tensor q2 = rand({2, 1, 2});
  EXPECT_TRUE(throws_error(
      [&] {
        attention(rand({3, 1, 2}), k, v);
      },
      {"DotProductAttention", "batch sizes differ", "[3, 1, 2]", "[2, 10, 2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q2, k, rand({2, 9, 4}));
      },
      {"DotProductAttention", "[2, 10, 2]", "[2, 9, 4]", "length"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(rand({1, 2}), k, v);
      },
      {"DotProductAttention", "3-D", "[1, 2]"}));
  EXPECT_TRUE(throws_error([&] { attention(q2, k.to(kFloat64), v); },
                           {"DotProductAttention", "float32", "float64"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q2, k, v, tensor({2, 6}));
      },
      {"DotProductAttention", "valid_lens", "int64", "float32"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q2, k, v, lens({2, 6, 1}));
      },
      {"DotProductAttention", "valid_lens", "[3]", "[2, 1, 10]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q2, k, v, lens({2, 11}));
      },
      {"DotProductAttention", "11", "[0, 10]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q2, k, v, lens({-2, 1}));
      },
      {"DotProductAttention", "-2", "[0, 10]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q2, k, v, {}, bools({1, 0}, {1, 2}));
      },
      {"DotProductAttention", "mask", "[1, 2]", "[2, 1, 10]"}));
  EXPECT_TRUE(throws_error([&] { attention(q2, k, v, {}, ones({10}, kFloat64)); },
                           {"DotProductAttention", "mask", "float64", "float32"}));
}

TEST(AttentionErrorsTest, AdditiveAttention) {
  nn::AdditiveAttention attention(2, 20, 8);
  Tensor q = rand({2, 1, 20}), k = rand({2, 10, 2}), v = rand({2, 10, 4});
  EXPECT_NO_THROW(attention(q, k, v));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(rand({2, 1, 3}), k, v);
      },
      {"AdditiveAttention", "queries", "[2, 1, 3]", "query_size is 20"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q, rand({2, 10, 3}), v);
      },
      {"AdditiveAttention", "keys", "[2, 10, 3]", "key_size is 2"}));
  EXPECT_TRUE(throws_error([&] { attention(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64)); },
                           {"AdditiveAttention", "float64", "parameters are float32"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q, k, v, lens({1, 2, 3, 4}, {2, 2}));
      },
      {"AdditiveAttention", "valid_lens", "[2, 2]", "[2, 1]"}));
}

TEST(AttentionErrorsTest, MultiHeadAttention) {
  EXPECT_TRUE(throws_error([] { nn::MultiHeadAttention(4, 4, 4, 10, 3, 0); },
                           {"MultiHeadAttention", "num_hiddens 10", "num_heads 3"}));
  nn::MultiHeadAttention attention(5, 4, 3, 8, 2, 0);
  Tensor q = rand({2, 3, 4}), k = rand({2, 5, 5}), v = rand({2, 5, 3});
  EXPECT_NO_THROW(attention(q, k, v));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q, k, rand({2, 5, 4}));
      },
      {"MultiHeadAttention", "values", "[2, 5, 4]", "value_size is 3"}));
  // Errors speak of this module's shapes, not of the heads folded into the batch.
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q, k, v, lens({1, 2, 3}));
      },
      {"MultiHeadAttention", "valid_lens", "[3]", "[2, 3, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q, k, v, lens({1, 6}));
      },
      {"MultiHeadAttention", "6", "[0, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q, k, v, {}, bools({1, 1, 1}, {3, 1, 1}));
      },
      {"MultiHeadAttention", "mask", "[3, 1, 1]", "[2, 3, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        attention(q, k, v, {}, bools({1, 1, 1}, {1, 3, 1, 1}));
      },
      {"MultiHeadAttention", "mask", "[1, 3, 1, 1]", "[2, 2, 3, 5]"}));
}

TEST(AttentionErrorsTest, ScaledDotProductAttention) {
  Tensor q = rand({2, 3, 4}), k = rand({2, 5, 4}), v = rand({2, 5, 2});
  const char* op = "scaled_dot_product_attention";
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, rand({2, 5, 3}), v);
      },
      {op, "[2, 3, 4]", "[2, 5, 3]", "feature size"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, k, rand({2, 4, 2}));
      },
      {op, "[2, 5, 4]", "[2, 4, 2]", "length"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, rand({3, 5, 4}), rand({3, 5, 2}));
      },
      {op, "[2]", "[3]", "broadcast"}));
  EXPECT_TRUE(
      throws_error([&] { F::scaled_dot_product_attention(rand({4}), k, v); }, {op, "rank >= 2"}));
  EXPECT_TRUE(
      throws_error([&] { F::scaled_dot_product_attention(q, k, v, {}, 1.0); }, {op, "dropout_p"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({3, 4}));
      },
      {op, "mask", "[3, 4]", "[2, 3, 5]"}));
  EXPECT_TRUE(throws_error([&] { F::scaled_dot_product_attention(q, k, v, lens({1})); },
                           {op, "mask", "int64"}));
  EXPECT_TRUE(throws_error([&] { F::scaled_dot_product_attention(q, k.to(kFloat64), v); },
                           {op, "float64"}));
}

}  // namespace
}  // namespace ag
