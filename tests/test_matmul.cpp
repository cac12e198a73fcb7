// mm, bmm, matmul and linear: every torch.matmul rank combination, strided
// (transposed, permuted, broadcast) operands, gradients, and errors.
//
// The reference is matmul composed from broadcasting primitives,
//   A @ B = sum_k A[..., :, k, None] * B[..., None, k, :]
// which shares no code with the GEMM path, so it also checks the gradients.
#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// torch.matmul semantics from unsqueeze, mul (broadcasting) and sum.
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  const Tensor a2 = a.dim() == 1 ? unsqueeze(a, 0) : a;       // [..., M, K]
  const Tensor b2 = b.dim() == 1 ? unsqueeze(b, 1) : b;       // [..., K, N]
  Tensor r = sum(unsqueeze(a2, -1) * unsqueeze(b2, -3), -2);  // [..., M, K, 1] * [..., 1, K, N]
  if (a.dim() == 1) r = squeeze(r, -2);
  if (b.dim() == 1) r = squeeze(r, -1);
  return r;
}

// Runs `ours` and `reference` on fresh copies of the same leaves and compares
// the output and the gradient of sum(out * w) for every leaf.
void expect_same_as_reference(const std::function<Tensor(const std::vector<Tensor>&)>& ours,
                              const std::function<Tensor(const std::vector<Tensor>&)>& reference,
                              const std::vector<Shape>& shapes, double tol = 1e-12) {
  std::vector<Tensor> x, y;
  for (const Shape& s : shapes) {
    Tensor leaf = leaf64(s);
    x.push_back(leaf);
    y.push_back(leaf.detach().clone().requires_grad_());
  }
  const Tensor out = ours(x), expected = reference(y);
  ASSERT_TRUE(all_close(out, expected, tol, tol));
  const Tensor w = uniform(out.shape(), 0.5, 1.5, kFloat64);
  sum(out * w).backward();
  sum(expected * w).backward();
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(all_close(x[i].grad(), y[i].grad(), tol, tol)) << "input " << i;
}

Tensor apply_matmul(const std::vector<Tensor>& in) {
  return matmul(in[0], in[1]);
}
Tensor apply_reference(const std::vector<Tensor>& in) {
  return reference_matmul(in[0], in[1]);
}

TEST(MatmulTest, HandComputedValues) {
  const Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = tensor({7, 8, 9, 10, 11, 12}, {3, 2});
  // [[1*7 + 2*9 + 3*11, 1*8 + 2*10 + 3*12], [4*7 + 5*9 + 6*11, 4*8 + 5*10 + 6*12]]
  EXPECT_TRUE(all_close(mm(a, b), {58, 64, 139, 154}));
  EXPECT_TRUE(all_close(matmul(a, b), {58, 64, 139, 154}));
  const Tensor u = tensor({1, 2, 3}), v = tensor({4, 5, 6});
  const Tensor dot = matmul(u, v);  // 1-D @ 1-D: a 0-d dot product
  EXPECT_EQ(dot.shape(), Shape{});
  EXPECT_EQ(dot.item(), 32);
  EXPECT_TRUE(all_close(matmul(a, v), {32, 77}));                    // [2, 3] @ [3] -> [2]
  EXPECT_TRUE(all_close(matmul(tensor({1, -1}), a), {-3, -3, -3}));  // [2] @ [2, 3] -> [3]
}

TEST(MatmulTest, EveryRankCombinationMatchesTheReference) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4}, {4}},                 // dot
      {{4}, {4, 3}},              // vector @ matrix
      {{2, 4}, {4}},              // matrix @ vector
      {{2, 4}, {4, 3}},           // matrix @ matrix
      {{5, 2, 4}, {4}},           // batch @ vector
      {{4}, {5, 4, 3}},           // vector @ batch
      {{5, 2, 4}, {4, 3}},        // batch @ shared matrix
      {{2, 4}, {5, 4, 3}},        // shared matrix @ batch
      {{5, 2, 4}, {5, 4, 3}},     // batch @ batch
      {{1, 2, 4}, {5, 4, 3}},     // size-1 batch broadcast
      {{2, 1, 2, 4}, {3, 4, 3}},  // batch dims broadcast on both sides
      {{2, 1, 3, 4}, {1, 5, 4, 2}},
      {{3, 1, 2, 4}, {4, 1}},  // N = 1
      {{1, 4}, {2, 3, 4, 1}},  // M = 1, K = 4, N = 1
  };
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(shape_str(sa) + " @ " + shape_str(sb));
    expect_same_as_reference(apply_matmul, apply_reference, {sa, sb});
  }
}

TEST(MatmulTest, OutputShapesFollowTorch) {
  EXPECT_EQ(matmul(ones({3}), ones({3})).shape(), Shape{});
  EXPECT_EQ(matmul(ones({3}), ones({3, 5})).shape(), (Shape{5}));
  EXPECT_EQ(matmul(ones({2, 3}), ones({3})).shape(), (Shape{2}));
  EXPECT_EQ(matmul(ones({7, 2, 3}), ones({3})).shape(), (Shape{7, 2}));
  EXPECT_EQ(matmul(ones({3}), ones({7, 3, 5})).shape(), (Shape{7, 5}));
  EXPECT_EQ(matmul(ones({2, 1, 4, 3}), ones({6, 3, 5})).shape(), (Shape{2, 6, 4, 5}));
  EXPECT_EQ(bmm(ones({4, 2, 3}), ones({4, 3, 5})).shape(), (Shape{4, 2, 5}));
}

TEST(MatmulTest, GradcheckEveryForm) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4}, {4}},          {{4}, {4, 3}},       {{2, 4}, {4}},    {{2, 4}, {4, 3}},
      {{3, 2, 4}, {4, 3}}, {{2, 4}, {3, 4, 3}}, {{3, 2, 4}, {4}}, {{2, 1, 2, 4}, {3, 4, 2}},
  };
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(shape_str(sa) + " @ " + shape_str(sb));
    EXPECT_TRUE(grad_ok(apply_matmul, {leaf64(sa), leaf64(sb)}));
  }
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return mm(in[0], in[1]); },
                      {leaf64({3, 4}), leaf64({4, 2})}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
                      {leaf64({2, 3, 4}), leaf64({2, 4, 5})}));
  // The same tensor on both sides: its two gradients add up.
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return matmul(in[0], in[0]); },
                      {leaf64({3, 3})}));
}

// ---- strided operands: described to the kernel, or copied when they must be ----

TEST(MatmulTest, TransposedViewsAsOperands) {
  // x^T with strides (1, ld): read column-major in place.
  auto transposed_a = [](const std::vector<Tensor>& in) {
    return matmul(transpose(in[0], 0, 1), in[1]);
  };
  auto transposed_a_ref = [](const std::vector<Tensor>& in) {
    return reference_matmul(transpose(in[0], 0, 1), in[1]);
  };
  expect_same_as_reference(transposed_a, transposed_a_ref, {{4, 3}, {4, 5}});
  EXPECT_TRUE(grad_ok(transposed_a, {leaf64({4, 3}), leaf64({4, 5})}));

  auto both = [](const std::vector<Tensor>& in) {
    return matmul(transpose(in[0], -1, -2), transpose(in[1], -1, -2));
  };
  auto both_ref = [](const std::vector<Tensor>& in) {
    return reference_matmul(transpose(in[0], -1, -2), transpose(in[1], -1, -2));
  };
  expect_same_as_reference(both, both_ref, {{2, 4, 3}, {5, 4}});
  EXPECT_TRUE(grad_ok(both, {leaf64({2, 4, 3}), leaf64({5, 4})}));
}

TEST(MatmulTest, BmmWithTransposedKeys) {
  // The attention score q k^T: k [B, T, d] transposed to [B, d, T].
  auto scores = [](const std::vector<Tensor>& in) { return bmm(in[0], transpose(in[1], 1, 2)); };
  auto scores_ref = [](const std::vector<Tensor>& in) {
    return reference_matmul(in[0], transpose(in[1], 1, 2));
  };
  expect_same_as_reference(scores, scores_ref, {{3, 4, 5}, {3, 6, 5}});
  EXPECT_TRUE(grad_ok(scores, {leaf64({3, 4, 5}), leaf64({3, 6, 5})}));
  EXPECT_EQ(scores({ones({3, 4, 5}).requires_grad_(), ones({3, 6, 5})}).grad_fn_name(),
            "BmmBackward");
  // k^T's gradient comes in k's layout (a transposed view of a contiguous
  // [B, T, d]), so the transpose's backward hands k a contiguous gradient,
  // which the heads' reshape (transpose_qkv) then takes without a copy.
  const Tensor k = ones({3, 6, 5}).requires_grad_();
  Tensor kt = transpose(k, 1, 2);
  Tensor seen;
  kt.register_hook([&](const Tensor& g) {
    seen = g;
    return Tensor();
  });
  sum(bmm(ones({3, 4, 5}), kt)).backward();
  ASSERT_TRUE(seen.defined());
  EXPECT_EQ(seen.shape(), (Shape{3, 5, 6}));
  EXPECT_TRUE(transpose(seen, 1, 2).is_contiguous());
  EXPECT_TRUE(all_close(seen, full({3, 5, 6}, 4.0), 0, 0));
}

TEST(MatmulTest, PermutedAndBroadcastLayouts) {
  // Batch dim moved inward: [M, B, K] permuted to [B, M, K] has batch stride K
  // and row stride B*K; no single-stride description of its rows is lost.
  auto permuted = [](const std::vector<Tensor>& in) {
    return matmul(permute(in[0], {1, 0, 2}), in[1]);
  };
  auto permuted_ref = [](const std::vector<Tensor>& in) {
    return reference_matmul(permute(in[0], {1, 0, 2}), in[1]);
  };
  expect_same_as_reference(permuted, permuted_ref, {{3, 2, 4}, {2, 4, 5}});
  EXPECT_TRUE(grad_ok(permuted, {leaf64({3, 2, 4}), leaf64({2, 4, 5})}));

  // Last two dims neither row- nor column-contiguous: [K, M, 2] -> [2, M, K]
  // has matrix strides (2, 2M), which the kernel cannot read: copied.
  auto scrambled = [](const std::vector<Tensor>& in) {
    return matmul(permute(in[0], {2, 1, 0}), in[1]);
  };
  auto scrambled_ref = [](const std::vector<Tensor>& in) {
    return reference_matmul(permute(in[0], {2, 1, 0}), in[1]);
  };
  expect_same_as_reference(scrambled, scrambled_ref, {{4, 3, 2}, {4, 5}});
  EXPECT_TRUE(grad_ok(scrambled, {leaf64({4, 3, 2}), leaf64({4, 5})}));

  // Expanded operands: a repeated row (row stride 0) and a batch broadcast
  // by expand rather than by matmul.
  auto expanded = [](const std::vector<Tensor>& in) {
    return matmul(expand(in[0], {3, 2, 4}), expand(in[1], {3, 4, 5}));
  };
  auto expanded_ref = [](const std::vector<Tensor>& in) {
    return reference_matmul(expand(in[0], {3, 2, 4}), expand(in[1], {3, 4, 5}));
  };
  expect_same_as_reference(expanded, expanded_ref, {{1, 4}, {4, 5}});
  EXPECT_TRUE(grad_ok(expanded, {leaf64({1, 4}), leaf64({4, 5})}));
}

TEST(MatmulTest, SharedWeightGradientIsSummedOverTheBatch) {
  const Tensor x = leaf64({4, 3, 5});
  const Tensor w = leaf64({5, 2});
  sum(matmul(x, w)).backward();
  // L = sum_b sum_m sum_n (x_b W)[m, n]  =>  dL/dW[k, n] = sum_b sum_m x[b, m, k]
  const Tensor expected = expand(unsqueeze(sum(x.detach(), {0, 1}), 1), {5, 2});
  EXPECT_TRUE(all_close(w.grad(), expected, 1e-12, 1e-12));
  // And the shared left operand of [2, 4] @ [3, 4, 5]: dA = sum_b G B_b^T.
  expect_same_as_reference(apply_matmul, apply_reference, {{2, 4}, {3, 4, 5}});
}

TEST(MatmulTest, LargerShapesMatchTheReference) {
  // Sizes that are not multiples of any SIMD width or block size.
  expect_same_as_reference(apply_matmul, apply_reference, {{3, 37, 29}, {29, 41}}, 1e-10);
  expect_same_as_reference(apply_matmul, apply_reference, {{2, 33, 65}, {2, 65, 17}}, 1e-10);
  auto scores = [](const std::vector<Tensor>& in) { return bmm(in[0], transpose(in[1], 1, 2)); };
  auto scores_ref = [](const std::vector<Tensor>& in) {
    return reference_matmul(in[0], transpose(in[1], 1, 2));
  };
  expect_same_as_reference(scores, scores_ref, {{2, 31, 24}, {2, 45, 24}}, 1e-10);
}

TEST(MatmulTest, EmptyDims) {
  EXPECT_EQ(matmul(ones({0, 3}), ones({3, 4})).shape(), (Shape{0, 4}));
  EXPECT_EQ(matmul(ones({0, 2, 3}), ones({3, 4})).shape(), (Shape{0, 2, 4}));
  // K = 0: a sum over nothing is zero.
  const Tensor a = ones({2, 0}, kFloat64).requires_grad_();
  const Tensor b = ones({0, 3}, kFloat64).requires_grad_();
  const Tensor c = matmul(a, b);
  EXPECT_TRUE(all_close(c, std::vector<double>(6, 0.0)));
  sum(c).backward();
  EXPECT_EQ(a.grad().shape(), (Shape{2, 0}));
  EXPECT_EQ(b.grad().shape(), (Shape{0, 3}));
}

TEST(MatmulTest, Float32AgreesWithFloat64) {
  const Tensor a = uniform({3, 19, 33}, -1, 1, kFloat64), b = uniform({33, 21}, -1, 1, kFloat64);
  const Tensor c64 = matmul(a, b);
  const Tensor c32 = matmul(a.to(kFloat32), b.to(kFloat32));
  EXPECT_EQ(c32.dtype(), kFloat32);
  EXPECT_TRUE(all_close(c32, c64, 1e-5, 1e-5));
  const Tensor x = uniform({4, 6, 10}, -1, 1, kFloat64), w = uniform({7, 10}, -1, 1, kFloat64);
  EXPECT_TRUE(all_close(linear(x.to(kFloat32), w.to(kFloat32)), linear(x, w), 1e-5, 1e-5));
}

TEST(MatmulTest, NodeNames) {
  const Tensor a = ones({2, 3}).requires_grad_(), b = ones({3, 2});
  EXPECT_EQ(mm(a, b).grad_fn_name(), "MmBackward");
  EXPECT_EQ(matmul(a, b).grad_fn_name(), "MatmulBackward");
  EXPECT_EQ(bmm(ones({1, 2, 3}).requires_grad_(), ones({1, 3, 2})).grad_fn_name(), "BmmBackward");
  EXPECT_EQ(linear(a, ones({4, 3})).grad_fn_name(), "LinearBackward");
  EXPECT_TRUE(mm(ones({2, 3}), b).is_leaf());  // nothing requires grad: nothing recorded
}

// ---- linear -------------------------------------------------------------------------------

Tensor reference_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor y = reference_matmul(x, transpose(w, 0, 1));
  return b.defined() ? y + b : y;
}

TEST(LinearTest, HandComputedValues) {
  const Tensor x = tensor({1, 2, 3, 4}, {2, 2});
  const Tensor w = tensor({1, 0, 0, 1, 1, 1}, {3, 2});  // [out = 3, in = 2]
  const Tensor b = tensor({10, 20, 30});
  // y = x W^T + b: [[1, 2, 3], [3, 4, 7]] + b
  EXPECT_TRUE(all_close(linear(x, w, b), {11, 22, 33, 13, 24, 37}));
  EXPECT_TRUE(all_close(linear(x, w), {1, 2, 3, 3, 4, 7}));
  EXPECT_TRUE(all_close(linear(tensor({1, 2}), w, b), {11, 22, 33}));
}

TEST(LinearTest, AnyRankWithAndWithoutBias) {
  // inputs: x, W [4, 5], and b [4] when given
  auto ours = [](const std::vector<Tensor>& in) {
    return linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor());
  };
  auto reference = [](const std::vector<Tensor>& in) {
    return reference_linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor());
  };
  for (const Shape& xs : {Shape{5}, Shape{3, 5}, Shape{2, 3, 5}, Shape{2, 1, 3, 5}}) {
    Shape out = xs;
    out.back() = 4;
    SCOPED_TRACE(shape_str(xs));
    expect_same_as_reference(ours, reference, {xs, {4, 5}});
    expect_same_as_reference(ours, reference, {xs, {4, 5}, {4}});
    EXPECT_TRUE(grad_ok(ours, {leaf64(xs), leaf64({4, 5})}));
    EXPECT_TRUE(grad_ok(ours, {leaf64(xs), leaf64({4, 5}), leaf64({4})}));
    EXPECT_EQ(ours({ones(xs), ones({4, 5})}).shape(), out);
    EXPECT_EQ(ours({ones(xs), ones({4, 5}), ones({4})}).shape(), out);
  }
}

TEST(LinearTest, StridedInputsAndWeights) {
  // x^T (column-major rows), x with a batch dim moved (rows do not merge: a
  // copy), and a weight that is itself a transposed view.
  auto col_major = [](const std::vector<Tensor>& in) {
    return linear(transpose(in[0], 0, 1), in[1], in[2]);
  };
  auto col_major_ref = [](const std::vector<Tensor>& in) {
    return reference_linear(transpose(in[0], 0, 1), in[1], in[2]);
  };
  expect_same_as_reference(col_major, col_major_ref, {{5, 3}, {4, 5}, {4}});
  EXPECT_TRUE(grad_ok(col_major, {leaf64({5, 3}), leaf64({4, 5}), leaf64({4})}));

  auto time_major = [](const std::vector<Tensor>& in) {
    return linear(transpose(in[0], 0, 1), in[1]);
  };
  auto time_major_ref = [](const std::vector<Tensor>& in) {
    return reference_linear(transpose(in[0], 0, 1), in[1], Tensor());
  };
  expect_same_as_reference(time_major, time_major_ref, {{3, 2, 5}, {4, 5}});
  EXPECT_TRUE(grad_ok(time_major, {leaf64({3, 2, 5}), leaf64({4, 5})}));

  auto weight_view = [](const std::vector<Tensor>& in) {
    return linear(in[0], transpose(in[1], 0, 1));
  };
  auto weight_view_ref = [](const std::vector<Tensor>& in) {
    return reference_linear(in[0], transpose(in[1], 0, 1), Tensor());
  };
  expect_same_as_reference(weight_view, weight_view_ref, {{2, 3, 5}, {5, 4}});
  EXPECT_TRUE(grad_ok(weight_view, {leaf64({2, 3, 5}), leaf64({5, 4})}));
}

TEST(LinearTest, OnlyRequestedGradients) {
  const Tensor x = uniform({2, 3}, -1, 1, kFloat64);
  const Tensor w = leaf64({4, 3});
  const Tensor b = uniform({4}, -1, 1, kFloat64);
  sum(linear(x, w, b)).backward();
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  // dL/dW[o, i] = sum_r x[r, i]
  EXPECT_TRUE(all_close(w.grad(), expand(unsqueeze(sum(x, 0), 0), {4, 3}), 1e-12, 1e-12));
}

// ---- errors ----------------------------------------------------------------------------------

TEST(MatmulTest, BadShapesAndDtypesThrow) {
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 3}), ones({4, 5}));
      },
      {"matmul: inner dimensions differ: [2, 3] @ [4, 5]"}));
  EXPECT_TRUE(throws_error([] { matmul(ones({3}), ones({4})); }, {"matmul", "[3] @ [4]"}));
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 2, 3}), ones({3, 3, 4}));
      },
      {"matmul", "batch", "[2, 2, 3] @ [3, 3, 4]"}));
  EXPECT_TRUE(throws_error([] { matmul(ones({}), ones({3})); }, {"matmul", "at least 1 dim"}));
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 3}, kInt64), ones({3, 2}, kInt64));
      },
      {"matmul", "int64", "[2, 3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 3}), ones({3, 2}, kFloat64));
      },
      {"matmul", "dtypes differ", "float32 [2, 3]", "float64 [3, 2]"}));
  EXPECT_TRUE(throws_error(
      [] {
        bmm(ones({2, 1, 20}), ones({3, 10, 20}));
      },
      {"bmm: batch sizes differ: [2, 1, 20] vs [3, 10, 20]"}));
  EXPECT_TRUE(throws_error([] { bmm(ones({2, 3}), ones({2, 3, 4})); }, {"bmm", "3-D", "[2, 3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        bmm(ones({2, 4, 3}), ones({2, 4, 3}));
      },
      {"bmm", "inner dimensions differ", "[2, 4, 3] @ [2, 4, 3]"}));
  EXPECT_TRUE(throws_error([] { mm(ones({2, 3, 4}), ones({4, 2})); }, {"mm", "2-D", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error(
      [] {
        mm(ones({2, 3}), ones({2, 3}));
      },
      {"mm: inner dimensions differ: [2, 3] @ [2, 3]"}));
  EXPECT_TRUE(throws_error([] { mm(Tensor(), ones({2, 3})); }, {"mm", "undefined"}));
}

TEST(LinearTest, BadShapesAndDtypesThrow) {
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({2, 5}), ones({3, 4}));
      },
      {"linear: input [2, 5] has 5 features, weight [3, 4] expects 4"}));
  EXPECT_TRUE(throws_error([] { linear(ones({2, 4}), ones({4})); }, {"linear", "2-D", "[4]"}));
  EXPECT_TRUE(throws_error([] { linear(ones({}), ones({3, 4})); }, {"linear", "0-d"}));
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({2, 4}), ones({3, 4}), ones({4}));
      },
      {"linear", "bias [4]", "[3, 4]", "[3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({2, 4}), ones({3, 4}), ones({3}, kFloat64));
      },
      {"linear", "bias", "float64"}));
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({2, 4}, kInt64), ones({3, 4}, kInt64));
      },
      {"linear", "int64"}));
}

}  // namespace
}  // namespace ag
