// additive_scores: the fused op against its composed reference
// sum(w * tanh(unsqueeze(q, 2) + unsqueeze(k, 1)), -1), forward and gradients,
// in float32 and float64 on awkward sizes; float64 gradcheck; the same bits
// for any thread count; the attention modules never build the 4-D tensor; errors.
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

struct Result {
  Tensor scores, dq, dk, dw;
};

// scores and the gradients of sum(scores * weights), fused or composed.
Result run(bool fused, const Tensor& q0, const Tensor& k0, const Tensor& w0,
           const Tensor& weights) {
  Tensor q = q0.detach().clone().requires_grad_();
  Tensor k = k0.detach().clone().requires_grad_();
  Tensor w = w0.detach().clone().requires_grad_();
  const Tensor scores = fused ? additive_scores(q, k, w) : reference::additive_scores(q, k, w);
  sum(scores * weights).backward();
  return {scores.detach(), q.grad(), k.grad(), w.grad()};
}

void expect_fused_matches_reference(int64_t B, int64_t tq, int64_t tk, int64_t h, DType dtype) {
  SCOPED_TRACE("B " + std::to_string(B) + ", Tq " + std::to_string(tq) + ", Tk " +
               std::to_string(tk) + ", h " + std::to_string(h) + ", " + dtype_name(dtype));
  const Tensor q = uniform({B, tq, h}, -2, 2, dtype), k = uniform({B, tk, h}, -2, 2, dtype);
  const Tensor w = uniform({h}, -1, 1, dtype), weights = uniform({B, tq, tk}, -1, 1, dtype);
  const Result fused = run(true, q, k, w, weights), composed = run(false, q, k, w, weights);
  EXPECT_EQ(fused.scores.shape(), (Shape{B, tq, tk}));
  // float32: the same tanh, summed in a different order. dw adds B Tq Tk terms.
  const double tol = dtype == kFloat64 ? 1e-12 : 2e-6;
  const double terms = static_cast<double>(B * tq * tk);
  EXPECT_TRUE(all_close(fused.scores, composed.scores, tol * h, tol));
  EXPECT_TRUE(all_close(fused.dq, composed.dq, tol * tk, tol));
  EXPECT_TRUE(all_close(fused.dk, composed.dk, tol * tq, tol));
  EXPECT_TRUE(all_close(fused.dw, composed.dw, tol * terms, tol));
}

TEST(AdditiveScoresTest, FusedMatchesComposedOnAwkwardSizes) {
  manual_seed(1);
  for (const DType dtype : {kFloat64, kFloat32}) {
    for (const int64_t h : {1, 7, 16, 17, 64}) {
      expect_fused_matches_reference(1, 3, 5, h, dtype);
      expect_fused_matches_reference(3, 4, 2, h, dtype);
      expect_fused_matches_reference(3, 1, 9, h, dtype);
    }
    // Enough query rows for several backward blocks (whose dk and dw are added up).
    expect_fused_matches_reference(3, 100, 33, 17, dtype);
    expect_fused_matches_reference(1, 300, 20, 16, dtype);
  }
}

TEST(AdditiveScoresTest, FusedMatchesComposedWhenTheBackwardRecomputesTanh) {
  // Above 2^20 tanh terms (B Tq Tk h) the forward keeps none and the backward
  // recomputes them; below (every other test here) it reads them back.
  manual_seed(5);
  for (const DType dtype : {kFloat64, kFloat32})
    expect_fused_matches_reference(1, 64, 128, 129, dtype);
}

TEST(AdditiveScoresTest, HandComputedValues) {
  // q = [0, 1], k rows [0, 0] and [1, -1], w = [2, 3]:
  // s[0] = 2 tanh(0) + 3 tanh(1) = 3 tanh(1); s[1] = 2 tanh(1) + 3 tanh(0) = 2 tanh(1).
  for (const DType dtype : {kFloat64, kFloat32}) {
    const Tensor q = tensor({0, 1}, {1, 1, 2}, dtype), k = tensor({0, 0, 1, -1}, {1, 2, 2}, dtype);
    const Tensor s = additive_scores(q, k, tensor({2, 3}, {2}, dtype));
    EXPECT_TRUE(all_close(s, {3 * std::tanh(1.0), 2 * std::tanh(1.0)}, 1e-6, 0));
  }
}

TEST(AdditiveScoresTest, NonContiguousInputs) {
  manual_seed(2);
  // q and k as transposed views, w as a strided slice.
  const Tensor q = transpose(uniform({3, 2, 5}, -1, 1, kFloat64), 0, 1);  // [2, 3, 5]
  const Tensor k = transpose(uniform({4, 2, 5}, -1, 1, kFloat64), 0, 1);  // [2, 4, 5]
  const Tensor w = narrow(uniform({2, 5}, -1, 1, kFloat64), 0, 1, 1);     // [1, 5]
  ASSERT_FALSE(q.is_contiguous());
  const Tensor w1 = reshape(w, {5});
  const Tensor weights = uniform({2, 3, 4}, -1, 1, kFloat64);
  const Result fused = run(true, q, k, w1, weights), composed = run(false, q, k, w1, weights);
  EXPECT_TRUE(all_close(fused.scores, composed.scores, 1e-12));
  EXPECT_TRUE(all_close(fused.dq, composed.dq, 1e-12));
  EXPECT_TRUE(all_close(fused.dk, composed.dk, 1e-12));
  EXPECT_TRUE(all_close(fused.dw, composed.dw, 1e-12));
}

TEST(AdditiveScoresTest, Gradcheck) {
  manual_seed(3);
  const auto fn = [](const std::vector<Tensor>& in) {
    return additive_scores(in[0], in[1], in[2]);
  };
  EXPECT_TRUE(grad_ok(fn, {leaf64({2, 3, 5}), leaf64({2, 4, 5}), leaf64({5})}));
  EXPECT_TRUE(grad_ok(fn, {leaf64({1, 1, 1}), leaf64({1, 2, 1}), leaf64({1})}));
  // Several backward blocks.
  EXPECT_TRUE(grad_ok(fn, {leaf64({1, 70, 3}), leaf64({1, 2, 3}), leaf64({3})}));
  // Large |q + k|: tanh saturates, 1 - t^2 is tiny.
  EXPECT_TRUE(grad_ok(fn, {leaf64({2, 2, 3}, 2, 4), leaf64({2, 3, 3}, 1, 3), leaf64({3})}));
}

TEST(AdditiveScoresTest, SameBitsWithAnyThreadCount) {
  // Rows are split across threads; dk and dw are added up in a fixed order.
  manual_seed(4);
  for (const DType dtype : {kFloat32, kFloat64}) {
    const Tensor q = uniform({2, 130, 24}, -2, 2, dtype), k = uniform({2, 70, 24}, -2, 2, dtype);
    const Tensor w = uniform({24}, -1, 1, dtype), weights = uniform({2, 130, 70}, -1, 1, dtype);
    auto values = [&] {
      const Result r = run(true, q, k, w, weights);
      return std::vector<std::vector<double>>{r.scores.to_vector(), r.dq.to_vector(),
                                              r.dk.to_vector(), r.dw.to_vector()};
    };
    const int threads = get_num_threads();
    set_num_threads(1);
    const auto serial = values();
    set_num_threads(2);
    const auto two = values();
    set_num_threads(std::max(threads, 3));
    const auto many = values();
    set_num_threads(threads);
    EXPECT_EQ(serial, two) << dtype_name(dtype);
    EXPECT_EQ(serial, many) << dtype_name(dtype);
  }
}

// Every tensor of the graph that produced t, as the nodes record their
// inputs (shape and grad_fn name; NodeInput(t) for t itself).
std::vector<NodeInput> graph_tensors(const Tensor& t) {
  std::vector<NodeInput> all, stack{NodeInput(t)};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const NodeInput x = stack.back();
    stack.pop_back();
    if (!x.defined()) continue;
    all.push_back(x);
    const auto& node = x.grad_fn();
    if (!node || !seen.insert(node.get()).second) continue;
    for (const NodeInput& input : node->inputs()) stack.push_back(input);
  }
  return all;
}

TEST(AdditiveScoresTest, AttentionModulesNeverBuildTheFourDimensionalFeatures) {
  manual_seed(5);
  nn::AdditiveAttention d2l(2, 3, 4);
  nn::keras::AdditiveAttention keras(4), unscaled(4, /*use_scale=*/false);
  const std::vector<Tensor> outputs = {
      d2l(randn({2, 3, 3}), randn({2, 5, 2}), randn({2, 5, 2})),
      keras(randn({2, 3, 4}).requires_grad_(), randn({2, 5, 4})),
      unscaled(randn({2, 3, 4}).requires_grad_(), randn({2, 5, 4}))};
  for (const Tensor& out : outputs) {
    bool fused = false;
    for (const NodeInput& x : graph_tensors(out)) {
      EXPECT_LE(x.shape().size(), 3u) << x.grad_fn_name() << " " << shape_str(x.shape());
      fused |= x.grad_fn_name() == "AdditiveScoresBackward";
    }
    EXPECT_TRUE(fused);
  }
}

TEST(AdditiveScoresTest, BadInput) {
  const Tensor q = zeros({2, 3, 4}), k = zeros({2, 5, 4}), w = zeros({4});
  EXPECT_TRUE(throws_error([&] { additive_scores(Tensor(), k, w); },
                           {"additive_scores", "must be defined"}));
  EXPECT_TRUE(throws_error(
      [&] {
        additive_scores(zeros({3, 4}), k, w);
      },
      {"additive_scores", "expected q [B, Tq, h]", "q [3, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        additive_scores(q, k, zeros({1, 4}));
      },
      {"additive_scores", "w [1, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        additive_scores(q, zeros({3, 5, 4}), w);
      },
      {"additive_scores", "batch sizes differ", "q [2, 3, 4]", "k [3, 5, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        additive_scores(q, zeros({2, 5, 6}), w);
      },
      {"additive_scores", "hidden sizes h differ", "k [2, 5, 6]"}));
  EXPECT_TRUE(throws_error([&] { additive_scores(q, k, zeros({5})); },
                           {"additive_scores", "hidden sizes h differ", "w [5]"}));
  EXPECT_TRUE(throws_error([&] { additive_scores(q, k, zeros({4}, kFloat64)); },
                           {"additive_scores", "one floating dtype", "float32, float32, float64"}));
  EXPECT_TRUE(throws_error(
      [&] {
        additive_scores(zeros({2, 3, 4}, kInt64), zeros({2, 5, 4}, kInt64), zeros({4}, kInt64));
      },
      {"additive_scores", "one floating dtype", "int64"}));
}

}  // namespace
}  // namespace ag
