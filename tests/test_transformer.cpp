// The Transformer's parts and the model: layer_norm (the fused op against its
// composed reference, gradcheck, torch.nn.LayerNorm), nn::LayerNorm,
// PositionWiseFFN, AddNorm, PositionalEncoding, Sequential, and d2l's
// Transformer: parity with the PyTorch model (logits, loss, every gradient,
// every attention map, greedy decoding), the key/value cache against the
// full-sequence decoder, both masks doing their job, state-dict names, a
// float64 gradcheck through a tiny model, bad input.
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

struct Tolerance {
  DType dtype;
  double atol, rtol;
};
const Tolerance kTolerances[] = {{kFloat64, 1e-10, 1e-10}, {kFloat32, 1e-5, 1e-5}};

// A fixture entry in `dtype` (int64 entries as they are), as a fresh leaf when asked.
Tensor entry(const std::string& file, const std::string& name, DType dtype) {
  const Tensor& t = fixture_tensor(file, name);
  return is_floating(t.dtype()) ? t.to(dtype) : t;
}
Tensor leaf(const std::string& file, const std::string& name, DType dtype) {
  return entry(file, name, dtype).clone().requires_grad_();
}

// ---- layer_norm ---------------------------------------------------------------------------

// The composed reference: the same math from primitives (mean, biased var, sqrt, div).
Tensor reference_layer_norm(const Tensor& x, const Shape& normalized, const Tensor& weight,
                            const Tensor& bias, double eps) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < normalized.size(); ++i)
    dims.push_back(-static_cast<int64_t>(normalized.size() - i));
  const Tensor mean_x = mean(x, dims, /*keepdim=*/true);
  const Tensor centered = x - mean_x;
  const Tensor var = mean(centered * centered, dims, /*keepdim=*/true);
  Tensor y = centered / sqrt(var + eps);
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

struct NormResult {
  Tensor y, dx, dw, db;
};

NormResult run_norm(bool fused, const Tensor& x0, const Shape& normalized, const Tensor& w0,
                    const Tensor& b0, double eps, const Tensor& g) {
  Tensor x = x0.detach().clone().requires_grad_();
  Tensor w = w0.defined() ? w0.detach().clone().requires_grad_() : Tensor();
  Tensor b = b0.defined() ? b0.detach().clone().requires_grad_() : Tensor();
  const Tensor y =
      fused ? layer_norm(x, normalized, w, b, eps) : reference_layer_norm(x, normalized, w, b, eps);
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
  for (const Tolerance& tol : kTolerances) {
    for (const auto& [c, normalized, eps] :
         {std::tuple{"last", Shape{4}, 1e-5}, std::tuple{"two", Shape{3, 4}, 1e-3}}) {
      SCOPED_TRACE(std::string(c) + ", " + dtype_name(tol.dtype));
      const std::string p = std::string("layer_norm.") + c + ".";
      nn::LayerNorm ln(normalized, eps);
      ln.to(tol.dtype);
      ln.load_state_dict({{"weight", fixture_tensor(file, p + "weight")},
                          {"bias", fixture_tensor(file, p + "bias")}});
      Tensor x = leaf(file, p + "x", tol.dtype);
      const Tensor y = ln(x);
      EXPECT_TRUE(all_close(y, fixture_tensor(file, p + "output"), tol.atol, tol.rtol));
      sum(y * entry(file, p + "w", tol.dtype)).backward();
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
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    nn::PositionWiseFFN ffn(5, 7, 4);
    ffn.to(tol.dtype);
    load_prefixed(ffn, "ffn");
    Tensor x = leaf(file, "ffn.x", tol.dtype);
    const Tensor y = ffn(x);
    EXPECT_TRUE(all_close(y, fixture_tensor(file, "ffn.output"), tol.atol, tol.rtol));
    sum(y * entry(file, "ffn.w", tol.dtype)).backward();
    EXPECT_TRUE(all_close(x.grad(), fixture_tensor(file, "ffn.grad.x"), tol.atol, tol.rtol));
    for (const auto& [name, p] : ffn.named_parameters())
      EXPECT_TRUE(all_close(p.grad(), fixture_tensor(file, "ffn.grad." + name), tol.atol, tol.rtol))
          << name;
  }
}

TEST(AddNormTest, MatchesD2l) {
  const std::string file = "transformer_blocks.npz";
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    nn::AddNorm addnorm({4}, 0.0);
    addnorm.to(tol.dtype);
    load_prefixed(addnorm, "addnorm");
    Tensor X = leaf(file, "addnorm.X", tol.dtype), Y = leaf(file, "addnorm.Y", tol.dtype);
    const Tensor out = addnorm(X, Y);
    EXPECT_TRUE(all_close(out, fixture_tensor(file, "addnorm.output"), tol.atol, tol.rtol));
    sum(out * entry(file, "addnorm.w", tol.dtype)).backward();
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

// ---- the Transformer ---------------------------------------------------------------------

const std::string kModel = "transformer_model.npz";

// The fixture's state dict in torch's order: entries "param.NN.<name>".
std::vector<std::pair<std::string, Tensor>> torch_state_dict() {
  std::vector<std::pair<std::string, Tensor>> state;
  for (const auto& [key, t] : testing::fixture(kModel)) {
    if (key.rfind("param.", 0) != 0) continue;
    const size_t index = std::stoul(key.substr(6, 2));
    if (state.size() <= index) state.resize(index + 1);
    state[index] = {key.substr(9), t};
  }
  return state;
}

// The model of the fixture (src vocab 12, tgt vocab 11, d 8, FFN 16, 2 heads,
// 2 blocks, dropout 0) in `dtype` with torch's weights.
std::unique_ptr<nn::Transformer> fixture_model(DType dtype) {
  auto model = nn::make_transformer(12, 11, 8, 16, 2, 2, 0.0);
  model->to(dtype);
  std::map<std::string, Tensor> state;
  for (const auto& [name, t] : torch_state_dict()) state[name] = t;
  model->load_state_dict(state, /*strict=*/true);
  return model;
}

TEST(TransformerTest, StateDictNamesAndOrderAreTorchs) {
  auto model = nn::make_transformer(12, 11, 8, 16, 2, 2, 0.0);
  const auto ours = model->named_parameters();
  const auto torch = torch_state_dict();
  ASSERT_EQ(ours.size(), torch.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i].first, torch[i].first) << i;
    EXPECT_EQ(ours[i].second.shape(), torch[i].second.shape()) << torch[i].first;
  }
  // A few names spelled out, as the issue gives them.
  const auto has = [&](const std::string& name) { return model->state_dict().contains(name); };
  for (const char* name :
       {"encoder.embedding.weight", "encoder.blks.block0.attention.W_q.weight",
        "encoder.blks.block1.addnorm1.ln.weight", "encoder.blks.block0.ffn.dense1.weight",
        "decoder.blks.block1.attention2.W_o.weight", "decoder.blks.block0.addnorm3.ln.bias",
        "decoder.dense.weight", "decoder.dense.bias"})
    EXPECT_TRUE(has(name)) << name;
}

TEST(TransformerTest, MatchesD2lLogitsLossGradientsAndAttention) {
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype);
    model->train();  // dropout 0: training mode only switches the look-ahead mask on in d2l
    const Tensor src = fixture_tensor(kModel, "src"), tgt_in = fixture_tensor(kModel, "tgt_in");
    const Tensor src_lens = fixture_tensor(kModel, "src_valid_lens");
    const Tensor logits = (*model)(src, tgt_in, src_lens);
    EXPECT_TRUE(all_close(logits, fixture_tensor(kModel, "logits"), tol.atol, tol.rtol));
    // d2l's MaskedSoftmaxCELoss, summed over the batch as its training loop does
    const Tensor loss = sum(nn::masked_softmax_ce_loss(logits, fixture_tensor(kModel, "labels"),
                                                       fixture_tensor(kModel, "tgt_valid_lens")));
    EXPECT_TRUE(all_close(loss, fixture_tensor(kModel, "loss"), tol.atol, tol.rtol));
    loss.backward();
    for (const auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      EXPECT_TRUE(all_close(p.grad(), fixture_tensor(kModel, "grad." + name), tol.atol, tol.rtol))
          << name;
    }
    const auto enc = model->transformer_encoder().attention_weights();
    const auto self = model->transformer_decoder().self_attention_weights();
    const auto cross = model->transformer_decoder().cross_attention_weights();
    ASSERT_EQ(enc.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const std::string b = std::to_string(i);
      EXPECT_EQ(enc[i].shape(), (Shape{3, 2, 5, 5}));
      EXPECT_TRUE(
          all_close(enc[i], fixture_tensor(kModel, "enc_weights." + b), tol.atol, tol.rtol));
      EXPECT_TRUE(
          all_close(self[i], fixture_tensor(kModel, "dec_self_weights." + b), tol.atol, tol.rtol));
      EXPECT_TRUE(all_close(cross[i], fixture_tensor(kModel, "dec_cross_weights." + b), tol.atol,
                            tol.rtol));
    }
    // alignment(): the last block's cross-attention averaged over heads, [B, Tout, T]
    const Tensor alignment = model->decoder().alignment();
    EXPECT_EQ(alignment.shape(), (Shape{3, 4, 5}));
    EXPECT_TRUE(all_close(alignment, mean(cross[1], 1), 1e-12, 0));
  }
}

TEST(TransformerTest, TwentyAdamStepsMatchD2l) {
  // The loss before each of 20 Adam(lr = 0.01) steps on the fixture's batch.
  const std::vector<double> torch_losses = fixture_tensor(kModel, "adam_losses").to_vector();
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype);
    optim::Adam adam(model->parameters(), 0.01);
    std::vector<double> losses;
    for (int step = 0; step < 20; ++step) {
      adam.zero_grad();
      const Tensor loss = sum(nn::masked_softmax_ce_loss(
          (*model)(fixture_tensor(kModel, "src"), fixture_tensor(kModel, "tgt_in"),
                   fixture_tensor(kModel, "src_valid_lens")),
          fixture_tensor(kModel, "labels"), fixture_tensor(kModel, "tgt_valid_lens")));
      loss.backward();
      adam.step();
      losses.push_back(loss.item());
    }
    // float32: Adam divides by sqrt(v), so rounding in a small gradient moves
    // a step by more than the rounding; 20 steps stay well within 1e-4.
    const double rtol = tol.dtype == kFloat64 ? 1e-9 : 1e-4;
    EXPECT_TRUE(all_close(tensor(losses, {20}, kFloat64), torch_losses, rtol, rtol));
  }
}

TEST(TransformerTest, WithoutTheLookAheadMaskMatchesD2l) {
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype);
    model->transformer_decoder().causal = false;
    const Tensor logits = (*model)(fixture_tensor(kModel, "src"), fixture_tensor(kModel, "tgt_in"),
                                   fixture_tensor(kModel, "src_valid_lens"));
    EXPECT_TRUE(all_close(logits, fixture_tensor(kModel, "logits_no_causal"), tol.atol, tol.rtol));
    EXPECT_FALSE(all_close(logits, fixture_tensor(kModel, "logits"), 1e-3, 0));
  }
}

// Greedy prediction one step at a time in eval mode (the key/value cache),
// from <bos> = 1: the logits of every step [B, S, V] and the tokens [B, S].
std::pair<Tensor, Tensor> greedy(nn::Transformer& model, const Tensor& src, const Tensor& lens,
                                 int64_t steps) {
  NoGradGuard no_grad;
  model.eval();
  nn::DecoderState state = model.decoder().init_state(model.encoder().forward(src, lens), lens);
  Tensor token = full({src.size(0), 1}, 1, kInt64);
  std::vector<Tensor> logits, tokens;
  for (int64_t s = 0; s < steps; ++s) {
    const Tensor step = model.decoder().forward(token, state);  // [B, 1, V]
    token = argmax(step, 2);                                    // [B, 1]
    logits.push_back(step);
    tokens.push_back(token);
  }
  return {cat(logits, 1), cat(tokens, 1)};
}

TEST(TransformerTest, GreedyDecodingWithTheCacheMatchesD2l) {
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype);
    const auto [logits, tokens] =
        greedy(*model, fixture_tensor(kModel, "src"), fixture_tensor(kModel, "src_valid_lens"), 5);
    EXPECT_TRUE(all_close(logits, fixture_tensor(kModel, "greedy_logits"), tol.atol, tol.rtol));
    EXPECT_TRUE(all_close(tokens, fixture_tensor(kModel, "greedy_tokens"), 0, 0));
  }
}

TEST(TransformerTest, CachedDecodingEqualsTheFullSequence) {
  // Step by step with the cache, and the whole decoded sequence at once with
  // the look-ahead mask: the same logits at every step (eval and training mode).
  manual_seed(6);
  auto model = nn::make_transformer(9, 10, 8, 12, 2, 3, 0.0);
  model->to(kFloat64);
  const Tensor src = tensor({4, 5, 6, 2, 7, 2, 0, 0}, {2, 4}, kInt64), lens = testing::lens({4, 2});
  const auto [step_logits, tokens] = greedy(*model, src, lens, 6);
  // decoder input: <bos>, then the first 5 decoded tokens
  const Tensor tgt_in = cat({full({2, 1}, 1, kInt64), narrow(tokens, 1, 0, 5)}, 1);
  for (const bool training : {false, true}) {
    model->train(training);
    EXPECT_TRUE(all_close((*model)(src, tgt_in, lens), step_logits, 1e-12, 1e-12)) << training;
  }
  // Two steps at once after a cached first step: positions and mask follow the offset.
  model->eval();
  nn::DecoderState state = model->decoder().init_state(model->encoder().forward(src, lens), lens);
  const Tensor first = model->decoder().forward(narrow(tgt_in, 1, 0, 1), state);
  EXPECT_EQ(state.key_values[2].shape(), (Shape{2, 1, 8}));
  const Tensor rest = model->decoder().forward(narrow(tgt_in, 1, 1, 5), state);
  EXPECT_EQ(state.key_values[0].shape(), (Shape{2, 6, 8}));
  EXPECT_TRUE(all_close(cat({first, rest}, 1), step_logits, 1e-12, 1e-12));
  // select_state after the first step (beam search): rows {1, 1, 0} of the
  // encoder's outputs and of every block's cache; the next steps give those
  // rows of the whole batch's logits.
  nn::DecoderState picked = model->decoder().init_state(model->encoder().forward(src, lens), lens);
  const Tensor rows = tensor({1, 1, 0}, {3}, kInt64);
  model->decoder().forward(narrow(tgt_in, 1, 0, 1), picked);
  model->decoder().select_state(picked, rows);
  EXPECT_EQ(picked.key_values[1].shape(), (Shape{3, 1, 8}));
  const Tensor next =
      model->decoder().forward(index_select(narrow(tgt_in, 1, 1, 2), 0, rows), picked);
  EXPECT_TRUE(all_close(next, index_select(narrow(step_logits, 1, 1, 2), 0, rows), 1e-12, 1e-12));
}

TEST(TransformerTest, BothMasksDoTheirJob) {
  manual_seed(7);
  auto model = nn::make_transformer(9, 10, 8, 12, 2, 2, 0.0);
  model->to(kFloat64);
  const Tensor lens = testing::lens({3, 2});
  const Tensor src = tensor({4, 5, 2, 6, 2, 0}, {2, 3}, kInt64);
  const Tensor tgt = tensor({1, 3, 4, 5, 1, 6, 7, 8}, {2, 4}, kInt64);
  const Tensor logits = (*model)(src, tgt, lens);
  // Padding mask: another token at the padded source position changes nothing.
  const Tensor other_pad = tensor({4, 5, 2, 6, 2, 8}, {2, 3}, kInt64);
  EXPECT_TRUE(all_close((*model)(other_pad, tgt, lens), logits, 1e-13, 0));
  // Look-ahead mask: changing the last target token leaves the earlier steps alone...
  const Tensor other_last = tensor({1, 3, 4, 7, 1, 6, 7, 2}, {2, 4}, kInt64);
  const Tensor changed = (*model)(src, other_last, lens);
  EXPECT_TRUE(all_close(narrow(changed, 1, 0, 3), narrow(logits, 1, 0, 3), 1e-13, 0));
  EXPECT_FALSE(all_close(narrow(changed, 1, 3, 1), narrow(logits, 1, 3, 1), 1e-6, 0));
  // ... and without it, the earlier steps see the future.
  model->transformer_decoder().causal = false;
  EXPECT_FALSE(all_close(narrow((*model)(src, other_last, lens), 1, 0, 3),
                         narrow((*model)(src, tgt, lens), 1, 0, 3), 1e-6, 0));
}

TEST(TransformerTest, StreamingAttentionWithoutWeightsGivesTheSameModel) {
  for (const bool training : {false, true}) {
    SCOPED_TRACE(training ? "train" : "eval");
    auto a = fixture_model(kFloat64), b = fixture_model(kFloat64);
    a->train(training);
    b->train(training);
    b->set_need_weights(false);
    const Tensor src = fixture_tensor(kModel, "src"), tgt = fixture_tensor(kModel, "tgt_in");
    const Tensor lens = fixture_tensor(kModel, "src_valid_lens");
    const Tensor la = (*a)(src, tgt, lens), lb = (*b)(src, tgt, lens);
    EXPECT_TRUE(all_close(lb, la, 1e-12, 1e-12));
    sum(la * la).backward();
    sum(lb * lb).backward();
    const auto pa = a->named_parameters(), pb = b->named_parameters();
    for (size_t i = 0; i < pa.size(); ++i)
      EXPECT_TRUE(all_close(pb[i].second.grad(), pa[i].second.grad(), 1e-11, 1e-10)) << pa[i].first;
    for (const Tensor& w : b->transformer_encoder().attention_weights()) EXPECT_FALSE(w.defined());
    for (const Tensor& w : b->transformer_decoder().cross_attention_weights())
      EXPECT_FALSE(w.defined());
    EXPECT_FALSE(b->decoder().alignment().defined());
  }
}

TEST(TransformerTest, GradcheckThroughATinyModel) {
  manual_seed(8);
  auto model = nn::make_transformer(5, 6, 4, 6, 2, 1, 0.0);
  model->to(kFloat64);
  nn::TransformerEncoder& enc = model->transformer_encoder();
  nn::TransformerDecoder& dec = model->transformer_decoder();
  const Tensor src = tensor({2, 3, 4, 1, 0, 0}, {2, 3}, kInt64), lens = testing::lens({3, 1});
  const Tensor tgt = tensor({1, 2, 3, 1, 5, 4}, {2, 3}, kInt64);
  // One parameter of every kind on the path, swapped in from the inputs.
  const auto fn = [&](const std::vector<Tensor>& in) {
    enc.embedding.weight = in[0];
    enc.blks[0].attention.W_q.weight = in[1];
    enc.blks[0].addnorm2.ln.weight = in[2];
    dec.embedding.weight = in[3];
    dec.blks[0].attention1.W_v.weight = in[4];
    dec.blks[0].attention2.W_k.weight = in[5];
    dec.blks[0].ffn.dense1.bias = in[6];
    dec.blks[0].addnorm3.ln.bias = in[7];
    dec.dense.weight = in[8];
    return (*model)(src, tgt, lens);
  };
  EXPECT_TRUE(
      grad_ok(fn, {leaf64({5, 4}), leaf64({4, 4}), leaf64({4}, 0.5, 1.5), leaf64({6, 4}),
                   leaf64({4, 4}), leaf64({4, 4}), leaf64({6}), leaf64({4}), leaf64({6, 4})}));
}

TEST(TransformerTest, BadInput) {
  EXPECT_TRUE(throws_error([] { nn::make_transformer(12, 11, 8, 16, 3, 2); },
                           {"MultiHeadAttention", "num_heads 3"}));
  EXPECT_TRUE(throws_error([] { nn::make_transformer(12, 11, 7, 16, 7, 2); },
                           {"PositionalEncoding", "even"}));
  EXPECT_TRUE(throws_error([] { nn::make_transformer(12, 11, 8, 16, 2, 0); },
                           {"TransformerEncoder", "num_blks"}));
  auto model = nn::make_transformer(12, 11, 8, 16, 2, 2, 0.0);
  nn::Transformer& m = *model;
  const Tensor src = tensor({3, 4, 5, 6, 2, 0}, {2, 3}, kInt64), lens = testing::lens({3, 2});
  const Tensor tgt = tensor({1, 3, 1, 4}, {2, 2}, kInt64);
  EXPECT_NO_THROW(m(src, tgt, lens));
  // tokens out of range
  EXPECT_TRUE(throws_error(
      [&] {
        m(tensor({3, 12, 5, 6, 2, 0}, {2, 3}, kInt64), tgt, lens);
      },
      {"Embedding", "index 12"}));
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tensor({1, 3, 1, -1}, {2, 2}, kInt64), lens);
      },
      {"Embedding", "index -1"}));
  // mismatched lengths
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tgt, testing::lens({3, 2, 1}));
      },
      {"TransformerEncoder", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tgt, testing::lens({3, 4}));
      },
      {"TransformerEncoder", "valid length 4", "3 source steps"}));
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tensor({1, 3, 4}, {3, 1}, kInt64), lens);
      },
      {"TransformerDecoder", "batch size"}));
  // wrong dtypes and ranks
  EXPECT_TRUE(
      throws_error([&] { m(src.to(kFloat32), tgt, lens); }, {"TransformerEncoder", "int64"}));
  EXPECT_TRUE(
      throws_error([&] { m(reshape(src, {6}), tgt, lens); }, {"TransformerEncoder", "[6]"}));
  // a state that is not the decoder's, and a cache from another batch
  nn::DecoderState empty_state;
  EXPECT_TRUE(throws_error([&] { m.decoder().forward(tgt, empty_state); },
                           {"TransformerDecoder", "init_state"}));
  EXPECT_TRUE(throws_error(
      [&] {
        model->transformer_decoder().blks[1].forward(zeros({2, 1, 8}), empty_state, true);
      },
      {"TransformerDecoderBlock", "block 1", "init_state"}));
  nn::DecoderState state = m.decoder().init_state(m.encoder().forward(src, lens), lens);
  m.eval();
  m.decoder().forward(narrow(tgt, 1, 0, 1), state);
  state.tensors[0] = cat({state.tensors[0], state.tensors[0]}, 0);
  EXPECT_TRUE(throws_error(
      [&] {
        m.decoder().forward(tensor({1, 1, 1, 1}, {4, 1}, kInt64), state);
      },
      {"TransformerDecoder", "cached"}));
  // beyond the positional table (max_len 1000)
  EXPECT_TRUE(throws_error(
      [&] {
        m(zeros({1, 1001}, kInt64), tgt, Tensor());
      },
      {"PositionalEncoding", "max_len 1000"}));
}

}  // namespace
}  // namespace ag
