// The fused GRU step ag::gru_cell (against the same cell composed from
// primitives, and gradcheck), the whole-layer ag::gru_layer (against the
// layer step by step, and gradcheck) and nn::GRU (torch.nn.GRU: parameter names and
// order, init, outputs and every gradient against
// tests/fixtures/seq2seq_gru.npz from scripts/make_seq2seq_block_fixtures.py,
// gradcheck through inputs, h0 and all parameters, dropout between layers,
// bad input).
#include <cmath>
#include <iostream>
#include <map>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// ---- gru_cell --------------------------------------------------------------------------

// The reference: the same step composed from primitive ops.
Tensor composed_gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h) {
  const int64_t H = h.size(1);
  const auto gate = [H](const Tensor& t, int64_t i) { return narrow(t, 1, i * H, H); };
  const Tensor r = sigmoid(gate(gi, 0) + gate(gh, 0));
  const Tensor z = sigmoid(gate(gi, 1) + gate(gh, 1));
  const Tensor n = tanh(gate(gi, 2) + r * gate(gh, 2));
  return (1.0 - z) * n + z * h;
}

TEST(GruCellTest, MatchesComposedCellForwardAndBackward) {
  for (const auto& [dtype, tol] : {std::pair{kFloat64, 1e-13}, {kFloat32, 2e-6}}) {
    SCOPED_TRACE(dtype_name(dtype));
    manual_seed(3);
    const int64_t B = 5, H = 7;
    // Pre-activations of a few units, as a trained net gives them.
    const Tensor gi0 = randn({B, 3 * H}, dtype) * 2.0, gh0 = randn({B, 3 * H}, dtype) * 2.0,
                 h0 = uniform({B, H}, -1, 1, dtype), w = randn({B, H}, dtype);
    Tensor grads_fused[3], grads_composed[3];
    for (int fused = 0; fused < 2; ++fused) {
      Tensor gi = gi0.clone().requires_grad_(), gh = gh0.clone().requires_grad_(),
             h = h0.clone().requires_grad_();
      const Tensor out = fused ? gru_cell(gi, gh, h) : composed_gru_cell(gi, gh, h);
      if (fused) {
        EXPECT_EQ(out.grad_fn_name(), "GruCellBackward");
        EXPECT_TRUE(all_close(out, composed_gru_cell(gi0, gh0, h0), tol, tol));
      }
      sum(out * w).backward();
      Tensor* dst = fused ? grads_fused : grads_composed;
      dst[0] = gi.grad(), dst[1] = gh.grad(), dst[2] = h.grad();
    }
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(all_close(grads_fused[i], grads_composed[i], tol, tol));
  }
}

TEST(GruCellTest, SaturatedGatesMatchTheComposedCell) {
  // Pre-activations far out on both sides: sigmoid and tanh at 0 and +-1
  // exactly, no NaN or inf from e^100 in the float32 path.
  const int64_t B = 2, H = 4;
  for (const DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::vector<double> big(static_cast<size_t>(B * 3 * H));
    for (size_t i = 0; i < big.size(); ++i) big[i] = (i % 3 == 0 ? -1 : 1) * (100.0 + i);
    const Tensor gi = tensor(big, {B, 3 * H}, dtype), gh = gi * 0.5,
                 h = uniform({B, H}, -1, 1, dtype);
    const Tensor fused = gru_cell(gi, gh, h);
    EXPECT_FALSE(testing::has_nan(fused));
    EXPECT_TRUE(all_close(fused, composed_gru_cell(gi, gh, h), 1e-6, 1e-6));
  }
}

TEST(GruCellTest, Gradcheck) {
  const int64_t B = 3, H = 4;
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return gru_cell(in[0], in[1], in[2]); },
                      {leaf64({B, 3 * H}, -2, 2), leaf64({B, 3 * H}, -2, 2), leaf64({B, H})}));
  // Only some inputs requiring grad, and a non-contiguous gh.
  const Tensor gi = leaf64({B, 3 * H}).detach(), h = leaf64({B, H}).detach();
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) { return gru_cell(gi, transpose(in[0], 0, 1), h); },
      {leaf64({3 * H, B}, -2, 2)}));
}

TEST(GruCellTest, BadInput) {
  const Tensor h = zeros({2, 3}), g = zeros({2, 9});
  EXPECT_TRUE(throws_error(
      [&] {
        gru_cell(zeros({2, 8}), g, h);
      },
      {"gru_cell", "gi [2, 8]", "gh [2, 9]", "h [2, 3]"}));
  EXPECT_TRUE(throws_error([&] { gru_cell(g, zeros({3, 9}), h); }, {"gru_cell", "gh [3, 9]"}));
  EXPECT_TRUE(throws_error([&] { gru_cell(g, g, zeros({6})); }, {"gru_cell", "h [6]"}));
  EXPECT_TRUE(
      throws_error([&] { gru_cell(g, g.to(kFloat64), h); }, {"gru_cell", "float32", "float64"}));
  EXPECT_TRUE(throws_error([&] { gru_cell(g.to(kInt64), g.to(kInt64), h.to(kInt64)); },
                           {"gru_cell", "int64"}));
  EXPECT_TRUE(throws_error([&] { gru_cell(g, Tensor(), h); }, {"gru_cell", "defined"}));
}

// ---- gru_layer -------------------------------------------------------------------------

// The reference: the layer step by step, one product and one gru_cell per step.
// reverse: from the last position to the first, each h_t stored at its position.
Tensor stepwise_gru_layer(const Tensor& gi, const Tensor& h0, const Tensor& w_hh,
                          const Tensor& b_hh, bool reverse = false) {
  const int64_t T = gi.size(0), B = gi.size(1), G = gi.size(2);
  Tensor h = h0;
  std::vector<Tensor> steps(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) {
    const int64_t t = reverse ? T - 1 - i : i;
    h = gru_cell(reshape(narrow(gi, 0, t, 1), {B, G}), linear(h, w_hh, b_hh), h);
    steps[static_cast<size_t>(t)] = h;
  }
  return stack(steps, 0);
}

TEST(GruLayerTest, MatchesStepwiseLayerForwardAndBackward) {
  for (const auto& [dtype, tol] : {std::pair{kFloat64, 1e-12}, {kFloat32, 1e-5}})
    for (const bool reverse : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (reverse ? " reverse" : " forward"));
      manual_seed(5);
      const int64_t T = 6, B = 3, H = 5;
      const Tensor gi0 = randn({T, B, 3 * H}, dtype), h00 = uniform({B, H}, -1, 1, dtype),
                   w0 = randn({3 * H, H}, dtype) * 0.5, b0 = randn({3 * H}, dtype),
                   weights = randn({T, B, H}, dtype);
      std::vector<Tensor> results[2];
      for (int fused = 0; fused < 2; ++fused) {
        Tensor gi = gi0.clone().requires_grad_(), h0 = h00.clone().requires_grad_(),
               w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
        const Tensor out =
            fused ? gru_layer(gi, h0, w, b, reverse) : stepwise_gru_layer(gi, h0, w, b, reverse);
        if (fused) {
          EXPECT_EQ(out.grad_fn_name(), "GruLayerBackward");
        }
        sum(out * weights).backward();
        results[fused] = {out, gi.grad(), h0.grad(), w.grad(), b.grad()};
      }
      for (size_t i = 0; i < results[0].size(); ++i)
        EXPECT_TRUE(all_close(results[1][i], results[0][i], tol, tol)) << i;
    }
}

TEST(GruLayerTest, Gradcheck) {
  const int64_t T = 3, B = 2, H = 3;
  for (const bool reverse : {false, true})
    EXPECT_TRUE(grad_ok(
        [&](const std::vector<Tensor>& in) {
          return gru_layer(in[0], in[1], in[2], in[3], reverse);
        },
        {leaf64({T, B, 3 * H}, -2, 2), leaf64({B, H}), leaf64({3 * H, H}), leaf64({3 * H})}))
        << (reverse ? "reverse" : "forward");
  // One step; only some inputs requiring grad, and a non-contiguous gi.
  const Tensor h0 = leaf64({B, H}).detach(), b = leaf64({3 * H}).detach();
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) {
        return gru_layer(permute(in[0], {1, 0, 2}), h0, in[1], b);
      },
      {leaf64({B, 1, 3 * H}, -2, 2), leaf64({3 * H, H})}));
}

TEST(GruLayerTest, BadInput) {
  const Tensor gi = zeros({4, 2, 9}), h0 = zeros({2, 3}), w = zeros({9, 3}), b = zeros({9});
  EXPECT_TRUE(throws_error(
      [&] {
        gru_layer(zeros({4, 2, 8}), h0, w, b);
      },
      {"gru_layer", "gi [4, 2, 8]", "h0 [2, 3]", "w_hh [9, 3]", "b_hh [9]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru_layer(gi, zeros({3, 3}), w, b);
      },
      {"gru_layer", "h0 [3, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru_layer(gi, h0, zeros({9, 4}), b);
      },
      {"gru_layer", "w_hh [9, 4]"}));
  EXPECT_TRUE(throws_error([&] { gru_layer(gi, h0, w, zeros({3})); }, {"gru_layer", "b_hh [3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru_layer(zeros({0, 2, 9}), h0, w, b);
      },
      {"gru_layer", "T, B, H >= 1", "gi [0, 2, 9]"}));
  EXPECT_TRUE(throws_error([&] { gru_layer(gi, h0, w.to(kFloat64), b); },
                           {"gru_layer", "float32", "float64"}));
  EXPECT_TRUE(
      throws_error([&] { gru_layer(gi.to(kInt64), h0.to(kInt64), w.to(kInt64), b.to(kInt64)); },
                   {"gru_layer", "int64"}));
  EXPECT_TRUE(throws_error([&] { gru_layer(gi, Tensor(), w, b); }, {"gru_layer", "defined"}));
}

// ---- nn::GRU -----------------------------------------------------------------------------

const char* const kTorchNames[] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                   "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"};

TEST(GruTest, ParametersHaveTorchsNamesOrderShapesAndInit) {
  manual_seed(1);
  nn::GRU gru(4, 6, 2);
  const auto named = gru.named_parameters();
  ASSERT_EQ(named.size(), 8u);
  const Shape shapes[] = {{18, 4}, {18, 6}, {18}, {18}, {18, 6}, {18, 6}, {18}, {18}};
  const double k = 1 / std::sqrt(6.0);
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].first, kTorchNames[i]);
    EXPECT_EQ(named[i].second.shape(), shapes[i]) << kTorchNames[i];
    for (double v : named[i].second.to_vector()) {
      EXPECT_GE(v, -k);
      EXPECT_LE(v, k);
    }
  }
  manual_seed(1);
  nn::GRU again(4, 6, 2);
  for (size_t i = 0; i < named.size(); ++i)
    EXPECT_TRUE(all_close(again.parameters()[i], named[i].second, 0, 0));
}

TEST(GruTest, LoadsTorchsStateDictStrictly) {
  // torch's gru.state_dict() as numpy.savez wrote it.
  const auto state = load_npz(testing::source_path("tests/fixtures/seq2seq_gru_state.npz"));
  ASSERT_EQ(state.size(), 8u);
  nn::GRU gru(4, 6, 2);
  gru.load_state_dict(state, /*strict=*/true);
  for (const auto& [name, value] : gru.state_dict()) {
    EXPECT_TRUE(state.count(name)) << name;
    EXPECT_TRUE(all_close(value, state.at(name), 1e-7, 0)) << name;  // float32 rounding
  }
  nn::GRU one_layer(4, 6, 1);
  EXPECT_TRUE(throws_error([&] { one_layer.load_state_dict(state); },
                           {"GRU.load_state_dict", "unexpected entry 'bias_hh_l1'"}));
}

struct GruTolerance {
  DType dtype;
  double atol, rtol;
};

// The "h0" and "zeros" cases of a torch GRU fixture (gru's state already
// loaded, in tol's dtype): output, h_n and the gradients of x, h0 and every
// parameter of sum(output * w_out) + sum(h_n * w_h).
void expect_matches_torch_cases(nn::GRU& gru, const std::string& file, const GruTolerance& tol) {
  const auto fix = [&](const std::string& name) { return testing::fixture_tensor(file, name); };
  for (const char* c : {"h0", "zeros"}) {
    const std::string name = c;
    SCOPED_TRACE(file + " " + name + ", " + dtype_name(tol.dtype));
    gru.zero_grad();
    Tensor x = fix("x").to(tol.dtype).clone().requires_grad_();
    Tensor h0 = name == "h0" ? fix("h0").to(tol.dtype).clone().requires_grad_() : Tensor();
    auto [output, h_n] = gru(x, h0);
    EXPECT_TRUE(all_close(output, fix(name + ".output"), tol.atol, tol.rtol));
    EXPECT_TRUE(all_close(h_n, fix(name + ".h_n"), tol.atol, tol.rtol));
    (sum(output * fix(name + ".w_out").to(tol.dtype)) + sum(h_n * fix(name + ".w_h").to(tol.dtype)))
        .backward();
    EXPECT_TRUE(all_close(x.grad(), fix(name + ".grad.x"), tol.atol, tol.rtol));
    if (h0.defined()) {
      EXPECT_TRUE(all_close(h0.grad(), fix(name + ".grad.h0"), tol.atol, tol.rtol));
    }
    for (const auto& [param, value] : gru.named_parameters())
      EXPECT_TRUE(all_close(value.grad(), fix(name + ".grad." + param), tol.atol, tol.rtol))
          << param;
  }
}

TEST(GruTest, MatchesTorchOutputsAndGradients) {
  const auto state = load_npz(testing::source_path("tests/fixtures/seq2seq_gru_state.npz"));
  for (const GruTolerance& tol : {GruTolerance{kFloat64, 1e-10, 1e-10}, {kFloat32, 1e-5, 1e-5}}) {
    nn::GRU gru(4, 6, 2);
    gru.to(tol.dtype);
    gru.load_state_dict(state);
    expect_matches_torch_cases(gru, "seq2seq_gru.npz", tol);
  }
}

// torch.nn.GRU(4, 6, 2, bidirectional=True) (scripts/make_seq2seq_block_fixtures.py):
// output [T, B, 2H], h_n [4, B, H] and every gradient, the _reverse
// parameters included.
TEST(GruTest, BidirectionalMatchesTorchOutputsAndGradients) {
  const std::string file = "seq2seq_bigru.npz";
  for (const GruTolerance& tol : {GruTolerance{kFloat64, 1e-10, 1e-10}, {kFloat32, 1e-5, 1e-5}}) {
    nn::GRU gru(4, 6, 2, 0.0, /*bidirectional=*/true);
    gru.to(tol.dtype);
    std::map<std::string, Tensor> state;
    for (const auto& [name, value] : gru.named_parameters())
      state[name] = testing::fixture_tensor(file, name);
    gru.load_state_dict(state, /*strict=*/true);
    EXPECT_EQ(gru.named_parameters()[4].first, "weight_ih_l0_reverse");
    EXPECT_EQ(gru.named_parameters().back().first, "bias_hh_l1_reverse");
    EXPECT_EQ(gru(testing::fixture_tensor(file, "x").to(tol.dtype)).output.shape(),
              (Shape{5, 3, 12}));
    expect_matches_torch_cases(gru, file, tol);
  }
}

// Packed sequences: lengths [5, 2, 3] against torch's pack_padded_sequence.
// The valid steps of the output, h_n (each direction's state at the row's
// last valid step or its first) and every gradient equal torch's; past each
// length the output holds the carried state where torch writes zeros.
TEST(GruTest, BidirectionalWithLengthsMatchesTorchsPackedSequences) {
  const std::string file = "seq2seq_bigru.npz";
  const auto fix = [&](const std::string& name) { return testing::fixture_tensor(file, name); };
  nn::GRU gru(4, 6, 2, 0.0, /*bidirectional=*/true);
  gru.to(kFloat64);
  std::map<std::string, Tensor> state;
  for (const auto& [name, value] : gru.named_parameters()) state[name] = fix(name);
  gru.load_state_dict(state, /*strict=*/true);
  const Tensor& lengths = fix("packed.lengths");
  Tensor x = fix("x").clone().requires_grad_();
  auto [output, h_n] = gru(x, Tensor(), lengths);
  // Zero past each length, as pad_packed_sequence (what a caller masks anyway).
  const Tensor valid = nn::sequence_mask(lengths, 5);  // [B, T] bool
  const Tensor masked = where(unsqueeze(transpose(valid, 0, 1), 2), output, zeros_like(output));
  EXPECT_TRUE(all_close(masked, fix("packed.output"), 1e-10, 1e-10));
  EXPECT_TRUE(all_close(h_n, fix("packed.h_n"), 1e-10, 1e-10));
  (sum(masked * fix("packed.w_out")) + sum(h_n * fix("packed.w_h"))).backward();
  EXPECT_TRUE(all_close(x.grad(), fix("packed.grad.x"), 1e-10, 1e-10));
  for (const auto& [param, value] : gru.named_parameters())
    EXPECT_TRUE(all_close(value.grad(), fix("packed.grad." + param), 1e-10, 1e-10)) << param;
  // No valid output depends on the padding: other values there change nothing.
  const Tensor noisy =
      where(unsqueeze(transpose(valid, 0, 1), 2), fix("x"), full({5, 3, 4}, 9.0, kFloat64));
  EXPECT_TRUE(all_close(where(unsqueeze(transpose(valid, 0, 1), 2),
                              gru(noisy, Tensor(), lengths).output, zeros_like(output)),
                        masked, 1e-12, 0));
}

TEST(GruLayerTest, GradcheckWithLengths) {
  const int64_t T = 4, B = 3, H = 2;
  const Tensor lengths = testing::lens({4, 1, 2});
  for (const bool reverse : {false, true})
    EXPECT_TRUE(grad_ok(
        [&](const std::vector<Tensor>& in) {
          return gru_layer(in[0], in[1], in[2], in[3], reverse, lengths);
        },
        {leaf64({T, B, 3 * H}, -2, 2), leaf64({B, H}), leaf64({3 * H, H}), leaf64({3 * H})}))
        << (reverse ? "reverse" : "forward");
  EXPECT_TRUE(throws_error(
      [&] {
        gru_layer(zeros({4, 3, 6}), zeros({3, 2}), zeros({6, 2}), zeros({6}), true,
                  testing::lens({4, 0, 2}));
      },
      {"gru_layer", "lengths[1] = 0", "[1, T = 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru_layer(zeros({4, 3, 6}), zeros({3, 2}), zeros({6, 2}), zeros({6}), true,
                  testing::lens({4, 2}));
      },
      {"gru_layer", "lengths int64 [B] = [3]", "[2]"}));
}

// Runs gru with its parameters replaced by in[first], in[first + 1], ...
// (registration order), so gradcheck can perturb them.
nn::GRUOutput run_with(nn::GRU& gru, const std::vector<Tensor>& in, size_t first, const Tensor& x,
                       const Tensor& h0) {
  for (size_t k = 0; k < gru.weight_ih.size(); ++k) {
    gru.weight_ih[k] = in[first + 4 * k];
    gru.weight_hh[k] = in[first + 4 * k + 1];
    gru.bias_ih[k] = in[first + 4 * k + 2];
    gru.bias_hh[k] = in[first + 4 * k + 3];
  }
  return gru(x, h0);
}

TEST(GruTest, GradcheckThroughInputsH0AndAllParameters) {
  manual_seed(7);
  nn::GRU gru(3, 4, 2);
  gru.to(kFloat64);
  const int64_t T = 3, B = 2;
  std::vector<Tensor> inputs = {leaf64({T, B, 3}), leaf64({2, B, 4})};
  for (const Tensor& p : gru.parameters()) inputs.push_back(p.detach().clone().requires_grad_());
  // output and h_n in one tensor: every element of both is checked.
  const auto both = [](const nn::GRUOutput& r) {
    return cat({reshape(r.output, {-1}), reshape(r.h_n, {-1})});
  };
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) { return both(run_with(gru, in, 2, in[0], in[1])); },
      inputs));
  // h0 undefined (zeros): no h0 among the inputs.
  std::vector<Tensor> no_h0 = inputs;
  no_h0.erase(no_h0.begin() + 1);
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) { return both(run_with(gru, in, 1, in[0], Tensor())); },
      no_h0));
}

TEST(GruTest, BidirectionalGradcheckThroughInputsH0AndAllParameters) {
  manual_seed(8);
  nn::GRU gru(3, 2, 2, 0.0, /*bidirectional=*/true);
  gru.to(kFloat64);
  const int64_t T = 3, B = 2;
  std::vector<Tensor> inputs = {leaf64({T, B, 3}), leaf64({4, B, 2})};
  for (const Tensor& p : gru.parameters()) inputs.push_back(p.detach().clone().requires_grad_());
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) {
        const nn::GRUOutput r = run_with(gru, in, 2, in[0], in[1]);
        return cat({reshape(r.output, {-1}), reshape(r.h_n, {-1})});
      },
      inputs));
}

// The backward direction of a one-layer bidirectional GRU is a one-way GRU
// with the same weights run over the reversed sequence, its outputs reversed
// back: no position is read out of order.
TEST(GruTest, BackwardDirectionIsTheReversedSequence) {
  manual_seed(9);
  nn::GRU bi(3, 4, 1, 0.0, /*bidirectional=*/true), forward_only(3, 4, 1), backward_only(3, 4, 1);
  const auto named = bi.named_parameters();
  forward_only.load_state_dict({{"weight_ih_l0", named[0].second},
                                {"weight_hh_l0", named[1].second},
                                {"bias_ih_l0", named[2].second},
                                {"bias_hh_l0", named[3].second}});
  backward_only.load_state_dict({{"weight_ih_l0", named[4].second},
                                 {"weight_hh_l0", named[5].second},
                                 {"bias_ih_l0", named[6].second},
                                 {"bias_hh_l0", named[7].second}});
  const int64_t T = 5;
  const Tensor x = randn({T, 2, 3});
  std::vector<Tensor> reversed_steps;
  for (int64_t t = T - 1; t >= 0; --t) reversed_steps.push_back(narrow(x, 0, t, 1));
  const nn::GRUOutput backward_run = backward_only(cat(reversed_steps, 0));
  std::vector<Tensor> back_in_order;
  for (int64_t t = T - 1; t >= 0; --t)
    back_in_order.push_back(narrow(backward_run.output, 0, t, 1));
  const nn::GRUOutput both = bi(x);
  EXPECT_TRUE(
      all_close(both.output, cat({forward_only(x).output, cat(back_in_order, 0)}, 2), 1e-6, 1e-6));
  // h_n: the forward direction's last step, then the backward's (position 0).
  EXPECT_TRUE(all_close(both.h_n, cat({forward_only(x).h_n, backward_run.h_n}, 0), 1e-6, 1e-6));
}

TEST(GruTest, ShapesAndH0Defaults) {
  nn::GRU gru(5, 3, 2);
  const Tensor x = randn({4, 2, 5});
  auto [output, h_n] = gru(x);
  EXPECT_EQ(output.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(h_n.shape(), (Shape{2, 2, 3}));
  // The last step of the output is the last layer's final state.
  EXPECT_TRUE(all_close(reshape(narrow(output, 0, 3, 1), {2, 3}),
                        reshape(narrow(h_n, 0, 1, 1), {2, 3}), 0, 0));
  // A batch-major tensor permuted to time-major (a strided view) works as its copy.
  const Tensor batch_major = randn({2, 4, 5});
  EXPECT_TRUE(all_close(gru(permute(batch_major, {1, 0, 2})).output,
                        gru(permute(batch_major, {1, 0, 2}).contiguous()).output, 0, 0));
  // An undefined h0 means zeros.
  auto [output0, h_n0] = gru(x, zeros({2, 2, 3}));
  EXPECT_TRUE(all_close(output, output0, 0, 0));
  EXPECT_TRUE(all_close(h_n, h_n0, 0, 0));
}

TEST(GruTest, DropoutBetweenLayersInTrainingOnly) {
  manual_seed(11);
  nn::GRU gru(3, 5, 2, /*dropout=*/0.5);
  nn::GRU plain(3, 5, 2);
  plain.load_state_dict(gru.state_dict());
  const Tensor x = randn({4, 3, 3});
  const nn::GRUOutput reference = plain(x);
  // eval: no dropout at all.
  gru.eval();
  const nn::GRUOutput evaluated = gru(x);
  EXPECT_TRUE(all_close(evaluated.output, reference.output, 0, 0));
  EXPECT_TRUE(all_close(evaluated.h_n, reference.h_n, 0, 0));
  // train: layer 0's states are untouched (dropout comes after a layer), the
  // last layer sees a dropped input.
  gru.train();
  const nn::GRUOutput trained = gru(x);
  EXPECT_TRUE(all_close(narrow(trained.h_n, 0, 0, 1), narrow(reference.h_n, 0, 0, 1), 0, 0));
  EXPECT_GT(testing::max_abs_diff(trained.output, reference.output), 1e-3);
  // One layer: nothing comes after it, so dropout changes nothing.
  nn::GRU single(3, 5, 1, 0.5);
  single.train();
  const nn::GRUOutput a = single(x);
  single.eval();
  EXPECT_TRUE(all_close(a.output, single(x).output, 0, 0));
}

TEST(GruTest, BadInput) {
  nn::GRU gru(3, 4, 2);
  EXPECT_TRUE(throws_error(
      [&] {
        gru(zeros({5, 3}));
      },
      {"GRU", "[T, B, input_size = 3]", "[5, 3]"}));
  EXPECT_TRUE(throws_error([&] { gru(zeros({5, 2, 4})); }, {"GRU", "input_size = 3", "[5, 2, 4]"}));
  EXPECT_TRUE(throws_error([&] { gru(zeros({0, 2, 3})); }, {"GRU", "T > 0", "[0, 2, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru(zeros({5, 2, 3}), zeros({1, 2, 4}));
      },
      {"GRU", "h0", "[2, 2, 4]", "[1, 2, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru(zeros({5, 2, 3}), zeros({2, 3, 4}));
      },
      {"GRU", "h0", "[2, 2, 4]", "[2, 3, 4]"}));
  // Bidirectional: h0 holds both directions of every layer.
  nn::GRU bi(3, 4, 2, 0.0, /*bidirectional=*/true);
  EXPECT_TRUE(throws_error(
      [&] {
        bi(zeros({5, 2, 3}), zeros({2, 2, 4}));
      },
      {"GRU", "2*num_layers", "[4, 2, 4]", "[2, 2, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru(zeros({5, 2, 3}, kFloat64));
      },
      {"GRU", "float64", "[5, 2, 3]", "float32"}));
  EXPECT_TRUE(throws_error(
      [&] {
        gru(zeros({5, 2, 3}), zeros({2, 2, 4}, kFloat64));
      },
      {"GRU", "h0", "float64", "float32"}));
  EXPECT_TRUE(throws_error([&] { gru(zeros({5, 2, 3}, kInt64)); }, {"GRU", "int64"}));
  EXPECT_TRUE(throws_error([&] { gru(Tensor()); }, {"GRU", "undefined"}));
  EXPECT_TRUE(throws_error([] { nn::GRU(3, 0); }, {"GRU", "hidden_size 0"}));
  EXPECT_TRUE(throws_error([] { nn::GRU(0, 3); }, {"GRU", "input_size 0"}));
  EXPECT_TRUE(throws_error([] { nn::GRU(3, 3, 0); }, {"GRU", "num_layers 0"}));
  EXPECT_TRUE(throws_error([] { nn::GRU(3, 3, 2, 1.0); }, {"GRU", "dropout", "[0, 1)"}));
  EXPECT_TRUE(throws_error([] { nn::GRU(3, 3, 2, -0.1); }, {"GRU", "dropout"}));
  EXPECT_TRUE(throws_error([] { nn::GRU(3, 3, 2, std::nan("")); }, {"GRU", "dropout"}));
}

}  // namespace
}  // namespace ag
