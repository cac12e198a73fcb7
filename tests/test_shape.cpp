// Shape ops and views: reshape, view, flatten, transpose, permute, unsqueeze,
// squeeze, expand, broadcast_to — values, storage sharing, gradients through
// views, bad inputs.
#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// [[0, 1, 2], [3, 4, 5]]
Tensor two_by_three() {
  return reshape(arange(6), {2, 3});
}

// ---- reshape and view -----------------------------------------------------------------

TEST(ReshapeTest, KeepsRowMajorOrder) {
  Tensor x = arange(6);
  Tensor y = reshape(x, {3, 2});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_TRUE(all_close(y, {0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(y.data_ptr<float>(), x.data_ptr<float>());  // contiguous input: a view
  EXPECT_EQ(reshape(x, {-1, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(reshape(x, {2, -1, 1}).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(reshape(scalar_tensor(4), {1, 1}).shape(), (Shape{1, 1}));
  EXPECT_EQ(reshape(ones({1, 1}), {}).shape(), Shape{});
  EXPECT_EQ(reshape(zeros({0, 3}), {3, 0}).shape(), (Shape{3, 0}));
  EXPECT_EQ(reshape(zeros({0, 3}), {-1}).shape(), (Shape{0}));
}

TEST(ReshapeTest, CopiesNonContiguousInputs) {
  Tensor t = transpose(two_by_three(), 0, 1);  // [[0, 3], [1, 4], [2, 5]]
  ASSERT_FALSE(t.is_contiguous());
  Tensor y = reshape(t, {-1});
  EXPECT_TRUE(all_close(y, {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_NE(y.data_ptr<float>(), t.data_ptr<float>());
  Tensor e = reshape(expand(tensor({1, 2}, {2, 1}), {2, 2}), {4});
  EXPECT_TRUE(all_close(e, {1, 1, 2, 2}));
}

TEST(ReshapeTest, ViewSharesStorageAndRefusesNonContiguousInputs) {
  Tensor x = arange(6);
  Tensor v = view(x, {2, 3});
  EXPECT_EQ(v.data_ptr<float>(), x.data_ptr<float>());
  x.data_ptr<float>()[4] = 40;  // writes to the base show through the view
  EXPECT_TRUE(all_close(v, {0, 1, 2, 3, 40, 5}));
  EXPECT_TRUE(throws_error([] { view(transpose(two_by_three(), 0, 1), {6}); },
                           {"view", "not contiguous", "[3, 2]", "reshape"}));
}

TEST(ReshapeTest, BadShapesThrow) {
  Tensor x = two_by_three();
  EXPECT_TRUE(throws_error([&] { reshape(x, {4}); }, {"reshape", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([&] { reshape(x, {-1, -1}); }, {"reshape", "-1", "[-1, -1]"}));
  EXPECT_TRUE(throws_error([&] { reshape(x, {-1, 4}); }, {"reshape", "[2, 3]", "[-1, 4]"}));
  EXPECT_TRUE(throws_error([&] { reshape(x, {-2, 3}); }, {"reshape", "[-2, 3]"}));
  EXPECT_TRUE(throws_error([&] { view(x, {5}); }, {"view", "[2, 3]", "[5]"}));
  // With no elements, -1 could be anything.
  EXPECT_TRUE(throws_error(
      [] {
        reshape(zeros({0, 3}), {-1, 0});
      },
      {"reshape", "[0, 3]", "[-1, 0]"}));
}

TEST(ReshapeTest, Gradients) {
  manual_seed(41);
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return reshape(in[0], {3, -1});
      },
      {leaf64({2, 3})}));
  EXPECT_TRUE(
      grad_ok([](const std::vector<Tensor>& in) { return view(in[0], {6}); }, {leaf64({2, 3})}));
  // Non-contiguous input: reshape copies (CloneBackward), then views.
  EXPECT_TRUE(
      grad_ok([](const std::vector<Tensor>& in) { return reshape(transpose(in[0], 0, 1), {-1}); },
              {leaf64({2, 3})}));
  Tensor x = leaf64({2, 3});
  Tensor y = reshape(x, {3, 2});
  EXPECT_EQ(y.grad_fn_name(), "ViewBackward");
  sum(y * tensor({1, 2, 3, 4, 5, 6}, {3, 2}, kFloat64)).backward();
  EXPECT_EQ(x.grad().shape(), (Shape{2, 3}));
  EXPECT_TRUE(all_close(x.grad(), {1, 2, 3, 4, 5, 6}));
}

// ---- flatten ------------------------------------------------------------------------------

TEST(FlattenTest, MergesARangeOfDims) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_EQ(flatten(x).shape(), (Shape{24}));
  EXPECT_EQ(flatten(x, 1).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(x, 0, 1).shape(), (Shape{6, 4}));
  EXPECT_EQ(flatten(x, -2, -1).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(x, 1, 1).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(flatten(scalar_tensor(3)).shape(), (Shape{1}));
  EXPECT_TRUE(all_close(flatten(transpose(two_by_three(), 0, 1)), {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(throws_error([&] { flatten(x, 2, 1); }, {"flatten", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { flatten(x, 0, 3); }, {"flatten", "dim 3", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([] { flatten(scalar_tensor(1), 2); }, {"flatten", "dim 2", "[]"}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return flatten(in[0], 1); },
                      {leaf64({2, 3, 2})}));
}

// ---- transpose and permute ------------------------------------------------------------------

TEST(TransposeTest, SwapsTwoDims) {
  Tensor x = two_by_three();
  for (auto [d0, d1] : {std::pair<int64_t, int64_t>{0, 1}, {1, 0}, {-1, -2}, {0, -1}}) {
    Tensor t = transpose(x, d0, d1);
    EXPECT_EQ(t.shape(), (Shape{3, 2}));
    EXPECT_TRUE(all_close(t, {0, 3, 1, 4, 2, 5}));
  }
  EXPECT_TRUE(all_close(transpose(x, 1, 1), x));
  Tensor y = reshape(arange(24), {2, 3, 4});
  Tensor t = transpose(y, 0, 2);  // t[k, j, i] = y[i, j, k]
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.to_vector()[0 * 6 + 1 * 2 + 1], 12 + 4 + 0);  // t[0, 1, 1] = y[1, 1, 0]
  EXPECT_EQ(t.to_vector()[3 * 6 + 2 * 2 + 0], 0 + 8 + 3);   // t[3, 2, 0] = y[0, 2, 3]
  EXPECT_TRUE(all_close(transpose(transpose(y, 0, 2), 0, 2), y));
  EXPECT_TRUE(throws_error([&] { transpose(x, 0, 2); }, {"transpose", "dim 2", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { transpose(x, -3, 0); }, {"transpose", "dim -3", "[2, 3]"}));
  // A 0-d tensor accepts dims 0 and -1 only.
  EXPECT_EQ(transpose(scalar_tensor(1), 0, -1).shape(), Shape{});
  EXPECT_TRUE(
      throws_error([] { transpose(scalar_tensor(1), 3, 0); }, {"transpose", "dim 3", "[]"}));
}

TEST(PermuteTest, ReordersDims) {
  Tensor y = reshape(arange(24), {2, 3, 4});
  Tensor p = permute(y, {2, 0, 1});  // p[k, i, j] = y[i, j, k]
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.to_vector()[1 * 6 + 1 * 3 + 2], 12 + 8 + 1);  // p[1, 1, 2] = y[1, 2, 1]
  EXPECT_TRUE(all_close(permute(y, {-3, -2, -1}), y));
  EXPECT_TRUE(all_close(permute(y, {0, 2, 1}), transpose(y, 1, 2)));
  EXPECT_TRUE(all_close(permute(permute(y, {2, 0, 1}), {1, 2, 0}), y));
  EXPECT_TRUE(throws_error([&] { permute(y, {0, 1}); }, {"permute", "2 dims", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { permute(y, {0, 1, 1}); }, {"permute", "repeats", "[0, 1, 1]"}));
  EXPECT_TRUE(throws_error([&] { permute(y, {0, 1, 3}); }, {"permute", "dim 3", "[2, 3, 4]"}));
}

// contiguous() of the heads' permute [B, T, H, d] -> [B, H, T, d] (rows of d
// with stride 1: copied row by row) and of a transpose (last stride not 1:
// element by element), against the indices computed by hand.
TEST(PermuteTest, ContiguousCopiesMatchTheIndices) {
  const int64_t B = 2, T = 3, H = 4, d = 5;
  const Tensor x = arange(B * T * H * d, kFloat64).reshape({B, T, H, d});
  const std::vector<double> heads = permute(x, {0, 2, 1, 3}).contiguous().to_vector();
  const std::vector<double> swapped = transpose(x, 2, 3).contiguous().to_vector();
  size_t i = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < d; ++k, ++i)
          ASSERT_EQ(heads[i], static_cast<double>(((b * T + t) * H + h) * d + k));
  i = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t k = 0; k < d; ++k)
        for (int64_t h = 0; h < H; ++h, ++i)
          ASSERT_EQ(swapped[i], static_cast<double>(((b * T + t) * H + h) * d + k));
}

TEST(TransposeTest, Gradients) {
  manual_seed(42);
  Tensor x = leaf64({2, 3, 4});
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return transpose(in[0], 0, 2); }, {x}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return transpose(in[0], -1, 1); }, {x}));
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return permute(in[0], {1, 2, 0});
      },
      {x}));
  // A chain of views feeding an op that reads strides.
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return exp(permute(transpose(in[0], 0, 1), {2, 1, 0})) * in[1];
      },
      {x, leaf64({4, 2, 3})}));
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64).requires_grad_();
  Tensor t = transpose(a, 0, 1);
  EXPECT_EQ(t.grad_fn_name(), "TransposeBackward");
  EXPECT_EQ(permute(a, {1, 0}).grad_fn_name(), "PermuteBackward");
  sum(t * tensor({10, 40, 20, 50, 30, 60}, {3, 2}, kFloat64)).backward();
  EXPECT_TRUE(all_close(a.grad(), {10, 20, 30, 40, 50, 60}));
}

// ---- unsqueeze and squeeze ------------------------------------------------------------------

TEST(UnsqueezeTest, InsertsASizeOneDim) {
  Tensor x = two_by_three();
  EXPECT_EQ(unsqueeze(x, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(unsqueeze(x, 1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(unsqueeze(x, 2).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(unsqueeze(x, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(unsqueeze(x, -3).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(unsqueeze(scalar_tensor(1), 0).shape(), (Shape{1}));
  EXPECT_TRUE(all_close(unsqueeze(x, 1), {0, 1, 2, 3, 4, 5}));
  // On a strided view the new dim fits the view's layout.
  Tensor u = unsqueeze(transpose(x, 0, 1), 1);
  EXPECT_EQ(u.shape(), (Shape{3, 1, 2}));
  EXPECT_TRUE(all_close(u, {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(throws_error([&] { unsqueeze(x, 3); }, {"unsqueeze", "dim 3", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { unsqueeze(x, -4); }, {"unsqueeze", "dim -4", "[2, 3]"}));
}

TEST(SqueezeTest, DropsSizeOneDims) {
  Tensor x = zeros({1, 2, 1, 3, 1});
  EXPECT_EQ(squeeze(x).shape(), (Shape{2, 3}));
  EXPECT_EQ(squeeze(x, 0).shape(), (Shape{2, 1, 3, 1}));
  EXPECT_EQ(squeeze(x, 2).shape(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(squeeze(x, -1).shape(), (Shape{1, 2, 1, 3}));
  EXPECT_EQ(squeeze(x, 1).shape(), x.shape());  // size 2: left alone, as in PyTorch
  EXPECT_EQ(squeeze(ones({1, 1})).shape(), Shape{});
  EXPECT_EQ(squeeze(scalar_tensor(1)).shape(), Shape{});
  EXPECT_EQ(squeeze(scalar_tensor(1), 0).shape(), Shape{});
  Tensor v = tensor({1, 2, 3}, {1, 3});
  EXPECT_EQ(squeeze(v).data_ptr<float>(), v.data_ptr<float>());
  EXPECT_TRUE(all_close(squeeze(v, 0), {1, 2, 3}));
  EXPECT_TRUE(throws_error([&] { squeeze(x, 5); }, {"squeeze", "dim 5", "[1, 2, 1, 3, 1]"}));
  EXPECT_TRUE(throws_error([&] { squeeze(x, -6); }, {"squeeze", "dim -6"}));
  EXPECT_TRUE(throws_error([] { squeeze(scalar_tensor(1), 5); }, {"squeeze", "dim 5", "[]"}));
}

TEST(SqueezeTest, Gradients) {
  manual_seed(43);
  EXPECT_TRUE(
      grad_ok([](const std::vector<Tensor>& in) { return unsqueeze(in[0], 1); }, {leaf64({2, 3})}));
  EXPECT_TRUE(
      grad_ok([](const std::vector<Tensor>& in) { return unsqueeze(in[0], -1); }, {leaf64({})}));
  EXPECT_TRUE(
      grad_ok([](const std::vector<Tensor>& in) { return squeeze(in[0]); }, {leaf64({1, 3, 1})}));
  EXPECT_TRUE(
      grad_ok([](const std::vector<Tensor>& in) { return squeeze(in[0], -1); }, {leaf64({2, 1})}));
  Tensor x = ones({2}).requires_grad_();
  EXPECT_EQ(unsqueeze(x, 0).grad_fn_name(), "UnsqueezeBackward");
  EXPECT_EQ(squeeze(unsqueeze(x, 0)).grad_fn_name(), "SqueezeBackward");
}

// ---- expand and broadcast_to ----------------------------------------------------------------

TEST(ExpandTest, RepeatsSizeOneDimsWithoutCopying) {
  Tensor c = tensor({1, 2, 3}, {3, 1});
  Tensor e = expand(c, {3, 4});
  EXPECT_EQ(e.shape(), (Shape{3, 4}));
  EXPECT_TRUE(all_close(e, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  EXPECT_EQ(e.data_ptr<float>(), c.data_ptr<float>());
  EXPECT_EQ(expand(c, {-1, 2}).shape(), (Shape{3, 2}));
  Tensor lead = expand(tensor({1, 2}), {2, 3, 2});  // new leading dims
  EXPECT_EQ(lead.strides(), (Shape{0, 0, 1}));
  EXPECT_TRUE(all_close(lead, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_TRUE(all_close(expand(scalar_tensor(7), {2}), {7, 7}));
  EXPECT_TRUE(all_close(broadcast_to(tensor({1, 2}), {2, 2}), {1, 2, 1, 2}));
  EXPECT_EQ(expand(ones({1, 3}), {0, 3}).shape(), (Shape{0, 3}));
}

TEST(ExpandTest, BadShapesThrow) {
  EXPECT_TRUE(throws_error([] { expand(ones({3}), {4}); }, {"expand", "[3]", "[4]"}));
  EXPECT_TRUE(throws_error([] { expand(ones({2, 3}), {3}); }, {"expand", "[2, 3]", "[3]"}));
  EXPECT_TRUE(throws_error([] { expand(ones({3}), {-1, 3}); }, {"expand", "[-1, 3]"}));
  EXPECT_TRUE(throws_error([] { expand(ones({1}), {-2}); }, {"expand", "[-2]"}));
  EXPECT_TRUE(throws_error(
      [] {
        broadcast_to(ones({2, 3}), {2, 4});
      },
      {"expand", "[2, 3]", "[2, 4]"}));
}

TEST(ExpandTest, GradientsSumOverTheRepeats) {
  manual_seed(44);
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return expand(in[0], {2, 3, 4});
      },
      {leaf64({3, 1})}));
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return broadcast_to(in[0], {2, 3});
      },
      {leaf64({})}));
  // An expanded operand feeding a binary op, then a reduction.
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return sum(expand(in[0], {4, 3}) * in[1], 0);
      },
      {leaf64({1, 3}), leaf64({4, 3})}));
  Tensor x = tensor({1, 2}, {2, 1}, kFloat64).requires_grad_();
  Tensor e = expand(x, {2, 3});
  EXPECT_EQ(e.grad_fn_name(), "ExpandBackward");
  sum(e * tensor({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64)).backward();
  EXPECT_EQ(x.grad().shape(), (Shape{2, 1}));
  EXPECT_TRUE(all_close(x.grad(), {6, 15}));
}

// ---- gradients through shared views ---------------------------------------------------------

TEST(ViewGradTest, SeveralViewsOfOneLeafAccumulate) {
  // y = sum(x * x^T): both paths reach x, through a view and directly.
  Tensor x = tensor({1, 2, 3, 4}, {2, 2}, kFloat64).requires_grad_();
  sum(x * transpose(x, 0, 1)).backward();
  // d/dx[i][j] = x[j][i] + x[j][i] = 2 x[j][i]
  EXPECT_TRUE(all_close(x.grad(), {2, 6, 4, 8}));
  EXPECT_TRUE(x.grad().is_contiguous());
  manual_seed(45);
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return unsqueeze(in[0], 0) + unsqueeze(transpose(in[0], 0, 1), 1);
      },
      {leaf64({3, 3})}));
}

TEST(ViewGradTest, DetachedViewsCarryNoGraph) {
  Tensor x = ones({2, 3}).requires_grad_();
  Tensor v = transpose(x, 0, 1).detach();
  EXPECT_FALSE(v.requires_grad());
  EXPECT_EQ(v.strides(), (Shape{1, 3}));
  EXPECT_EQ(v.data_ptr<float>(), x.data_ptr<float>());
}

}  // namespace
}  // namespace ag
