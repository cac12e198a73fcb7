// The scoring functions (nn/scoring.h) one by one: a float64 gradcheck of
// each through its inputs and every parameter; the same numbers as the d2l
// modules they stand for (AdditiveAttention, DotProductAttention,
// MultiHeadAttention, themselves checked against d2l's PyTorch code in
// test_nn_parity.cpp); general against its formula; the keys remembered
// once giving the same context as remembering them on every call; the
// table (names, registering one's own, refusals). The seq2seq models with
// each of them are checked against PyTorch in test_seq2seq.cpp.
#include <cmath>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// Queries 3 wide, keys 4 wide: every scoring function but dot takes them.
const nn::ScoringSizes kMixed{.query_size = 3, .key_size = 4, .num_hiddens = 4, .num_heads = 2};
const nn::ScoringSizes kSquare{.query_size = 4, .key_size = 4, .num_hiddens = 4, .num_heads = 2};

// dot and Keras' scores take queries and keys of one width only.
nn::ScoringSizes sizes_for(const std::string& name) {
  return name == "dot" || name.starts_with("keras_") ? kSquare : kMixed;
}

const char* const kLibrary[] = {"additive",       "dot",       "general",      "multihead",
                                "general_scaled", "keras_dot", "keras_concat", "keras_additive"};

TEST(ScoringTest, TableListsTheLibrarysFunctionsFirst) {
  const auto& table = nn::scoring_functions();
  ASSERT_GE(table.size(), std::size(kLibrary));
  for (size_t i = 0; i < std::size(kLibrary); ++i) {
    EXPECT_EQ(table[i].name, kLibrary[i]);
    EXPECT_FALSE(table[i].summary.empty());
  }
  EXPECT_EQ(nn::scoring_function_names().rfind(
                "additive, dot, general, multihead, general_scaled, keras_dot, keras_concat, "
                "keras_additive",
                0),
            0u);
}

// Every scoring function, float64: d context / d (queries, keys, values,
// every parameter) against finite differences, with valid lengths 3 and 1
// (masked keys get no weight), two queries per item.
TEST(ScoringTest, GradcheckEveryFunction) {
  for (const char* name : kLibrary) {
    SCOPED_TRACE(name);
    manual_seed(5);
    const nn::ScoringSizes sizes = sizes_for(name);
    auto attention = nn::make_scoring_function(name, sizes);
    attention->to(kFloat64);
    const Tensor lens = testing::lens({3, 1});
    std::vector<Tensor*> slots;
    for (const auto& [parameter, value] : attention->named_parameters())
      slots.push_back(&attention->parameter(parameter));
    std::vector<Tensor> inputs{leaf64({2, 2, sizes.query_size}), leaf64({2, 3, sizes.key_size}),
                               leaf64({2, 3, sizes.key_size})};
    for (Tensor* slot : slots) inputs.push_back(*slot);
    auto fn = [&](const std::vector<Tensor>& in) {
      for (size_t i = 0; i < slots.size(); ++i) *slots[i] = in[i + 3];
      const nn::AttentionMemory memory = attention->remember(in[1], in[2]);
      return attention->attend(in[0], memory, lens);
    };
    EXPECT_TRUE(grad_ok(fn, inputs));
  }
}

// The weights sum to one over the valid keys and are 0 on the others; the
// context has the width context_size() says.
TEST(ScoringTest, WeightsAndContextShapes) {
  for (const char* name : kLibrary) {
    SCOPED_TRACE(name);
    const nn::ScoringSizes sizes = sizes_for(name);
    auto attention = nn::make_scoring_function(name, sizes);
    const Tensor q = uniform({2, 5, sizes.query_size}, -1, 1);
    const Tensor k = uniform({2, 6, sizes.key_size}, -1, 1);
    const Tensor context = attention->attend(q, attention->remember(k, k), testing::lens({6, 2}));
    EXPECT_EQ(context.shape(), (Shape{2, 5, attention->context_size()}));
    const Tensor w = attention->attention_weights();
    ASSERT_EQ(w.shape(), (Shape{2, 5, 6}));
    EXPECT_TRUE(all_close(sum(w, 2), ones({2, 5}), 1e-6, 0));
    EXPECT_TRUE(all_close(narrow(narrow(w, 0, 1, 1), 2, 2, 4), zeros({1, 5, 4}), 0, 0));
  }
}

// additive and dot compute what d2l's AdditiveAttention and
// DotProductAttention do with the same parameters.
TEST(ScoringTest, AdditiveAndDotAreD2lsModules) {
  manual_seed(2);
  const Tensor q = uniform({2, 3, 4}, -1, 1), k = uniform({2, 5, 4}, -1, 1);
  const Tensor v = uniform({2, 5, 4}, -1, 1), lens = testing::lens({5, 2});
  nn::AdditiveAttention d2l_additive(4, 4, 4);
  auto additive = nn::make_scoring_function("additive", kSquare);
  additive->load_state_dict(d2l_additive.state_dict());
  EXPECT_TRUE(all_close(additive->attend(q, additive->remember(k, v), lens),
                        d2l_additive(q, k, v, lens), 1e-6, 1e-6));
  nn::DotProductAttention d2l_dot;
  auto dot = nn::make_scoring_function("dot", kSquare);
  EXPECT_TRUE(
      all_close(dot->attend(q, dot->remember(k, v), lens), d2l_dot(q, k, v, lens), 1e-6, 1e-6));
}

// multihead is d2l's MultiHeadAttention (bias = false), keys and values of
// one width; its weights are the mean of the heads'.
TEST(ScoringTest, MultiheadIsD2lsMultiHeadAttention) {
  manual_seed(4);
  nn::MultiHeadAttention d2l_multihead(4, 3, 4, 4, 2);
  auto multihead = nn::make_scoring_function("multihead", kMixed);
  multihead->load_state_dict(d2l_multihead.state_dict());
  const Tensor q = uniform({2, 3, 3}, -1, 1), k = uniform({2, 5, 4}, -1, 1);
  const Tensor lens = testing::lens({4, 5});
  EXPECT_TRUE(all_close(multihead->attend(q, multihead->remember(k, k), lens),
                        d2l_multihead(q, k, k, lens), 1e-6, 1e-6));
  EXPECT_TRUE(all_close(multihead->attention_weights(), mean(d2l_multihead.attention_weights(), 1),
                        1e-6, 1e-6));
}

// general: scores q^T W_a k, W_a.weight [query width, key width].
TEST(ScoringTest, GeneralIsQTransposeWaK) {
  manual_seed(6);
  auto general = nn::make_scoring_function("general", kMixed);
  general->to(kFloat64);
  const Tensor& W_a = general->parameter("W_a.weight");
  ASSERT_EQ(W_a.shape(), (Shape{3, 4}));
  const Tensor q = leaf64({1, 2, 3}), k = leaf64({1, 4, 4});
  general->attend(q, general->remember(k, k));
  // scores_ij = q_i . (W_a k_j): [1, 2, 3] @ ([3, 4] @ [4, 4]^T) -> [1, 2, 4]
  const Tensor scores = matmul(q, matmul(W_a, transpose(squeeze(k, 0), 0, 1)));
  EXPECT_TRUE(all_close(general->attention_weights(), softmax(scores, -1), 1e-12, 0));
}

// general_scaled: general's q^T W_a k over sqrt(k), k the keys' width (4),
// with the same W_a: worked by hand for one query and two keys, then against
// general's scores for random ones.
TEST(ScoringTest, GeneralScaledIsGeneralOverSqrtK) {
  auto scaled = nn::make_scoring_function("general_scaled", kMixed);
  scaled->to(kFloat64);
  EXPECT_EQ(scaled->type_name(), "ScaledGeneralScoring");
  // W_a = [[1, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0]]: q^T W_a k = q.k[:3] + 2 q_0 k_3
  scaled->load_state_dict(
      {{"W_a.weight", tensor({1, 0, 0, 2, 0, 1, 0, 0, 0, 0, 1, 0}, {3, 4}, kFloat64)}});
  const Tensor q = tensor({1, 2, 3}, {1, 1, 3}, kFloat64);
  const Tensor k = tensor({1, 0, 0, 1, 0, 1, 1, 0}, {1, 2, 4}, kFloat64);
  scaled->attend(q, scaled->remember(k, k));
  // scores: (1 + 2) / 2 = 1.5 and (2 + 3) / 2 = 2.5; softmax: 1 / (1 + e), e / (1 + e)
  const double e = std::exp(1.0);
  EXPECT_TRUE(all_close(scaled->attention_weights(), {1 / (1 + e), e / (1 + e)}, 1e-15, 0));
  manual_seed(6);
  auto general = nn::make_scoring_function("general", kMixed);
  general->to(kFloat64);
  scaled->load_state_dict(general->state_dict());
  const Tensor q2 = leaf64({1, 2, 3}), k2 = leaf64({1, 4, 4});
  general->attend(q2 * 0.5, general->remember(k2, k2));  // 1/sqrt(4) on general's queries
  scaled->attend(q2, scaled->remember(k2, k2));
  EXPECT_TRUE(all_close(scaled->attention_weights(), general->attention_weights(), 1e-15, 0));
  EXPECT_TRUE(throws_error([] { nn::make_scoring_function("general_scaled", {.query_size = 3}); },
                           {"ScaledGeneralScoring", "key width", "0"}));
}

// Keras' three scores, float64, against loops over i, j and d with the
// function's own parameters (set to values other than their first ones):
//   keras_dot       s q_i . k_j
//   keras_concat    c sum_d tanh(q_id + k_jd)
//   keras_additive  sum_d s_d tanh(q_id + k_jd)
TEST(ScoringTest, KerasScoresAreTheirFormulas) {
  manual_seed(8);
  const Tensor q = leaf64({2, 3, 4}), k = leaf64({2, 5, 4});
  const std::vector<double> qs = q.to_vector(), ks = k.to_vector();
  const std::vector<double> s_d = {0.5, -1.0, 2.0, 0.25};
  for (const char* name : {"keras_dot", "keras_concat", "keras_additive"}) {
    SCOPED_TRACE(name);
    auto attention = nn::make_scoring_function(name, kSquare);
    attention->to(kFloat64);
    const std::string function = name;
    if (function == "keras_dot") attention->parameter("scale") = scalar_tensor(1.5, kFloat64);
    if (function == "keras_concat")
      attention->parameter("concat_score_weight") = scalar_tensor(-0.75, kFloat64);
    if (function == "keras_additive") attention->parameter("scale") = tensor(s_d, {4}, kFloat64);
    std::vector<double> expected;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          double score = 0;
          for (int64_t d = 0; d < 4; ++d) {
            const double qd = qs[(b * 3 + i) * 4 + d], kd = ks[(b * 5 + j) * 4 + d];
            score += function == "keras_dot"      ? 1.5 * qd * kd
                     : function == "keras_concat" ? -0.75 * std::tanh(qd + kd)
                                                  : s_d[d] * std::tanh(qd + kd);
          }
          expected.push_back(score);
        }
    const Tensor scores = attention->scores(q, attention->remember(k, k));
    EXPECT_TRUE(all_close(scores, tensor(expected, {2, 3, 5}, kFloat64), 1e-12, 1e-12));
  }
  EXPECT_TRUE(throws_error([] { nn::make_scoring_function("keras_additive", kMixed); },
                           {"KerasAdditiveScoring", "one width", "3", "4"}));
}

// Keras' layers are the faces of the table's keras_dot, keras_concat and
// keras_additive: the same parameters under the same names, the same
// outputs and weights.
TEST(ScoringTest, KerasLayersAreFacesOfTheTablesFunctions) {
  manual_seed(9);
  const Tensor q = uniform({2, 3, 4}, -1, 1), k = uniform({2, 5, 4}, -1, 1);
  const Tensor v = uniform({2, 5, 6}, -1, 1);
  nn::keras::Attention dot(/*use_scale=*/true), concat(false, "concat");
  nn::keras::AdditiveAttention additive(4);
  const std::pair<const char*, nn::keras::BaseAttention*> faces[] = {
      {"keras_dot", &dot}, {"keras_concat", &concat}, {"keras_additive", &additive}};
  for (const auto& [name, layer] : faces) {
    SCOPED_TRACE(name);
    auto attention = nn::make_scoring_function(name, kSquare);
    ASSERT_EQ(attention->state_dict().size(), layer->state_dict().size());
    attention->load_state_dict(layer->state_dict());
    const Tensor context = attention->attend(q, attention->remember(k, v));
    EXPECT_TRUE(all_close(context, (*layer)(q, v, k), 0, 0));
    EXPECT_TRUE(all_close(attention->attention_weights(), layer->attention_weights(), 0, 0));
  }
}

// remember() once and attend() many times (the decoder's steps) gives what
// remembering the keys for every call gives.
TEST(ScoringTest, RememberingOnceEqualsEveryCall) {
  for (const char* name : kLibrary) {
    SCOPED_TRACE(name);
    const nn::ScoringSizes sizes = sizes_for(name);
    auto attention = nn::make_scoring_function(name, sizes);
    const Tensor k = uniform({2, 4, sizes.key_size}, -1, 1);
    const nn::AttentionMemory memory = attention->remember(k, k);
    for (int step = 0; step < 3; ++step) {
      const Tensor q = uniform({2, 1, sizes.query_size}, -1, 1);
      EXPECT_TRUE(all_close(attention->attend(q, memory),
                            attention->attend(q, attention->remember(k, k)), 0, 0));
    }
  }
}

// A program's own scoring function: registered at run time, built by name,
// used by the seq2seq model like the library's.
class NegativeDistanceScoring : public nn::ScoringFunction {
 public:
  explicit NegativeDistanceScoring(const nn::ScoringSizes& sizes)
      : ScoringFunction("NegativeDistanceScoring", sizes) {}

 protected:
  // scores_ij = -|q_i - k_j|^2 = 2 q.k - |q|^2 - |k|^2: [B, Tq, Tk]
  Tensor score(const Tensor& queries, const Tensor& keys) override {
    const Tensor qk = bmm(queries, transpose(keys, 1, 2));
    return qk * 2.0 - sum(queries * queries, 2, true) - transpose(sum(keys * keys, 2, true), 1, 2);
  }
};

TEST(ScoringTest, RegisterOnesOwn) {
  nn::register_scoring_function({"test-negative-distance", "-|q - k|^2", [](const auto& sizes) {
                                   return std::make_unique<NegativeDistanceScoring>(sizes);
                                 }});
  EXPECT_NE(nn::scoring_function_names().find("test-negative-distance"), std::string::npos);
  auto net = nn::make_bahdanau_seq2seq(7, 8, 4, 4, 1, 0.0, "test-negative-distance");
  const Tensor src = tensor({4, 5, 6, 2}, {1, 4}, kInt64);
  const Tensor logits = (*net)(src, tensor({1, 4}, {1, 2}, kInt64), testing::lens({4}));
  EXPECT_EQ(logits.shape(), (Shape{1, 2, 8}));
  // Taken names and odd ones are refused.
  const auto make = [](const nn::ScoringSizes& sizes) {
    return std::make_unique<NegativeDistanceScoring>(sizes);
  };
  EXPECT_TRUE(throws_error(
      [&] {
        nn::register_scoring_function({"additive", "again", make});
      },
      {"register_scoring_function", "'additive' is taken"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::register_scoring_function({"Has Space", "", make});
      },
      {"register_scoring_function", "lower-case word", "'Has Space'"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::register_scoring_function({"nofactory", "", nullptr});
      },
      {"register_scoring_function", "no factory"}));
}

TEST(ScoringTest, BadInputThrows) {
  EXPECT_TRUE(throws_error([] { nn::make_scoring_function("cosine", kMixed); },
                           {"unknown scoring function 'cosine'", "additive, dot"}));
  EXPECT_TRUE(throws_error([] { nn::make_scoring_function("dot", kMixed); },
                           {"DotScoring", "queries have 3 features", "keys 4", "general"}));
  EXPECT_TRUE(throws_error(
      [] {
        nn::make_scoring_function(
            "multihead", {.query_size = 3, .key_size = 4, .num_hiddens = 5, .num_heads = 2});
      },
      {"MultiHeadScoring", "num_hiddens 5", "num_heads 2"}));
  EXPECT_TRUE(throws_error([] { nn::make_scoring_function("additive", {.query_size = 0}); },
                           {"AdditiveScoring", "query_size 0"}));
  auto general = nn::make_scoring_function("general", kMixed);
  const Tensor k = uniform({2, 5, 4}, -1, 1);
  // keys of the wrong width
  EXPECT_TRUE(throws_error(
      [&] {
        general->remember(uniform({2, 5, 3}, -1, 1), k);
      },
      {"GeneralScoring", "[2, 5, 3]", "key_size is 4"}));
  // queries of the wrong width, or of another batch
  const nn::AttentionMemory memory = general->remember(k, k);
  EXPECT_TRUE(throws_error(
      [&] {
        general->attend(uniform({2, 1, 4}, -1, 1), memory);
      },
      {"GeneralScoring", "[2, 1, 4]", "query_size is 3"}));
  EXPECT_TRUE(throws_error(
      [&] {
        general->attend(uniform({3, 1, 3}, -1, 1), memory);
      },
      {"GeneralScoring", "differ in batch size"}));
  // lengths beyond the keys
  EXPECT_TRUE(throws_error(
      [&] {
        general->attend(uniform({2, 1, 3}, -1, 1), memory, testing::lens({6, 1}));
      },
      {"GeneralScoring", "valid"}));
  // a masked row gives uniform weights, never NaN
  const Tensor context = general->attend(uniform({2, 1, 3}, -1, 1), memory, testing::lens({0, 5}));
  EXPECT_FALSE(testing::has_nan(context));
  EXPECT_TRUE(
      all_close(narrow(general->attention_weights(), 0, 0, 1), full({1, 1, 5}, 0.2), 1e-6, 0));
}

}  // namespace
}  // namespace ag
