// Keras' Attention ("dot", "concat") and AdditiveAttention: parity with Keras'
// math written out in PyTorch float64 (tests/fixtures/keras_attention.npz from
// scripts/make_keras_optim_fixtures.py) in float64 and float32, gradcheck with
// every mask kind, fully masked rows, dropout, initialisation, bad inputs.
#include <cmath>
#include <functional>
#include <memory>

#include "test_util.h"

namespace ag {
namespace {

using nn::keras::AdditiveAttention;
using nn::keras::Attention;
using nn::keras::BaseAttention;
using testing::all_close;
using testing::throws_error;

constexpr int64_t kDim = 4;  // the fixtures' query/key/value width

Tensor keras_fixture(const std::string& name) {
  return testing::fixture_tensor("keras_attention.npz", name);
}

// A layer under test: "additive" (AdditiveAttention) or "dot"/"concat"
// (Attention with that score_mode), and a way to plug parameter tensors in
// (gradcheck hands fn fresh copies of its inputs).
struct Layer {
  std::unique_ptr<BaseAttention> module;
  std::function<void(const std::vector<Tensor>&)> set_parameters;  // in named_parameters() order
};

Layer make_layer(const std::string& kind, bool use_scale, double dropout = 0) {
  Layer layer;
  if (kind == "additive") {
    auto m = std::make_unique<AdditiveAttention>(kDim, use_scale, dropout);
    AdditiveAttention* a = m.get();
    layer.set_parameters = [a](const std::vector<Tensor>& p) {
      if (a->use_scale) a->scale = p.at(0);
    };
    layer.module = std::move(m);
  } else {
    auto m = std::make_unique<Attention>(use_scale, kind, dropout);
    Attention* a = m.get();
    layer.set_parameters = [a](const std::vector<Tensor>& p) {
      size_t i = 0;
      if (a->use_scale) a->scale = p.at(i++);
      if (a->score_mode == "concat") a->concat_score_weight = p.at(i++);
    };
    layer.module = std::move(m);
  }
  return layer;
}

// The fixture's parameter values ("<kind>_<name>"), converted to dtype.
Layer fixture_layer(const std::string& kind, bool use_scale, DType dtype) {
  Layer layer = make_layer(kind, use_scale);
  layer.module->to(dtype);  // first: load_state_dict converts to the parameters' dtype
  std::map<std::string, Tensor> state;
  for (const auto& [name, p] : layer.module->named_parameters())
    state[name] = keras_fixture(kind + "_" + name);
  layer.module->load_state_dict(state);
  return layer;
}

// ---- parity with the PyTorch fixtures -------------------------------------------------

struct Case {
  const char* name;
  bool key, query_mask, value_mask, causal, use_scale;
};
// The same table as KERAS_CASES in scripts/make_keras_optim_fixtures.py.
constexpr Case kCases[] = {
    {"plain", true, false, false, false, true},
    {"query_mask", true, true, false, false, true},
    {"value_mask", true, false, true, false, true},
    {"both_masks", true, true, true, false, true},
    {"causal", true, false, false, true, true},
    {"causal_value_mask", true, true, true, true, true},
    {"no_key", false, false, false, false, true},
    {"no_scale", true, true, true, false, false},
};
const char* const kKinds[] = {"additive", "dot", "concat"};

// Runs every case for every layer in `dtype`; `atol` for values, `grad_atol`
// for gradients (both also relative).
void check_parity(DType dtype, double atol, double grad_atol) {
  const Tensor g = keras_fixture("g").to(dtype);  // L = sum(output * g)
  for (const char* kind : kKinds) {
    for (const Case& c : kCases) {
      const std::string prefix = std::string(kind) + "_" + c.name + "_";
      SCOPED_TRACE(prefix + dtype_name(dtype));
      Layer layer = fixture_layer(kind, c.use_scale, dtype);
      Tensor q = keras_fixture("q").to(dtype).clone().requires_grad_();
      Tensor k = keras_fixture("k").to(dtype).clone().requires_grad_();
      Tensor v = keras_fixture("v").to(dtype).clone().requires_grad_();
      Tensor out = (*layer.module)(q, v, c.key ? k : Tensor(),
                                   c.query_mask ? keras_fixture("query_mask") : Tensor(),
                                   c.value_mask ? keras_fixture("value_mask") : Tensor(), c.causal);
      sum(out * g).backward();
      EXPECT_TRUE(all_close(out, keras_fixture(prefix + "out"), atol, atol));
      EXPECT_TRUE(all_close(layer.module->attention_weights(), keras_fixture(prefix + "weights"),
                            atol, atol));
      EXPECT_TRUE(all_close(q.grad(), keras_fixture(prefix + "dq"), grad_atol, grad_atol));
      EXPECT_TRUE(all_close(v.grad(), keras_fixture(prefix + "dv"), grad_atol, grad_atol));
      if (c.key) {
        EXPECT_TRUE(all_close(k.grad(), keras_fixture(prefix + "dk"), grad_atol, grad_atol));
      }
      for (const auto& [name, p] : layer.module->named_parameters())
        EXPECT_TRUE(all_close(p.grad(), keras_fixture(prefix + "d" + name), grad_atol, grad_atol))
            << name;
    }
  }
}

TEST(KerasParityTest, MatchesTheKerasMathInFloat64) {
  check_parity(kFloat64, 1e-12, 1e-11);
}

TEST(KerasParityTest, MatchesTheKerasMathInFloat32) {
  check_parity(kFloat32, 1e-5, 1e-4);
}

TEST(KerasParityTest, OutputIsZeroWhereTheQueryIsMaskedAndWeightsIgnoreTheQueryMask) {
  Layer layer = fixture_layer("additive", true, kFloat64);
  Tensor out = (*layer.module)(keras_fixture("q"), keras_fixture("v"), keras_fixture("k"),
                               keras_fixture("query_mask"));
  const std::vector<double> o = out.to_vector();
  for (int j = 0; j < kDim; ++j) {
    EXPECT_EQ(o[1 * kDim + j], 0.0);        // batch 0, query 1
    EXPECT_EQ(o[(3 + 2) * kDim + j], 0.0);  // batch 1, query 2
  }
  EXPECT_TRUE(
      all_close(layer.module->attention_weights(), keras_fixture("additive_plain_weights"), 1e-12));
}

// ---- gradcheck with every mask kind -----------------------------------------------------

struct Masks {
  const char* name;
  Tensor query_mask, value_mask;
  bool causal;
};

std::vector<Masks> every_mask_kind() {
  const Tensor qm = tensor({1, 0, 1, 1, 1, 0}, {2, 3}).to(kBool);
  const Tensor vm = tensor({1, 1, 1, 0, 1, 0, 1, 0}, {2, 4}).to(kBool);
  return {{"none", Tensor(), Tensor(), false},  {"query_mask", qm, Tensor(), false},
          {"value_mask", Tensor(), vm, false},  {"both", qm, vm, false},
          {"causal", Tensor(), Tensor(), true}, {"causal_and_masks", qm, vm, true}};
}

// Checks d out / d {query, key, value, parameters} of `kind` in float64.
void gradcheck_layer(const std::string& kind, bool use_scale, const Masks& m, bool with_key,
                     double eps = 1e-6, double atol = 1e-5) {
  SCOPED_TRACE(kind + " masks " + m.name + (with_key ? "" : " no key") +
               (use_scale ? "" : " no scale"));
  Layer layer = make_layer(kind, use_scale);
  layer.module->to(kFloat64);
  std::vector<Tensor> inputs = {testing::leaf64({2, 3, kDim}), testing::leaf64({2, 4, kDim}),
                                testing::leaf64({2, 4, kDim})};
  for (const Tensor& p : layer.module->parameters()) inputs.push_back(p);
  auto fn = [&](const std::vector<Tensor>& in) {
    layer.set_parameters({in.begin() + 3, in.end()});
    return (*layer.module)(in[0], in[1], with_key ? in[2] : Tensor(), m.query_mask, m.value_mask,
                           m.causal);
  };
  const GradcheckResult r = gradcheck(fn, inputs, eps, atol);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(KerasGradcheckTest, EveryLayerWithEveryMaskKind) {
  manual_seed(11);
  for (const Masks& m : every_mask_kind())
    for (const char* kind : kKinds) {
      gradcheck_layer(kind, true, m, true);
      gradcheck_layer(kind, false, m, true);
      gradcheck_layer(kind, true, m, false);
    }
}

// ---- fully masked rows --------------------------------------------------------------------

// value_mask all false for batch item 1: every score of its rows gets -1e9.
const Tensor& all_false_for_batch_1() {
  static const Tensor m = tensor({1, 1, 0, 1, 0, 0, 0, 0}, {2, 4}).to(kBool);
  return m;
}

TEST(KerasFullyMaskedRowTest, Float32GivesUniformWeightsAndTheMeanValue) {
  // s - 1e9 rounds to -1e9 in float32 (ulp(1e9) = 64 > 2 |s|): every weight is 1/Tv.
  for (const char* kind : kKinds) {
    SCOPED_TRACE(kind);
    Layer layer = fixture_layer(kind, true, kFloat32);
    const Tensor v = keras_fixture("v").to(kFloat32);
    Tensor out =
        (*layer.module)(keras_fixture("q").to(kFloat32), v, keras_fixture("k").to(kFloat32),
                        Tensor(), all_false_for_batch_1());
    const Tensor w1 = narrow(layer.module->attention_weights(), 0, 1, 1);
    EXPECT_TRUE(all_close(w1, std::vector<double>(12, 0.25), 1e-7, 0));
    // Each output row of batch 1 is the mean of its values: [1, 1, dim] broadcast over Tq.
    const Tensor mean_value = mean(narrow(v, 0, 1, 1), 1, /*keepdim=*/true);
    EXPECT_TRUE(all_close(narrow(out, 0, 1, 1), expand(mean_value, {1, 3, kDim}), 1e-6));
    for (double x : out.to_vector()) EXPECT_TRUE(std::isfinite(x));
  }
}

TEST(KerasFullyMaskedRowTest, Float64KeepsTheScoreDifferencesAsKerasDoes) {
  // In float64 the common -1e9 offset keeps the differences (up to ulp(1e9) =
  // 1.2e-7), and softmax ignores a common offset: the row's weights are those
  // of the unmasked scores.
  for (const char* kind : kKinds) {
    SCOPED_TRACE(kind);
    Layer layer = fixture_layer(kind, true, kFloat64);
    (*layer.module)(keras_fixture("q"), keras_fixture("v"), keras_fixture("k"), Tensor(),
                    all_false_for_batch_1());
    const Tensor masked = narrow(layer.module->attention_weights(), 0, 1, 1);
    EXPECT_TRUE(all_close(
        masked, narrow(keras_fixture(std::string(kind) + "_plain_weights"), 0, 1, 1), 1e-6));
    for (double x : masked.to_vector()) EXPECT_TRUE(std::isfinite(x));
  }
}

TEST(KerasFullyMaskedRowTest, CausalAndValueMaskTogetherCanEmptyARow) {
  // Query 0 may only see key 0 (causal), which value_mask hides in batch 0.
  const Tensor vm = tensor({0, 1, 1, 1, 1, 1, 1, 1}, {2, 4}).to(kBool);
  Layer layer = fixture_layer("dot", true, kFloat32);
  Tensor out =
      (*layer.module)(keras_fixture("q").to(kFloat32), keras_fixture("v").to(kFloat32),
                      keras_fixture("k").to(kFloat32), Tensor(), vm, /*use_causal_mask=*/true);
  const std::vector<double> w = layer.module->attention_weights().to_vector();
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(w[j], 0.25, 1e-7);  // batch 0, query 0: uniform
  EXPECT_NEAR(w[4 + 1] + w[4 + 0], 1.0, 1e-6);                // query 1 sees key 1 only
  EXPECT_EQ(w[4 + 0], 0.0);
  for (double x : out.to_vector()) EXPECT_TRUE(std::isfinite(x));
}

TEST(KerasFullyMaskedRowTest, GradcheckThroughFullyMaskedRows) {
  // In float64, s - 1e9 is quantised to steps of ulp(1e9) = 1.2e-7, which
  // finite differences with eps = 1e-6 cannot resolve; eps = 1e-2 makes the
  // quantisation error (~1e-5) and the truncation error (~eps^2) both small.
  manual_seed(12);
  const Tensor vm = tensor({0, 1, 1, 1, 0, 0, 0, 0}, {2, 4}).to(kBool);
  const Tensor qm = tensor({1, 1, 0, 1, 0, 1}, {2, 3}).to(kBool);
  const Masks cases[] = {{"value_mask_empty_rows", Tensor(), vm, false},
                         {"causal_empty_rows", qm, vm, true}};
  for (const Masks& m : cases)
    for (const char* kind : kKinds) gradcheck_layer(kind, true, m, true, 1e-2, 1e-4);
}

// ---- dropout ------------------------------------------------------------------------------

// value = identity [B, Tv, Tv], so output = dropout(weights) itself.
Tensor identity_values() {
  std::vector<double> eye;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) eye.push_back(i == j ? 1.0 : 0.0);
  return tensor(eye, {2, 4, 4}, kFloat64);
}

TEST(KerasDropoutTest, IdentityInEvalActiveInTrainingReproducibleFromTheSeed) {
  for (const char* kind : {"additive", "dot"}) {
    SCOPED_TRACE(kind);
    const Tensor q = uniform({2, 3, 4}, -1, 1, kFloat64), k = uniform({2, 4, 4}, -1, 1, kFloat64);
    const Tensor v = identity_values();
    Layer layer = make_layer(kind, true, /*dropout=*/0.5);
    layer.module->to(kFloat64);
    layer.module->eval();
    const Tensor out_eval = (*layer.module)(q, v, k);
    const Tensor weights = layer.module->attention_weights();
    EXPECT_TRUE(all_close(out_eval, weights, 1e-15));  // identity in eval

    layer.module->train();
    manual_seed(7);
    const Tensor out1 = (*layer.module)(q, v, k);
    // attention_weights() are the weights before dropout, in training too.
    EXPECT_TRUE(all_close(layer.module->attention_weights(), weights, 1e-15));
    // Each weight is dropped (0) or kept and scaled by 1 / (1 - p) = 2.
    const std::vector<double> o = out1.to_vector(), w = weights.to_vector();
    int dropped = 0;
    for (size_t i = 0; i < o.size(); ++i) {
      if (o[i] == 0.0) {
        ++dropped;
      } else {
        EXPECT_NEAR(o[i], 2 * w[i], 1e-12);
      }
    }
    EXPECT_GT(dropped, 0);
    EXPECT_LT(dropped, static_cast<int>(o.size()));
    manual_seed(7);
    EXPECT_TRUE(all_close((*layer.module)(q, v, k), out1, 0, 0));  // same seed, same mask
    manual_seed(8);
    EXPECT_GT(testing::max_abs_diff((*layer.module)(q, v, k), out1), 0.0);
  }
}

// ---- construction and parameters ------------------------------------------------------------

TEST(KerasLayerTest, AdditiveScaleIsGlorotUniformOverDim) {
  manual_seed(3);
  AdditiveAttention a(48);
  ASSERT_EQ(a.named_parameters().size(), 1u);
  EXPECT_EQ(a.named_parameters()[0].first, "scale");
  EXPECT_EQ(a.scale.shape(), (Shape{48}));
  const double limit = std::sqrt(3.0 / 48);
  double lo = 1, hi = -1;
  for (double x : a.scale.to_vector()) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_GE(lo, -limit);
  EXPECT_LE(hi, limit);
  EXPECT_LT(lo, -limit / 2);  // spread over the range, not all near 0
  EXPECT_GT(hi, limit / 2);
  manual_seed(3);
  EXPECT_TRUE(all_close(AdditiveAttention(48).scale, a.scale, 0, 0));
  EXPECT_TRUE(AdditiveAttention(48, /*use_scale=*/false).parameters().empty());
}

TEST(KerasLayerTest, AttentionParametersAreScalarOnes) {
  EXPECT_TRUE(Attention().parameters().empty());
  Attention scaled(/*use_scale=*/true);
  ASSERT_EQ(scaled.named_parameters().size(), 1u);
  EXPECT_EQ(scaled.scale.shape(), Shape{});
  EXPECT_EQ(scaled.scale.item(), 1.0);
  Attention concat(/*use_scale=*/true, "concat");
  const auto named = concat.named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "scale");
  EXPECT_EQ(named[1].first, "concat_score_weight");
  EXPECT_EQ(concat.concat_score_weight.item(), 1.0);
}

TEST(KerasLayerTest, ValueWidthMayDifferFromTheQueryWidth) {
  Attention a;
  Tensor out = a(rand({2, 3, 4}), rand({2, 5, 7}), rand({2, 5, 4}));
  EXPECT_EQ(out.shape(), (Shape{2, 3, 7}));
  EXPECT_EQ(a.attention_weights().shape(), (Shape{2, 3, 5}));
}

// ---- bad inputs -----------------------------------------------------------------------------

TEST(KerasLayerTest, BadConstructorArgumentsThrow) {
  EXPECT_TRUE(
      throws_error([] { Attention(false, "general"); }, {"Attention", "score_mode", "general"}));
  EXPECT_TRUE(throws_error([] { AdditiveAttention(0); }, {"AdditiveAttention", "dim", "0"}));
  EXPECT_TRUE(
      throws_error([] { AdditiveAttention(4, true, 1.0); }, {"AdditiveAttention", "dropout"}));
  EXPECT_TRUE(throws_error([] { Attention(false, "dot", -0.1); }, {"Attention", "dropout"}));
}

TEST(KerasLayerTest, BadInputsThrowNamingTheLayerAndShapes) {
  AdditiveAttention add(4);
  Attention dot;
  const Tensor q = rand({2, 3, 4}), v = rand({2, 5, 4});
  EXPECT_TRUE(throws_error(
      [&] {
        add(rand({2, 3, 3}), v);
      },
      {"AdditiveAttention", "width dim = 4", "[2, 3, 3]", "[2, 5, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        dot(q, v, rand({2, 5, 3}));
      },
      {"Attention", "widths differ", "[2, 3, 4]", "[2, 5, 3]"}));
  EXPECT_TRUE(throws_error([&] { dot(rand({3, 4}), v); }, {"Attention", "3-D query", "[3, 4]"}));
  EXPECT_TRUE(throws_error([&] { dot(Tensor(), v); }, {"Attention", "query and value"}));
  EXPECT_TRUE(throws_error(
      [&] {
        add(q, rand({3, 5, 4}));
      },
      {"AdditiveAttention", "batch sizes differ", "[2, 3, 4]", "[3, 5, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        add(q, v, rand({2, 6, 4}));
      },
      {"AdditiveAttention", "lengths differ", "[2, 6, 4]", "[2, 5, 4]"}));
  EXPECT_TRUE(throws_error([&] { dot(q, v.to(kFloat64)); }, {"Attention", "float64", "float32"}));
  EXPECT_TRUE(throws_error([&] { dot(q.to(kInt64), v); }, {"Attention", "int64"}));
  EXPECT_TRUE(throws_error([&] { add(q.to(kFloat64), v.to(kFloat64)); },
                           {"AdditiveAttention", "parameter 'scale'", "float32", "float64"}));
}

TEST(KerasLayerTest, BadMasksThrow) {
  Attention dot;
  const Tensor q = rand({2, 3, 4}), v = rand({2, 5, 4});
  const Tensor ok_q = ones({2, 3}).to(kBool), ok_v = ones({2, 5}).to(kBool);
  EXPECT_NO_THROW(dot(q, v, Tensor(), ok_q, ok_v, true));
  EXPECT_TRUE(throws_error(
      [&] {
        dot(q, v, Tensor(), ones({2, 3}));
      },
      {"Attention", "query_mask", "bool", "[2, 3]", "float32"}));
  EXPECT_TRUE(throws_error(
      [&] {
        dot(q, v, Tensor(), ones({2, 5}).to(kBool));
      },
      {"Attention", "query_mask", "[2, 3]", "[2, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        dot(q, v, Tensor(), Tensor(), ones({2, 3}).to(kBool));
      },
      {"Attention", "value_mask", "[2, 5]", "[2, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        dot(q, v, Tensor(), Tensor(), ones({2, 5}, kInt64));
      },
      {"Attention", "value_mask", "int64"}));
}

}  // namespace
}  // namespace ag
