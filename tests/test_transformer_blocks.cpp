// The Transformer's parts: layer_norm (the fused op against its composed
// reference, gradcheck, torch.nn.LayerNorm), nn::LayerNorm, PositionWiseFFN,
// AddNorm (post-LN as d2l, and pre-LN's add), PositionalEncoding, Sequential.
// The model is tests/test_transformer.cpp's.
// References: scripts/make_transformer_fixtures.py (d2l's PyTorch code).
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::fixture_tensor;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

struct BlockTolerance {
  DType dtype;
  double atol, rtol;
};
const BlockTolerance kBlockTolerances[] = {{kFloat64, 1e-10, 1e-10}, {kFloat32, 1e-5, 1e-5}};

// A fixture entry in `dtype` (int64 entries as they are), as a fresh leaf when asked.
Tensor block_entry(const std::string& file, const std::string& name, DType dtype) {
  const Tensor& t = fixture_tensor(file, name);
  return is_floating(t.dtype()) ? t.to(dtype) : t;
}
Tensor block_leaf(const std::string& file, const std::string& name, DType dtype) {
  return block_entry(file, name, dtype).clone().requires_grad_();
}

// ---- layer_norm ---------------------------------------------------------------------------

struct NormResult {
  Tensor y, dx, dw, db;
};

NormResult run_norm(bool fused, const Tensor& x0, const Shape& normalized, const Tensor& w0,
                    const Tensor& b0, double eps, const Tensor& g) {
  Tensor x = x0.detach().clone().requires_grad_();
  Tensor w = w0.defined() ? w0.detach().clone().requires_grad_() : Tensor();
  Tensor b = b0.defined() ? b0.detach().clone().requires_grad_() : Tensor();
  const Tensor y = fused ? layer_norm(x, normalized, w, b, eps)
                         : reference::layer_norm(x, normalized, w, b, eps);
  sum(y * g).backward();
  return {y.detach(), x.grad(), w.defined() ? w.grad() : Tensor(),
          b.defined() ? b.grad() : Tensor()};
}

TEST(LayerNormTest, FusedMatchesComposed) {
  manual_seed(1);
  struct Case {
    Shape x, normalized;
    bool affine;
    double eps;
  };
  const Case cases[] = {{{2, 3, 4}, {4}, true, 1e-5},  {{2, 3, 4}, {3, 4}, true, 1e-3},
                        {{5, 17}, {17}, false, 1e-5},  {{1, 1}, {1}, true, 1e-5},
                        {{3, 2, 40}, {40}, true, 0.0}, {{300, 33}, {33}, true, 1e-5},
                        {{4, 6}, {4, 6}, true, 1e-5},  {{7}, {7}, true, 1e-5}};
  for (const DType dtype : {kFloat64, kFloat32}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(shape_str(c.x) + " over " + shape_str(c.normalized) + ", " + dtype_name(dtype));
      const Tensor x = uniform(c.x, -3, 5, dtype), g = uniform(c.x, -1, 1, dtype);
      const Tensor w = c.affine ? uniform(c.normalized, -2, 2, dtype) : Tensor();
      const Tensor b = c.affine ? uniform(c.normalized, -2, 2, dtype) : Tensor();
      const NormResult f = run_norm(true, x, c.normalized, w, b, c.eps, g);
      const NormResult r = run_norm(false, x, c.normalized, w, b, c.eps, g);
      // A row of one feature normalizes to 0 exactly; float32 rounds each step.
      const double tol = dtype == kFloat64 ? 1e-11 : 2e-5;
      EXPECT_TRUE(all_close(f.y, r.y, tol, tol));
      EXPECT_TRUE(all_close(f.dx, r.dx, tol, tol));
      if (c.affine) {
        EXPECT_TRUE(all_close(f.dw, r.dw, tol * 10, tol));
        EXPECT_TRUE(all_close(f.db, r.db, tol * 10, tol));
      }
    }
  }
}

TEST(LayerNormTest, NormalizesEachRow) {
  // Rows [1, 2, 3] and [10, 10, 13]: mean 2, var 2/3; mean 11, var 2.
  const Tensor y = layer_norm(tensor({1, 2, 3, 10, 10, 13}, {2, 3}, kFloat64), {3}, {}, {}, 0.0);
  const double a = 1 / std::sqrt(2.0 / 3.0), b = 1 / std::sqrt(2.0);
  EXPECT_TRUE(all_close(y, {-a, 0, a, -b, -b, 2 * b}, 1e-12, 0));
}

TEST(LayerNormTest, Gradcheck) {
  manual_seed(2);
  const auto affine = [](const Shape& normalized, double eps) {
    return [normalized, eps](const std::vector<Tensor>& in) {
      return layer_norm(in[0], normalized, in[1], in[2], eps);
    };
  };
  EXPECT_TRUE(grad_ok(affine({4}, 1e-5), {leaf64({2, 3, 4}), leaf64({4}), leaf64({4})}));
  EXPECT_TRUE(grad_ok(affine({3, 4}, 1e-3), {leaf64({2, 3, 4}), leaf64({3, 4}), leaf64({3, 4})}));
  EXPECT_TRUE(grad_ok(affine({2}, 1e-5), {leaf64({5, 2}), leaf64({2}), leaf64({2})}));
  const auto plain = [](const std::vector<Tensor>& in) { return layer_norm(in[0], {6}); };
  EXPECT_TRUE(grad_ok(plain, {leaf64({3, 6}, -4, 4)}));
}

TEST(LayerNormTest, MatchesTorchLayerNorm) {
  const std::string file = "transformer_blocks.npz";
  for (const BlockTolerance& tol : kBlockTolerances) {
    for (const auto& [c, normalized, eps] :
         {std::tuple{"last", Shape{4}, 1e-5}, std::tuple{"two", Shape{3, 4}, 1e-3}}) {
      SCOPED_TRACE(std::string(c) + ", " + dtype_name(tol.dtype));
      const std::string p = std::string("layer_norm.") + c + ".";
      nn::LayerNorm ln(normalized, eps);
      ln.to(tol.dtype);
      ln.load_state_dict({{"weight", fixture_tensor(file, p + "weight")},
                          {"bias", fixture_tensor(file, p + "bias")}});
      Tensor x = block_leaf(file, p + "x", tol.dtype);
      const Tensor y = ln(x);
      EXPECT_TRUE(all_close(y, fixture_tensor(file, p + "output"), tol.atol, tol.rtol));
      sum(y * block_entry(file, p + "w", tol.dtype)).backward();
      EXPECT_TRUE(all_close(x.grad(), fixture_tensor(file, p + "grad.x"), tol.atol, tol.rtol));
      EXPECT_TRUE(
          all_close(ln.weight.grad(), fixture_tensor(file, p + "grad.weight"), tol.atol, tol.rtol));
      EXPECT_TRUE(
          all_close(ln.bias.grad(), fixture_tensor(file, p + "grad.bias"), tol.atol, tol.rtol));
    }
  }
}

TEST(LayerNormTest, ModuleDefaultsAndNames) {
  nn::LayerNorm ln({2, 3});
  const auto named = ln.named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "weight");
  EXPECT_EQ(named[1].first, "bias");
  EXPECT_TRUE(all_close(ln.weight, ones({2, 3}), 0, 0));
  EXPECT_TRUE(all_close(ln.bias, zeros({2, 3}), 0, 0));
  EXPECT_EQ(ln.eps, 1e-5);
}

TEST(LayerNormTest, SameBitsWithAnyThreadCount) {
  manual_seed(3);
  const Tensor x = uniform({400, 64}, -2, 2), g = uniform({400, 64}, -1, 1);
  const Tensor w = uniform({64}, -1, 1), b = uniform({64}, -1, 1);
  const auto values = [&] {
    const NormResult r = run_norm(true, x, {64}, w, b, 1e-5, g);
    return std::vector<std::vector<double>>{r.y.to_vector(), r.dx.to_vector(), r.dw.to_vector(),
                                            r.db.to_vector()};
  };
  const int threads = get_num_threads();
  set_num_threads(1);
  const auto one = values();
  set_num_threads(2);
  const auto two = values();
  set_num_threads(threads);
  EXPECT_EQ(one, two);
}

TEST(LayerNormTest, BadInput) {
  const Tensor x = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { layer_norm(x, {4}); }, {"layer_norm", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([&] { layer_norm(x, {2, 3, 1}); }, {"layer_norm", "[2, 3, 1]"}));
  EXPECT_TRUE(throws_error([&] { layer_norm(x, {}); }, {"layer_norm", "empty"}));
  EXPECT_TRUE(
      throws_error([&] { layer_norm(x, {3}, ones({2})); }, {"layer_norm", "weight", "[2]"}));
  EXPECT_TRUE(
      throws_error([&] { layer_norm(x, {3}, {}, ones({3}, kFloat64)); }, {"layer_norm", "bias"}));
  EXPECT_TRUE(throws_error([&] { layer_norm(zeros({2, 3}, kInt64), {3}); }, {"layer_norm"}));
  EXPECT_TRUE(throws_error([&] { layer_norm(x, {3}, {}, {}, -1); }, {"layer_norm", "eps"}));
  EXPECT_TRUE(throws_error([] { nn::LayerNorm({0}); }, {"LayerNorm", "[0]"}));
  nn::LayerNorm ln({3});
  EXPECT_TRUE(throws_error([&] { ln(zeros({2, 3}, kFloat64)); }, {"layer_norm", "float64"}));
}

// ---- PositionWiseFFN, AddNorm, PositionalEncoding, Sequential ------------------------------

// Loads `prefix.<name>` of every parameter of `module` from the blocks fixture.
void load_prefixed(nn::Module& module, const std::string& prefix) {
  std::map<std::string, Tensor> state;
  for (const auto& [name, p] : module.named_parameters())
    state[name] = fixture_tensor("transformer_blocks.npz", prefix + "." + name);
  module.load_state_dict(state);
}

TEST(PositionWiseFFNTest, MatchesD2l) {
  const std::string file = "transformer_blocks.npz";
  for (const BlockTolerance& tol : kBlockTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    nn::PositionWiseFFN ffn(5, 7, 4);
    ffn.to(tol.dtype);
    load_prefixed(ffn, "ffn");
    Tensor x = block_leaf(file, "ffn.x", tol.dtype);
    const Tensor y = ffn(x);
    EXPECT_TRUE(all_close(y, fixture_tensor(file, "ffn.output"), tol.atol, tol.rtol));
    sum(y * block_entry(file, "ffn.w", tol.dtype)).backward();
    EXPECT_TRUE(all_close(x.grad(), fixture_tensor(file, "ffn.grad.x"), tol.atol, tol.rtol));
    for (const auto& [name, p] : ffn.named_parameters())
      EXPECT_TRUE(all_close(p.grad(), fixture_tensor(file, "ffn.grad." + name), tol.atol, tol.rtol))
          << name;
  }
}

TEST(AddNormTest, MatchesD2l) {
  const std::string file = "transformer_blocks.npz";
  for (const BlockTolerance& tol : kBlockTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    nn::AddNorm addnorm({4}, 0.0);
    addnorm.to(tol.dtype);
    load_prefixed(addnorm, "addnorm");
    Tensor X = block_leaf(file, "addnorm.X", tol.dtype),
           Y = block_leaf(file, "addnorm.Y", tol.dtype);
    const Tensor out = addnorm(X, Y);
    EXPECT_TRUE(all_close(out, fixture_tensor(file, "addnorm.output"), tol.atol, tol.rtol));
    sum(out * block_entry(file, "addnorm.w", tol.dtype)).backward();
    EXPECT_TRUE(all_close(X.grad(), fixture_tensor(file, "addnorm.grad.X"), tol.atol, tol.rtol));
    EXPECT_TRUE(all_close(Y.grad(), fixture_tensor(file, "addnorm.grad.Y"), tol.atol, tol.rtol));
    for (const auto& [name, p] : addnorm.named_parameters())
      EXPECT_TRUE(
          all_close(p.grad(), fixture_tensor(file, "addnorm.grad." + name), tol.atol, tol.rtol))
          << name;
  }
}

TEST(AddNormTest, DropoutActsOnTheSublayerOnly) {
  // In training with p close to 1 most of Y is dropped; ln(0 + X) remains.
  manual_seed(4);
  nn::AddNorm addnorm({6}, 0.999999);
  const Tensor X = uniform({50, 6}, -1, 1), Y = uniform({50, 6}, -1, 1);
  addnorm.eval();
  EXPECT_TRUE(all_close(addnorm(X, Y), layer_norm(X + Y, {6}), 1e-6, 1e-6));
  addnorm.train();
  const double dropped = testing::max_abs_diff(addnorm(X, Y), layer_norm(X, {6}));
  EXPECT_LT(dropped, 1e-5);  // every one of the 300 entries of Y dropped (p = 1 - 1e-6)
}

// Pre-LN's residual, add(X, Y) = X + dropout(Y): nothing normalised, the
// dropout on Y only; shapes checked.
TEST(AddNormTest, PreLnAddLeavesTheSumUnnormalised) {
  manual_seed(4);
  nn::AddNorm addnorm({6}, 0.999999);
  const Tensor X = uniform({50, 6}, -1, 1), Y = uniform({50, 6}, -1, 1);
  addnorm.eval();
  EXPECT_EQ(addnorm.add(X, Y).to_vector(), (X + Y).to_vector());
  addnorm.train();
  EXPECT_EQ(addnorm.add(X, Y).to_vector(), X.to_vector());  // every entry of Y dropped
  EXPECT_TRUE(throws_error(
      [&] {
        addnorm.add(X, uniform({50, 5}, -1, 1));
      },
      {"AddNorm.add", "[50, 6]", "[50, 5]"}));
}

TEST(PositionWiseFFNTest, AddNormGradcheck) {
  manual_seed(5);
  nn::PositionWiseFFN ffn(3, 5, 2);
  ffn.to(kFloat64);
  const auto ffn_fn = [&](const std::vector<Tensor>& in) {
    ffn.dense1.weight = in[1];
    ffn.dense2.bias = in[2];
    return ffn(in[0]);
  };
  EXPECT_TRUE(grad_ok(ffn_fn, {leaf64({2, 4, 3}), leaf64({5, 3}), leaf64({2})}));
  nn::AddNorm addnorm({3}, 0.0);
  addnorm.to(kFloat64);
  const auto addnorm_fn = [&](const std::vector<Tensor>& in) {
    addnorm.ln.weight = in[2];
    addnorm.ln.bias = in[3];
    return addnorm(in[0], in[1]);
  };
  EXPECT_TRUE(
      grad_ok(addnorm_fn, {leaf64({2, 4, 3}), leaf64({2, 4, 3}), leaf64({3}), leaf64({3})}));
}

TEST(PositionalEncodingTest, TableAndForward) {
  nn::PositionalEncoding pe(6, 0.0, /*max_len=*/10);
  EXPECT_TRUE(pe.named_parameters().empty());  // P is not a parameter (as d2l's)
  const Tensor& P = fixture_tensor("transformer_blocks.npz", "pos_encoding.P");
  EXPECT_TRUE(all_close(pe.P, P, 1e-15, 0));
  // sin(0) = 0 and cos(0) = 1 in the first row.
  EXPECT_TRUE(all_close(narrow(pe.P, 1, 0, 1), {0, 1, 0, 1, 0, 1}, 0, 0));
  const Tensor X = uniform({2, 3, 6}, -1, 1, kFloat64);
  EXPECT_TRUE(all_close(pe(X), X + narrow(P, 1, 0, 3), 1e-15, 0));
  // offset 4: positions 4, 5, 6
  EXPECT_TRUE(all_close(pe(X, 4), X + narrow(P, 1, 4, 3), 1e-15, 0));
  // float32 input: P rounded to float32, the result float32
  EXPECT_EQ(pe(X.to(kFloat32)).dtype(), kFloat32);
  EXPECT_TRUE(throws_error([&] { pe(X, 8); }, {"PositionalEncoding", "max_len 10"}));
  EXPECT_TRUE(throws_error([&] { pe(zeros({2, 3, 4})); }, {"PositionalEncoding", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([] { nn::PositionalEncoding(5, 0.0); }, {"PositionalEncoding", "even"}));
}

TEST(SequentialTest, NamesChildrenAsD2l) {
  nn::Sequential<nn::PositionWiseFFN> blks;
  for (int i = 0; i < 3; ++i)
    blks.add_module("block" + std::to_string(i), std::make_unique<nn::PositionWiseFFN>(2, 3, 2));
  ASSERT_EQ(blks.size(), 3u);
  EXPECT_EQ(blks.name(2), "block2");
  const auto named = blks.named_parameters();
  ASSERT_EQ(named.size(), 12u);
  EXPECT_EQ(named[0].first, "block0.dense1.weight");
  EXPECT_EQ(named[11].first, "block2.dense2.bias");
  EXPECT_TRUE(named[4].second.is_same(blks[1].dense1.weight));
  blks.eval();
  EXPECT_FALSE(blks[2].dense1.is_training());
  EXPECT_TRUE(throws_error(
      [&] { blks.add_module("block1", std::make_unique<nn::PositionWiseFFN>(2, 3, 2)); },
      {"Sequential.add_module", "block1"}));
  EXPECT_TRUE(throws_error([&] { blks[3]; }, {"Sequential", "index 3"}));
}

}  // namespace
}  // namespace ag
