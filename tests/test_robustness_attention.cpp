// Dropout and the attention modules at their edges (issue 29): p at 0 and
// next to its bound, NaN and out-of-range p, empty and mismatched inputs,
// heads that do not divide the size, absurd scales, no features at all.
#include <cmath>
#include <limits>
#include <type_traits>

#include "test_util.h"

namespace ag {
namespace {

using testing::lens;
using testing::throws_error;

// The largest double below 1: dropout keeps 1 element in 2^53, times 2^53.
constexpr double kJustBelowOne = 1.0 - 0x1p-53;

TEST(RobustnessAttentionTest, DropoutPAtZeroIsExactlyTheIdentity) {
  manual_seed(3);
  const Tensor x = randn({4, 5}).requires_grad_();
  const Tensor y = dropout(x, 0.0, true);
  EXPECT_EQ(y.to_vector(), x.to_vector());
  sum(y * 3.0).backward();
  EXPECT_EQ(x.grad().to_vector(), std::vector<double>(20, 3.0));
  // Modules built with dropout 0 give, in training, their eval numbers.
  const Tensor q = randn({2, 3, 8}), k = randn({2, 4, 8}), v = randn({2, 4, 8});
  nn::DotProductAttention dot(0.0);
  nn::AdditiveAttention additive(8, 8, 6, 0.0);
  nn::MultiHeadAttention mha(8, 8, 8, 8, 2, 0.0);
  for (nn::Module* m : std::vector<nn::Module*>{&dot, &additive, &mha}) {
    const auto run = [&] {
      if (m == &dot) return dot(q, k, v, lens({2, 3}));
      if (m == &additive) return additive(q, k, v, lens({2, 3}));
      return mha(q, k, v, lens({2, 3}));
    };
    m->train();
    const std::vector<double> training = run().to_vector();
    m->eval();
    EXPECT_EQ(training, run().to_vector()) << m->type_name();
  }
}

TEST(RobustnessAttentionTest, DropoutPNextToItsBoundStaysFinite) {
  manual_seed(4);
  const Tensor x = ones({1000}, kFloat64).requires_grad_();
  const Tensor y = dropout(x, kJustBelowOne, true);
  for (const double value : y.to_vector()) EXPECT_TRUE(value == 0.0 || value == 0x1p53) << value;
  sum(y).backward();
  for (const double g : x.grad().to_vector()) EXPECT_TRUE(g == 0.0 || g == 0x1p53) << g;
  // In eval mode the same p is the identity.
  EXPECT_EQ(dropout(x, kJustBelowOne, false).to_vector(), x.to_vector());
  nn::Dropout module(kJustBelowOne);
  module.eval();
  EXPECT_EQ(module(x).to_vector(), x.to_vector());
  // Attention weights dropped at that rate: a finite output.
  nn::DotProductAttention attention(0.999);
  const Tensor out = attention(randn({1, 4, 3}), randn({1, 5, 3}), randn({1, 5, 2}));
  EXPECT_FALSE(testing::has_nan(out));
}

TEST(RobustnessAttentionTest, DropoutPOutsideZeroToOneIsRefusedEverywhere) {
  const Tensor q = ones({1, 2, 4}), k = ones({1, 3, 4}), v = ones({1, 3, 4});
  for (const double bad : std::vector<double>{1.0, 1.5, -0.1, -1e-300, NAN, INFINITY}) {
    EXPECT_TRUE(throws_error([&] { dropout(q, bad, true); }, {"dropout", "[0, 1)"})) << bad;
    EXPECT_TRUE(throws_error([&] { nn::Dropout d(bad); }, {"Dropout", "[0, 1)"})) << bad;
    EXPECT_TRUE(throws_error([&] { nn::DotProductAttention a(bad); }, {"Dropout"})) << bad;
    EXPECT_TRUE(throws_error([&] { nn::AdditiveAttention a(4, 4, 3, bad); }, {"Dropout"})) << bad;
    EXPECT_TRUE(throws_error([&] { nn::MultiHeadAttention a(4, 4, 4, 4, 2, bad); }, {"Dropout"}))
        << bad;
    EXPECT_TRUE(
        throws_error([&] { nn::functional::scaled_dot_product_attention(q, k, v, Tensor(), bad); },
                     {"scaled_dot_product_attention", "dropout_p"}))
        << bad;
  }
  // p is checked even where it has no effect (eval mode), as in PyTorch.
  EXPECT_TRUE(throws_error([&] { dropout(q, 2.0, false); }, {"dropout", "2"}));
}

TEST(RobustnessAttentionTest, EmptyInputsWithDropoutInTraining) {
  manual_seed(5);
  EXPECT_EQ(dropout(zeros({0, 3}), 0.5, true).shape(), (Shape{0, 3}));
  nn::DotProductAttention dot(0.5);
  nn::MultiHeadAttention mha(4, 4, 4, 4, 2, 0.5);
  nn::AdditiveAttention additive(4, 4, 3, 0.5);
  const Tensor no_queries = zeros({2, 0, 4}), keys = ones({2, 3, 4});
  EXPECT_EQ(dot(no_queries, keys, keys).shape(), (Shape{2, 0, 4}));
  EXPECT_EQ(mha(no_queries, keys, keys).shape(), (Shape{2, 0, 4}));
  EXPECT_EQ(additive(no_queries, keys, keys).shape(), (Shape{2, 0, 4}));
  // No batch at all.
  const Tensor none = zeros({0, 2, 4});
  EXPECT_EQ(dot(none, zeros({0, 3, 4}), zeros({0, 3, 4})).shape(), (Shape{0, 2, 4}));
  EXPECT_EQ(mha(none, zeros({0, 3, 4}), zeros({0, 3, 4})).shape(), (Shape{0, 2, 4}));
}

TEST(RobustnessAttentionTest, NoFeaturesGiveUniformWeightsOnEveryPath) {
  // E = 0: every score is an empty sum, 0, so every key weighs the same (the
  // default scale 1/sqrt(0) is inf, and inf * 0 must not become NaN). The
  // streaming path used to return 0 where the composed one returns the mean.
  const Tensor q = zeros({1, 2, 0}), k = zeros({1, 3, 0});
  const Tensor v = tensor({1, 2, 3, 4, 5, 6}, {1, 3, 2});
  const std::vector<double> mean = {3, 4, 3, 4};
  namespace F = nn::functional;
  EXPECT_EQ(F::scaled_dot_product_attention(q, k, v).to_vector(), mean);
  EXPECT_EQ(F::scaled_dot_product_attention_with_weights(q, k, v).output.to_vector(), mean);
  EXPECT_EQ(flash_attention(q, k, v, INFINITY).to_vector(), mean);
  nn::DotProductAttention attention;
  EXPECT_EQ(attention(q, k, v).to_vector(), mean);
  attention.need_weights = false;
  EXPECT_EQ(attention(q, k, v).to_vector(), mean);
}

TEST(RobustnessAttentionTest, NonFiniteScalesAreRefused) {
  const Tensor q = randn({1, 2, 4}), k = randn({1, 3, 4}), v = randn({1, 3, 4});
  namespace F = nn::functional;
  for (const double bad : std::vector<double>{INFINITY, -INFINITY}) {
    EXPECT_TRUE(throws_error([&] { F::scaled_dot_product_attention(q, k, v, {}, 0, false, bad); },
                             {"scaled_dot_product_attention", "scale", number_str(bad)}));
    EXPECT_TRUE(throws_error(
        [&] { F::scaled_dot_product_attention_with_weights(q, k, v, {}, 0, false, bad); },
        {"scaled_dot_product_attention", "scale"}));
  }
  for (const double bad : std::vector<double>{INFINITY, NAN})
    EXPECT_TRUE(throws_error([&] { flash_attention(q, k, v, bad); },
                             {"flash_attention", "scale must be finite", number_str(bad)}));
  // NaN is scaled_dot_product_attention's documented default, 1/sqrt(E);
  // 0 and negative scales are legal (uniform and reversed weights).
  const Tensor by_default = F::scaled_dot_product_attention(q, k, v);
  EXPECT_TRUE(testing::all_close(F::scaled_dot_product_attention(q, k, v, {}, 0, false, NAN),
                                 by_default, 0, 0));
  const Tensor uniform = F::scaled_dot_product_attention(q, k, v, {}, 0, false, 0.0);
  EXPECT_TRUE(testing::all_close(uniform, expand(mean(v, 1, true), {1, 2, 4}), 1e-6));
  EXPECT_FALSE(testing::has_nan(F::scaled_dot_product_attention(q, k, v, {}, 0, false, -1e3)));
}

TEST(RobustnessAttentionTest, HeadsThatDoNotDivideTheSize) {
  for (const auto& [size, head_count] :
       std::vector<std::pair<int64_t, int64_t>>{{6, 4}, {8, 0}, {8, -2}, {0, 1}, {3, 6}}) {
    // A lambda captures variables, not bindings (Clang 14).
    const int64_t hiddens = size, heads = head_count;
    EXPECT_TRUE(
        throws_error([&] { nn::MultiHeadAttention(4, 4, 4, hiddens, heads); },
                     {"MultiHeadAttention", std::to_string(hiddens), std::to_string(heads)}))
        << hiddens << " / " << heads;
  }
  // num_heads is fixed when the module is built (its scoring function's heads):
  // it cannot be changed after construction.
  static_assert(std::is_const_v<decltype(nn::MultiHeadAttention::num_heads)>);
  EXPECT_TRUE(throws_error([] { nn::transpose_qkv(ones({1, 3, 4}), 3); }, {"transpose_qkv", "3"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::transpose_output(ones({3, 2, 4}), 2);
      },
      {"transpose_output", "[3, 2, 4]"}));
}

TEST(RobustnessAttentionTest, MismatchedInputsNameTheModuleAndShapes) {
  nn::DotProductAttention dot;
  nn::AdditiveAttention additive(4, 4, 3);
  nn::MultiHeadAttention mha(4, 4, 4, 4, 2);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&,
                                                                const Tensor&, const Tensor&)>>>
      modules = {
          {"DotProductAttention",
           [&](auto& q, auto& k, auto& v, auto& l) { return dot(q, k, v, l); }},
          {"AdditiveAttention",
           [&](auto& q, auto& k, auto& v, auto& l) { return additive(q, k, v, l); }},
          {"MultiHeadAttention",
           [&](auto& q, auto& k, auto& v, auto& l) { return mha(q, k, v, l); }},
      };
  const Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 4});
  for (const auto& [name, module_call] : modules) {
    const auto& call = module_call;  // a lambda captures a variable, not a binding (Clang 14)
    EXPECT_TRUE(throws_error(
        [&] {
          call(q, ones({3, 5, 4}), ones({3, 5, 4}), {});
        },
        {name, "[3, 5, 4]"}));
    EXPECT_TRUE(throws_error([&] { call(q, k, ones({2, 4, 4}), {}); }, {name, "[2, 4, 4]"}));
    EXPECT_TRUE(throws_error([&] { call(ones({3, 4}), k, v, {}); }, {name, "[3, 4]"}));
    EXPECT_TRUE(throws_error([&] { call(q, k, v, lens({1, 6})); }, {name, "6"}));
    EXPECT_TRUE(throws_error([&] { call(q, k, v, lens({-1, 2})); }, {name, "-1"}));
    EXPECT_TRUE(throws_error([&] { call(q, k, v, tensor({1, 2})); }, {name, "int64"}));
    EXPECT_TRUE(throws_error([&] { call(q, k, v, lens({1, 2, 3})); }, {name, "[3]"}));
    EXPECT_TRUE(throws_error([&] { call(q.to(kFloat64), k, v, {}); }, {name, "float64"}));
    EXPECT_TRUE(throws_error([&] { call(Tensor(), k, v, {}); }, {name}));
  }
}

}  // namespace
}  // namespace ag
