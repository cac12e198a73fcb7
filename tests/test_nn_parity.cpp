// Parity with PyTorch: outputs, attention weights and every gradient of
// masked_softmax, DotProductAttention, AdditiveAttention, MultiHeadAttention
// (with and without bias) and scaled_dot_product_attention, against float64
// references written by scripts/make_nn_fixtures.py (d2l's own PyTorch code;
// PyTorch 2's documented sdpa math). Parameters travel as state dicts named
// like ours ("W_q.weight"). Each comparison runs in float64 (agreement to
// ~1e-10) and in float32, attograd's default (~1e-5 relative).
#include <cmath>
#include <iostream>
#include <map>

#include "test_util.h"

namespace ag {
namespace {

namespace F = nn::functional;
using testing::all_close;
using testing::fixture;
using testing::fixture_tensor;

using testing::kTolerances;
using testing::Tolerance;

bool has(const std::string& file, const std::string& name) {
  return fixture(file).count(name) > 0;
}

// A fixture entry in `dtype` (bool and int64 entries are returned as they are).
Tensor entry(const std::string& file, const std::string& name, DType dtype) {
  const Tensor& t = fixture_tensor(file, name);
  return is_floating(t.dtype()) ? t.to(dtype) : t;
}

Tensor leaf(const std::string& file, const std::string& name, DType dtype) {
  return entry(file, name, dtype).clone().requires_grad_();
}

// The largest differences seen per dtype, printed like llm.c's test_gpt2.c
// ("OK ... max abs diff") at the end of each test.
struct Worst {
  double abs = 0, rel = 0;
};
std::map<DType, Worst> worst;

::testing::AssertionResult close(const Tensor& actual, const Tensor& expected,
                                 const Tolerance& tol) {
  if (actual.defined() && actual.shape() == expected.shape()) {
    const std::vector<double> a = actual.to_vector(), e = expected.to_vector();
    Worst& w = worst[tol.dtype];
    for (size_t i = 0; i < a.size(); ++i) {
      const double d = std::abs(a[i] - e[i]);
      w.abs = std::max(w.abs, d);
      if (std::abs(e[i]) > 1e-3) w.rel = std::max(w.rel, d / std::abs(e[i]));
    }
  }
  return all_close(actual, expected, tol.atol, tol.rtol);
}

class NnParityTest : public ::testing::Test {
 protected:
  void SetUp() override { worst.clear(); }
  void TearDown() override {
    for (const auto& [dtype, w] : worst)
      std::cout << "  " << (HasFailure() ? "NOT OK " : "OK ") << dtype_name(dtype)
                << ": max abs diff " << w.abs << ", max rel diff " << w.rel << "\n";
  }
};

// ---- masked_softmax ----------------------------------------------------------------------

TEST_F(NnParityTest, MaskedSoftmax) {
  const std::string file = "nn_masked_softmax.npz";
  for (const Tolerance& tol : kTolerances) {
    for (const char* name : {"none", "lens1", "lens2", "lens_zero"}) {
      SCOPED_TRACE(std::string(name) + ", " + dtype_name(tol.dtype));
      const std::string c = name;
      Tensor X = leaf(file, "X", tol.dtype);
      const Tensor valid =
          has(file, c + ".valid_lens") ? entry(file, c + ".valid_lens", tol.dtype) : Tensor();
      Tensor out = nn::masked_softmax(X, valid);
      EXPECT_TRUE(close(out, fixture_tensor(file, c + ".output"), tol));
      sum(out * entry(file, c + ".w", tol.dtype)).backward();
      EXPECT_TRUE(close(X.grad(), fixture_tensor(file, c + ".grad.X"), tol));
    }
  }
}

// ---- the modules -----------------------------------------------------------------------------

const char* const kModuleCases[] = {"none",     "lens1",  "lens2",         "bool",
                                    "additive", "causal", "lens_and_bool", "head_bool"};

// Loads the fixture's parameters with load_state_dict (strict), then checks
// every case: output, attention weights, and d sum(output * w) with respect to
// queries, keys, values and each parameter.
template <typename M>
void check_module(M& module, const std::string& file) {
  for (const Tolerance& tol : kTolerances) {
    module.eval();
    module.to(tol.dtype);
    std::map<std::string, Tensor> state;
    for (const auto& [name, p] : module.named_parameters())
      state[name] = fixture_tensor(file, name);
    module.load_state_dict(state);
    for (const char* name : kModuleCases) {
      const std::string c = name;
      if (!has(file, c + ".output")) continue;
      SCOPED_TRACE(module.type_name() + " " + c + ", " + dtype_name(tol.dtype));
      Tensor q = leaf(file, "queries", tol.dtype), k = leaf(file, "keys", tol.dtype),
             v = leaf(file, "values", tol.dtype);
      module.zero_grad();
      const Tensor valid =
          has(file, c + ".valid_lens") ? entry(file, c + ".valid_lens", tol.dtype) : Tensor();
      const Tensor mask = has(file, c + ".mask") ? entry(file, c + ".mask", tol.dtype) : Tensor();
      Tensor out = module(q, k, v, valid, mask);
      EXPECT_TRUE(close(out, fixture_tensor(file, c + ".output"), tol));
      EXPECT_TRUE(close(module.attention_weights(), fixture_tensor(file, c + ".weights"), tol));
      sum(out * entry(file, c + ".w", tol.dtype)).backward();
      EXPECT_TRUE(close(q.grad(), fixture_tensor(file, c + ".grad.queries"), tol));
      EXPECT_TRUE(close(k.grad(), fixture_tensor(file, c + ".grad.keys"), tol));
      EXPECT_TRUE(close(v.grad(), fixture_tensor(file, c + ".grad.values"), tol));
      for (const auto& [pname, p] : module.named_parameters())
        EXPECT_TRUE(close(p.grad(), fixture_tensor(file, c + ".grad." + pname), tol)) << pname;
    }
  }
}

TEST_F(NnParityTest, DotProductAttention) {
  nn::DotProductAttention attention(0.1);
  check_module(attention, "nn_dot.npz");
}

TEST_F(NnParityTest, AdditiveAttentionWithDifferentKeyAndQuerySizes) {
  nn::AdditiveAttention attention(/*key_size=*/3, /*query_size=*/5, /*num_hiddens=*/6, 0.1);
  check_module(attention, "nn_additive.npz");
}

TEST_F(NnParityTest, MultiHeadAttention) {
  nn::MultiHeadAttention attention(5, 4, 3, 8, 2, 0.1);
  check_module(attention, "nn_mha.npz");
}

TEST_F(NnParityTest, MultiHeadAttentionWithBias) {
  nn::MultiHeadAttention attention(5, 4, 3, 8, 2, 0.1, /*bias=*/true);
  check_module(attention, "nn_mha_bias.npz");
}

// ---- scaled_dot_product_attention ---------------------------------------------------------------

TEST_F(NnParityTest, ScaledDotProductAttention) {
  const std::string file = "nn_sdpa.npz";
  struct Case {
    const char* name;
    bool is_causal;
    std::optional<double> scale;
  };
  const Case cases[] = {{"none", false, {}},  {"bool", false, {}},   {"additive", false, {}},
                        {"causal", true, {}}, {"scale", false, 0.3}, {"bool_scale", false, 1.7}};
  for (const Tolerance& tol : kTolerances) {
    for (const Case& cs : cases) {
      const std::string c = cs.name;
      SCOPED_TRACE(c + ", " + dtype_name(tol.dtype));
      Tensor q = leaf(file, "queries", tol.dtype), k = leaf(file, "keys", tol.dtype),
             v = leaf(file, "values", tol.dtype);
      const Tensor mask = has(file, c + ".mask") ? entry(file, c + ".mask", tol.dtype) : Tensor();
      auto [out, weights] =
          F::scaled_dot_product_attention_with_weights(q, k, v, mask, 0.0, cs.is_causal, cs.scale);
      EXPECT_TRUE(close(out, fixture_tensor(file, c + ".output"), tol));
      EXPECT_TRUE(close(weights, fixture_tensor(file, c + ".weights"), tol));
      sum(out * entry(file, c + ".w", tol.dtype)).backward();
      EXPECT_TRUE(close(q.grad(), fixture_tensor(file, c + ".grad.queries"), tol));
      EXPECT_TRUE(close(k.grad(), fixture_tensor(file, c + ".grad.keys"), tol));
      EXPECT_TRUE(close(v.grad(), fixture_tensor(file, c + ".grad.values"), tol));
    }
  }
}

TEST_F(NnParityTest, StateDictRoundTripsThroughNpz) {
  // Our parameters saved with save_npz load back (and into PyTorch: same names).
  nn::MultiHeadAttention a(5, 4, 3, 8, 2, 0.0, true), b(5, 4, 3, 8, 2, 0.0, true);
  const std::string path = ::testing::TempDir() + "mha_state.npz";
  save_npz(path, a.state_dict());
  b.load_state_dict(load_npz(path));
  for (const auto& [name, p] : a.named_parameters())
    EXPECT_TRUE(all_close(b.state_dict().at(name), p, 0, 0)) << name;
}

}  // namespace
}  // namespace ag
