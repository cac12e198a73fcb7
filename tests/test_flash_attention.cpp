// The streaming attention (ag::flash_attention, behind
// nn::functional::scaled_dot_product_attention) against the materialised
// reference (scaled_dot_product_attention_with_weights, composed from matmul,
// masks and softmax): outputs and gradients under every mask kind, awkward
// sizes, float32 and float64; float64 gradcheck; bits independent of the
// thread count; errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"

namespace ag {
namespace {

namespace F = nn::functional;
using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

struct PathResult {
  Tensor out, dq, dk, dv;
};

// The output and the gradients of sum(out * weights): streamed or materialised.
PathResult run(bool streamed, const Tensor& q0, const Tensor& k0, const Tensor& v0,
               const Tensor& mask, bool causal, std::optional<double> scale = std::nullopt) {
  Tensor q = q0.detach().clone().requires_grad_();
  Tensor k = k0.detach().clone().requires_grad_();
  Tensor v = v0.detach().clone().requires_grad_();
  const Tensor out =
      streamed
          ? F::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale)
          : F::scaled_dot_product_attention_with_weights(q, k, v, mask, 0.0, causal, scale).output;
  manual_seed(7);
  sum(out * uniform(out.shape(), -1, 1, out.dtype())).backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

struct Case {
  std::string name;
  Shape q, k, v;  // shapes
  Tensor mask;    // bool or float32 (converted to the dtype under test), or undefined
  bool causal = false;
  // The kernel folds a positive scale into its exp; with an additive mask or
  // a scale <= 0 it scales the scores in the mask pass instead.
  std::optional<double> scale = std::nullopt;
};

void expect_streamed_matches_reference(const Case& c, DType dtype) {
  SCOPED_TRACE(c.name + ", " + dtype_name(dtype));
  manual_seed(3);
  const Tensor q = uniform(c.q, -2, 2, dtype), k = uniform(c.k, -2, 2, dtype),
               v = uniform(c.v, -1, 1, dtype);
  const Tensor mask = c.mask.defined() && c.mask.dtype() != kBool ? c.mask.to(dtype) : c.mask;
  const PathResult s = run(true, q, k, v, mask, c.causal, c.scale),
                   r = run(false, q, k, v, mask, c.causal, c.scale);
  const double tol = dtype == kFloat64 ? 1e-12 : 2e-5;
  const double keys = static_cast<double>(c.k[c.k.size() - 2]);
  EXPECT_TRUE(all_close(s.out, r.out, tol, tol));
  EXPECT_TRUE(all_close(s.dq, r.dq, tol * std::sqrt(keys + 1), tol));
  EXPECT_TRUE(all_close(s.dk, r.dk, tol * std::sqrt(keys + 1), tol));
  EXPECT_TRUE(all_close(s.dv, r.dv, tol * std::sqrt(keys + 1), tol));
}

Tensor random_keep(const Shape& shape) {
  return lt(rand(shape), scalar_tensor(0.7));
}

std::vector<Case> cases() {
  manual_seed(11);
  std::vector<Case> out;
  out.push_back({"no mask", {2, 5, 8}, {2, 7, 8}, {2, 7, 8}, Tensor()});
  for (const int64_t d : {1, 3, 17, 33})
    out.push_back({"E " + std::to_string(d), {2, 9, d}, {2, 6, d}, {2, 6, 5}, Tensor()});
  out.push_back({"Ev != E", {1, 4, 16}, {1, 11, 16}, {1, 11, 3}, Tensor()});
  out.push_back({"one key", {3, 5, 4}, {3, 1, 4}, {3, 1, 2}, Tensor()});
  out.push_back({"2500 keys", {1, 70, 8}, {1, 2500, 8}, {1, 2500, 6}, Tensor()});
  out.push_back({"causal L = S", {2, 70, 8}, {2, 70, 8}, {2, 70, 8}, Tensor(), true});
  out.push_back({"causal L < S", {2, 5, 8}, {2, 9, 8}, {2, 9, 4}, Tensor(), true});
  out.push_back({"causal L > S", {1, 130, 8}, {1, 600, 8}, {1, 600, 4}, Tensor(), true});
  out.push_back({"causal, long", {1, 700, 4}, {1, 700, 4}, {1, 700, 4}, Tensor(), true});
  out.push_back({"keep [L, S]", {2, 6, 8}, {2, 9, 8}, {2, 9, 8}, random_keep({6, 9})});
  out.push_back({"keep [B, 1, S]", {3, 6, 8}, {3, 9, 8}, {3, 9, 8}, random_keep({3, 1, 9})});
  out.push_back({"keep [B, L, S]", {3, 6, 8}, {3, 9, 8}, {3, 9, 8}, random_keep({3, 6, 9})});
  out.push_back({"keep + causal", {2, 9, 8}, {2, 9, 8}, {2, 9, 8}, random_keep({2, 9, 9}), true});
  // Row 0 of item 0 sees nothing, and neither does item 1: zero rows, zero gradients.
  const Tensor rows_off = testing::bools({0, 1, 1, 1, 0, 0, 0, 0}, {2, 4, 1});
  out.push_back({"fully masked rows", {2, 4, 8}, {2, 5, 8}, {2, 5, 8}, rows_off});
  out.push_back({"additive", {2, 6, 8}, {2, 9, 8}, {2, 9, 8}, uniform({2, 6, 9}, -3, 3, kFloat32)});
  Tensor with_inf = uniform({6, 9}, -3, 3, kFloat32);
  with_inf = masked_fill(with_inf, random_keep({6, 9}), -std::numeric_limits<double>::infinity());
  out.push_back({"additive -inf", {2, 6, 8}, {2, 9, 8}, {2, 9, 8}, with_inf});
  out.push_back(
      {"batch broadcast", {2, 3, 5, 8}, {1, 3, 7, 8}, {2, 1, 7, 4}, random_keep({2, 1, 5, 7})});
  out.push_back({"4-D heads", {2, 4, 65, 16}, {2, 4, 80, 16}, {2, 4, 80, 16}, Tensor(), true});
  for (const double scale : {1.7, 0.0, -0.5}) {
    const std::string name = "scale " + std::to_string(scale);
    const Shape k{2, 9, 8}, v{2, 9, 4};
    const Tensor additive = uniform({6, 9}, -3, 3, kFloat32);
    out.push_back({name, {2, 6, 8}, k, v, Tensor(), false, scale});
    out.push_back({name + ", keep + causal", {2, 9, 8}, k, v, random_keep({9, 9}), true, scale});
    out.push_back({name + ", additive", {2, 6, 8}, k, v, additive, false, scale});
  }
  return out;
}

TEST(FlashAttentionTest, MatchesMaterialisedReference) {
  for (const DType dtype : {kFloat64, kFloat32})
    for (const Case& c : cases()) expect_streamed_matches_reference(c, dtype);
}

TEST(FlashAttentionTest, FullyMaskedRowsAreZeroWithZeroGradients) {
  Tensor q = leaf64({1, 2, 3}), k = leaf64({1, 4, 3}), v = leaf64({1, 4, 2});
  const Tensor keep = testing::bools({0, 0, 0, 0, 1, 0, 1, 0}, {1, 2, 4});
  const Tensor out = F::scaled_dot_product_attention(q, k, v, keep);
  EXPECT_FALSE(testing::has_nan(out));
  EXPECT_TRUE(all_close(narrow(out, 1, 0, 1), {0, 0}, 0, 0));
  sum(out).backward();
  EXPECT_TRUE(all_close(narrow(q.grad(), 1, 0, 1), {0, 0, 0}, 0, 0));
  // Keys 1 and 3 are masked for every row: no gradient reaches them.
  EXPECT_TRUE(all_close(narrow(k.grad(), 1, 1, 1), {0, 0, 0}, 0, 0));
  EXPECT_TRUE(all_close(narrow(v.grad(), 1, 3, 1), {0, 0}, 0, 0));
}

// A float mask that shifts a whole row by -1e9 (not masked: shifted, so in
// float32 the row's weights are uniform). The backward used to recompute the
// weights as exp(s - lse) with lse = m + log l, which rounds to m at 1e9
// (float32's spacing there is 64): weights, and gradients, l times too large
// (found by tests/test_differential.cpp, graph 26: dq twice PyTorch's).
TEST(FlashAttentionTest, RowShiftedByAHugeFloatMaskHasTheReferenceGradient) {
  for (const DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    manual_seed(11);
    const Tensor q = uniform({1, 2, 3}, -1, 1, dtype), k = uniform({1, 4, 3}, -1, 1, dtype),
                 v = uniform({1, 4, 2}, -1, 1, dtype);
    // row 0: every key shifted by -1e9; row 1: one key shifted, the rest kept
    const Tensor mask = tensor({-1e9, -1e9, -1e9, -1e9, 0, -1e9, 0.5, 0}, {1, 2, 4}, dtype);
    const PathResult s = run(true, q, k, v, mask, false), r = run(false, q, k, v, mask, false);
    const double tol = dtype == kFloat64 ? 1e-12 : 2e-5;
    EXPECT_TRUE(all_close(s.out, r.out, tol, tol));
    EXPECT_TRUE(all_close(s.dq, r.dq, tol, tol));
    EXPECT_TRUE(all_close(s.dk, r.dk, tol, tol));
    EXPECT_TRUE(all_close(s.dv, r.dv, tol, tol));
  }
}

// The mask broadcasts to the scores with the batch dims of query, key and
// value: a mask as large as value's batch (query and key's batch is 1) used
// to be accepted by the streaming path and refused by the materialised one
// (found by tests/test_differential.cpp, graph 339).
TEST(FlashAttentionTest, MaskWithValuesBatchWorksOnBothPaths) {
  manual_seed(12);
  const Tensor q = uniform({1, 2, 3}, -1, 1, kFloat64), k = uniform({1, 4, 3}, -1, 1, kFloat64),
               v = uniform({3, 4, 2}, -1, 1, kFloat64);
  const Tensor keep = testing::bools({1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1}, {3, 1, 4});
  const PathResult s = run(true, q, k, v, keep, false), r = run(false, q, k, v, keep, false);
  EXPECT_EQ(r.out.shape(), (Shape{3, 2, 2}));
  EXPECT_TRUE(all_close(s.out, r.out, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(s.dq, r.dq, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(s.dk, r.dk, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(s.dv, r.dv, 1e-12, 1e-12));
}

// Lengths (d2l's valid_lens) through the core op, against the keep mask they stand for.
TEST(FlashAttentionTest, LengthsMatchTheirKeepMask) {
  manual_seed(5);
  for (const DType dtype : {kFloat64, kFloat32}) {
    const Tensor q = uniform({3, 70, 8}, -2, 2, dtype), k = uniform({3, 600, 8}, -2, 2, dtype),
                 v = uniform({3, 600, 5}, -1, 1, dtype);
    const Tensor per_item = testing::lens({0, 513, 600});
    Tensor per_row = (rand({3, 70}) * 601).to(kInt64);
    for (const Tensor& lengths : {per_item, per_row}) {
      AttentionMasks masks;
      masks.lengths = lengths.dim() == 1 ? reshape(lengths, {3, 1}) : lengths;
      const Tensor streamed = flash_attention(q, k, v, 0.3, masks);
      const Tensor keep = nn::lengths_to_keep(lengths, {3, 70, 600});
      const Tensor reference =
          F::scaled_dot_product_attention_with_weights(q, k, v, keep, 0.0, false, 0.3).output;
      EXPECT_TRUE(all_close(streamed, reference, dtype == kFloat64 ? 1e-12 : 2e-5, 1e-5));
    }
  }
}

TEST(FlashAttentionTest, Gradcheck) {
  const Tensor keep = testing::bools({1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0}, {3, 4});
  const Tensor additive = uniform({1, 3, 4}, -1, 1, kFloat64);
  for (int variant = 0; variant < 5; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    AttentionMasks masks;
    if (variant == 1) masks.causal = true;
    if (variant == 2) masks.keep = keep;
    if (variant == 3) masks.additive = additive;
    if (variant == 4) {
      masks.lengths = testing::lens({1, 0}, {2, 1});
      masks.masked_rows_uniform = true;
    }
    EXPECT_TRUE(grad_ok(
        [&](const std::vector<Tensor>& x) { return flash_attention(x[0], x[1], x[2], 0.7, masks); },
        {leaf64({2, 3, 5}), leaf64({2, 4, 5}), leaf64({2, 4, 3})}));
  }
  // Broadcast batch dims: k and v shared by both items.
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& x) {
        return F::scaled_dot_product_attention(x[0], x[1], x[2]);
      },
      {leaf64({2, 3, 5}), leaf64({1, 4, 5}), leaf64({4, 3})}));
}

TEST(FlashAttentionTest, SameBitsForAnyThreadCount) {
  manual_seed(9);
  const Tensor q = randn({5, 300, 32}), k = randn({5, 700, 32}), v = randn({5, 700, 24});
  const Tensor keep = random_keep({5, 1, 700});
  std::vector<PathResult> results;
  const int threads = get_num_threads();
  for (const int n : {1, 2, 3}) {
    set_num_threads(n);
    results.push_back(run(true, q, k, v, keep, true));
  }
  set_num_threads(threads);
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_EQ(testing::max_abs_diff(results[i].out, results[0].out), 0.0);
    EXPECT_EQ(testing::max_abs_diff(results[i].dq, results[0].dq), 0.0);
    EXPECT_EQ(testing::max_abs_diff(results[i].dk, results[0].dk), 0.0);
    EXPECT_EQ(testing::max_abs_diff(results[i].dv, results[0].dv), 0.0);
  }
}

TEST(FlashAttentionTest, BadInputNamesTheOpAndShapes) {
  const Tensor q = zeros({2, 3, 4}), k = zeros({2, 5, 4}), v = zeros({2, 5, 6});
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, zeros({2, 5, 3}), v);
      },
      {"scaled_dot_product_attention", "[2, 3, 4]", "[2, 5, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, k, zeros({2, 4, 6}));
      },
      {"scaled_dot_product_attention", "[2, 5, 4]", "[2, 4, 6]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({3, 4}, kBool));
      },
      {"scaled_dot_product_attention", "[3, 4]", "[2, 3, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, zeros({3, 5}, kFloat64));
      },
      {"scaled_dot_product_attention", "float64"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::scaled_dot_product_attention(q, k, zeros({3, 5, 6}));
      },
      {"scaled_dot_product_attention", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        flash_attention(q, k, v, 1.0, {Tensor(), Tensor(), ones({2, 4}, kInt64)});
      },
      {"flash_attention", "lengths [2, 4]", "[2, 3]"}));
}

}  // namespace
}  // namespace ag
