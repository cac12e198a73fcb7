// Selecting, joining and repeating: cat, stack, narrow, repeat_interleave,
// index_select, where, masked_fill — values, gradients and bad inputs.
#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// [[1, 2, 3], [4, 5, 6]]
Tensor two_by_three(DType dtype = kFloat32) {
  return tensor({1, 2, 3, 4, 5, 6}, {2, 3}, dtype);
}

// ---- cat ----------------------------------------------------------------------------

TEST(CatTest, JoinsAlongDimZero) {
  Tensor a = two_by_three();
  Tensor b = tensor({7, 8, 9}, {1, 3});
  for (int64_t dim : {0, -2}) {
    Tensor y = cat({a, b}, dim);
    EXPECT_EQ(y.shape(), (Shape{3, 3}));
    EXPECT_TRUE(all_close(y, {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
}

TEST(CatTest, JoinsAlongTheLastDim) {
  Tensor a = two_by_three();
  Tensor c = tensor({10, 20}, {2, 1});
  for (int64_t dim : {1, -1}) {
    Tensor y = cat({a, c, a}, dim);
    EXPECT_EQ(y.shape(), (Shape{2, 7}));
    EXPECT_TRUE(all_close(y, {1, 2, 3, 10, 1, 2, 3, 4, 5, 6, 20, 4, 5, 6}));
  }
}

TEST(CatTest, JoinsAMiddleDimOfA3DTensor) {
  Tensor a = reshape(arange(8), {2, 2, 2});
  Tensor b = reshape(arange(4) + 100.0, {2, 1, 2});
  Tensor y = cat({a, b}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  EXPECT_TRUE(all_close(y, {0, 1, 2, 3, 100, 101, 4, 5, 6, 7, 102, 103}));
}

TEST(CatTest, KeepsDtypeAndReadsNonContiguousInputs) {
  Tensor y = cat({tensor({1, 2}, {2}, kInt64), tensor({3}, {1}, kInt64)});
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_EQ(y.to_vector(), (std::vector<double>{1, 2, 3}));
  Tensor m = cat({tensor({1, 0}, {2}, kBool), tensor({1}, {1}, kBool)});
  EXPECT_EQ(m.dtype(), kBool);
  EXPECT_EQ(m.to_vector(), (std::vector<double>{1, 0, 1}));
  // transpose(a) is [[1, 4], [2, 5], [3, 6]], a strided view.
  Tensor t = cat({transpose(two_by_three(), 0, 1), ones({3, 1})}, 1);
  EXPECT_TRUE(all_close(t, {1, 4, 1, 2, 5, 1, 3, 6, 1}));
}

TEST(CatTest, AcceptsEmptySlices) {
  Tensor y = cat({zeros({2, 0}), two_by_three(), zeros({2, 0})}, 1);
  EXPECT_TRUE(all_close(y, two_by_three()));
  EXPECT_EQ(cat({zeros({0, 3}), zeros({0, 3})}).shape(), (Shape{0, 3}));
}

TEST(CatTest, GradientIsTheSliceEachInputFilled) {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}, kFloat64).requires_grad_();
  Tensor b = tensor({5, 6}, {2, 1}, kFloat64).requires_grad_();
  Tensor y = cat({a, b}, 1);  // [[1, 2, 5], [3, 4, 6]]
  EXPECT_EQ(y.grad_fn_name(), "CatBackward");
  sum(y * tensor({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64)).backward();
  EXPECT_TRUE(all_close(a.grad(), {1, 2, 4, 5}));
  EXPECT_TRUE(all_close(b.grad(), {3, 6}));
  EXPECT_EQ(b.grad().shape(), (Shape{2, 1}));
}

TEST(CatTest, Gradcheck) {
  auto fn = [](int64_t dim) {
    return [dim](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[2]}, dim); };
  };
  EXPECT_TRUE(grad_ok(fn(0), {leaf64({1, 2, 3}), leaf64({2, 2, 3}), leaf64({3, 2, 3})}));
  EXPECT_TRUE(grad_ok(fn(1), {leaf64({2, 1, 3}), leaf64({2, 3, 3}), leaf64({2, 2, 3})}));
  EXPECT_TRUE(grad_ok(fn(-1), {leaf64({2, 3, 1}), leaf64({2, 3, 2}), leaf64({2, 3, 4})}));
  // A constant among the inputs, and the same leaf twice.
  Tensor x = leaf64({2, 3});
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return cat({in[0], in[1], in[0]});
      },
      {x, uniform({1, 3}, -1, 1, kFloat64)}));
  // Through a transposed (non-contiguous) input.
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return cat({transpose(in[0], 0, 1), in[1]}, 0);
      },
      {leaf64({3, 2}), leaf64({1, 3})}));
}

TEST(CatTest, BadInputsThrow) {
  EXPECT_TRUE(throws_error([] { cat({}); }, {"cat", "non-empty"}));
  EXPECT_TRUE(throws_error(
      [] {
        cat({zeros({2, 3}), zeros({2, 4})}, 0);
      },
      {"cat", "[2, 3]", "[2, 4]", "dim 0"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2, 3}), zeros({3})}, 0); }, {"cat", "[2, 3]", "[3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        cat({zeros({2, 3}), zeros({2, 3}, kFloat64)});
      },
      {"cat", "float32", "float64", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2, 3})}, 2); }, {"cat", "dim 2", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2, 3})}, -3); }, {"cat", "dim -3", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({}), zeros({})}); }, {"cat", "0-d"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2}), Tensor()}); }, {"cat", "undefined"}));
}

// ---- stack --------------------------------------------------------------------------

TEST(StackTest, InsertsANewDim) {
  Tensor a = tensor({1, 2, 3}, {3});
  Tensor b = tensor({4, 5, 6}, {3});
  for (int64_t dim : {0, -2}) {
    Tensor y = stack({a, b}, dim);
    EXPECT_EQ(y.shape(), (Shape{2, 3}));
    EXPECT_TRUE(all_close(y, {1, 2, 3, 4, 5, 6}));
  }
  for (int64_t dim : {1, -1}) {
    Tensor y = stack({a, b}, dim);
    EXPECT_EQ(y.shape(), (Shape{3, 2}));
    EXPECT_TRUE(all_close(y, {1, 4, 2, 5, 3, 6}));
  }
}

TEST(StackTest, StacksMatricesAndScalars) {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2});
  Tensor b = tensor({5, 6, 7, 8}, {2, 2});
  Tensor y = stack({a, b}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_TRUE(all_close(y, {1, 2, 5, 6, 3, 4, 7, 8}));
  Tensor z = stack({a, b}, 2);
  EXPECT_EQ(z.shape(), (Shape{2, 2, 2}));
  EXPECT_TRUE(all_close(z, {1, 5, 2, 6, 3, 7, 4, 8}));
  Tensor s = stack({scalar_tensor(1), scalar_tensor(2), scalar_tensor(3)});
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_TRUE(all_close(s, {1, 2, 3}));
}

TEST(StackTest, Gradcheck) {
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    EXPECT_TRUE(grad_ok(
        [dim](const std::vector<Tensor>& in) {
          return stack({in[0], in[1]}, dim);
        },
        {leaf64({2, 3}), leaf64({2, 3})}))
        << "dim " << dim;
  }
}

TEST(StackTest, BadInputsThrow) {
  EXPECT_TRUE(throws_error([] { stack({}); }, {"stack", "non-empty"}));
  EXPECT_TRUE(throws_error([] { stack({zeros({2}), zeros({3})}); }, {"stack", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        stack({zeros({2}), zeros({2}, kInt64)});
      },
      {"stack", "float32", "int64"}));
  EXPECT_TRUE(throws_error([] { stack({zeros({2, 3})}, 3); }, {"stack", "dim 3", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { stack({zeros({2, 3})}, -4); }, {"stack", "dim -4", "[2, 3]"}));
}

// ---- narrow -------------------------------------------------------------------------

TEST(NarrowTest, SlicesAlongADim) {
  Tensor x = reshape(arange(12), {3, 4});
  EXPECT_TRUE(all_close(narrow(x, 0, 1, 2), {4, 5, 6, 7, 8, 9, 10, 11}));
  Tensor cols = narrow(x, 1, 1, 2);
  EXPECT_EQ(cols.shape(), (Shape{3, 2}));
  EXPECT_TRUE(all_close(cols, {1, 2, 5, 6, 9, 10}));
  // Negative dim and negative start count from the end.
  EXPECT_TRUE(all_close(narrow(x, -1, -2, 2), {2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(narrow(x, 1, 4, 0).shape(), (Shape{3, 0}));
  EXPECT_TRUE(all_close(narrow(transpose(x, 0, 1), 1, 2, 1), {8, 9, 10, 11}));
  EXPECT_EQ(narrow(arange(5, kInt64), 0, 3, 2).to_vector(), (std::vector<double>{3, 4}));
}

TEST(NarrowTest, GradientLandsInTheSlice) {
  Tensor x = ones({2, 4}, kFloat64).requires_grad_();
  Tensor y = narrow(x, 1, 1, 2);
  EXPECT_EQ(y.grad_fn_name(), "NarrowBackward");
  sum(y * tensor({1, 2, 3, 4}, {2, 2}, kFloat64)).backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 1, 2, 0, 0, 3, 4, 0}));
}

TEST(NarrowTest, Gradcheck) {
  Tensor x = leaf64({3, 4, 5});
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return narrow(in[0], 0, 1, 2); }, {x}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return narrow(in[0], 1, 0, 3); }, {x}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return narrow(in[0], -1, -3, 2); }, {x}));
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return narrow(permute(in[0], {2, 0, 1}), 0, 2, 3);
      },
      {x}));
}

TEST(NarrowTest, BadInputsThrow) {
  Tensor x = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { narrow(x, 1, 5, 0); }, {"narrow", "start 5", "[3, 4]"}));
  EXPECT_TRUE(throws_error([&] { narrow(x, 1, -5, 1); }, {"narrow", "start -5", "[3, 4]"}));
  EXPECT_TRUE(throws_error([&] { narrow(x, 1, 2, 3); }, {"narrow", "length 3", "[3, 4]"}));
  EXPECT_TRUE(throws_error([&] { narrow(x, 0, 0, -1); }, {"narrow", "length -1", "[3, 4]"}));
  EXPECT_TRUE(throws_error([&] { narrow(x, 2, 0, 1); }, {"narrow", "dim 2", "[3, 4]"}));
  EXPECT_TRUE(throws_error([] { narrow(zeros({}), 0, 0, 1); }, {"narrow", "0-d"}));
}

// ---- repeat_interleave --------------------------------------------------------------

TEST(RepeatInterleaveTest, RepeatsEachSliceInPlace) {
  Tensor x = tensor({1, 2, 3, 4}, {2, 2});
  Tensor rows = repeat_interleave(x, 2, 0);
  EXPECT_EQ(rows.shape(), (Shape{4, 2}));
  EXPECT_TRUE(all_close(rows, {1, 2, 1, 2, 3, 4, 3, 4}));
  for (int64_t dim : {1, -1}) {
    Tensor cols = repeat_interleave(x, 2, dim);
    EXPECT_EQ(cols.shape(), (Shape{2, 4}));
    EXPECT_TRUE(all_close(cols, {1, 1, 2, 2, 3, 3, 4, 4}));
  }
  EXPECT_EQ(repeat_interleave(x, 0, 1).shape(), (Shape{2, 0}));
  EXPECT_EQ(repeat_interleave(tensor({7, 8}, {2}, kInt64), 3, 0).to_vector(),
            (std::vector<double>{7, 7, 7, 8, 8, 8}));
}

TEST(RepeatInterleaveTest, TakesOneCountPerSlice) {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor rows = repeat_interleave(x, tensor({1, 0, 2}, {3}, kInt64), 0);
  EXPECT_EQ(rows.shape(), (Shape{3, 2}));
  EXPECT_TRUE(all_close(rows, {1, 2, 5, 6, 5, 6}));
  Tensor cols = repeat_interleave(x, tensor({3, 1}, {2}, kInt64), -1);
  EXPECT_EQ(cols.shape(), (Shape{3, 4}));
  EXPECT_TRUE(all_close(cols, {1, 1, 1, 2, 3, 3, 3, 4, 5, 5, 5, 6}));
  // A single count (1-element or 0-d) applies to every slice, as in PyTorch.
  EXPECT_TRUE(
      all_close(repeat_interleave(x, tensor({2}, {1}, kInt64), 1), repeat_interleave(x, 2, 1)));
  EXPECT_TRUE(
      all_close(repeat_interleave(x, scalar_tensor(2, kInt64), 0), repeat_interleave(x, 2, 0)));
}

TEST(RepeatInterleaveTest, GradientSumsTheCopies) {
  Tensor x = tensor({1, 2, 3}, {3}, kFloat64).requires_grad_();
  Tensor y = repeat_interleave(x, tensor({2, 0, 3}, {3}, kInt64), 0);
  EXPECT_EQ(y.grad_fn_name(), "RepeatInterleaveBackward");
  sum(y * tensor({1, 2, 3, 4, 5}, {5}, kFloat64)).backward();
  EXPECT_TRUE(all_close(x.grad(), {1 + 2, 0, 3 + 4 + 5}));
}

TEST(RepeatInterleaveTest, Gradcheck) {
  Tensor x = leaf64({2, 3, 2});
  for (int64_t dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(grad_ok(
        [dim](const std::vector<Tensor>& in) { return repeat_interleave(in[0], 3, dim); }, {x}))
        << "dim " << dim;
  }
  const Tensor counts = tensor({2, 0, 1}, {3}, kInt64);
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) { return repeat_interleave(in[0], counts, 1); }, {x}));
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) {
        return repeat_interleave(transpose(in[0], 0, 1), counts, 0);
      },
      {x}));
}

TEST(RepeatInterleaveTest, BadInputsThrow) {
  Tensor x = zeros({3, 2});
  EXPECT_TRUE(
      throws_error([&] { repeat_interleave(x, -1, 0); }, {"repeat_interleave", "-1", "[3, 2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        repeat_interleave(x, tensor({1, -2, 1}, {3}, kInt64), 0);
      },
      {"repeat_interleave", "-2", "[3, 2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        repeat_interleave(x, tensor({1, 2}, {2}, kInt64), 0);
      },
      {"repeat_interleave", "[2]", "[3, 2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        repeat_interleave(x, tensor({1, 2, 3}, {3}), 0);
      },
      {"repeat_interleave", "int64", "float32", "[3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        repeat_interleave(x, ones({3, 1}, kInt64), 0);
      },
      {"repeat_interleave", "[3, 1]"}));
  EXPECT_TRUE(
      throws_error([&] { repeat_interleave(x, 2, 2); }, {"repeat_interleave", "dim 2", "[3, 2]"}));
  EXPECT_TRUE(
      throws_error([] { repeat_interleave(zeros({}), 2, 0); }, {"repeat_interleave", "0-d"}));
}

// ---- index_select -------------------------------------------------------------------

TEST(IndexSelectTest, GathersSlicesInIndexOrder) {
  Tensor x = two_by_three();
  Tensor cols = index_select(x, 1, tensor({2, 0, 2}, {3}, kInt64));
  EXPECT_EQ(cols.shape(), (Shape{2, 3}));
  EXPECT_TRUE(all_close(cols, {3, 1, 3, 6, 4, 6}));
  EXPECT_TRUE(all_close(index_select(x, -1, tensor({1}, {1}, kInt64)), {2, 5}));
  Tensor rows = index_select(x, 0, tensor({1, 1}, {2}, kInt64));
  EXPECT_TRUE(all_close(rows, {4, 5, 6, 4, 5, 6}));
  // A 0-d index keeps the dim with size 1, as in PyTorch.
  EXPECT_EQ(index_select(x, 0, scalar_tensor(1, kInt64)).shape(), (Shape{1, 3}));
  EXPECT_EQ(index_select(x, 1, zeros({0}, kInt64)).shape(), (Shape{2, 0}));
  EXPECT_EQ(index_select(two_by_three(kInt64), 1, tensor({0}, {1}, kInt64)).to_vector(),
            (std::vector<double>{1, 4}));
  EXPECT_TRUE(all_close(index_select(transpose(x, 0, 1), 0, tensor({2}, {1}, kInt64)), {3, 6}));
}

TEST(IndexSelectTest, GradientAccumulatesRepeatedIndices) {
  Tensor x = zeros({4}, kFloat64).requires_grad_();
  Tensor y = index_select(x, 0, tensor({3, 1, 3, 3}, {4}, kInt64));
  EXPECT_EQ(y.grad_fn_name(), "IndexSelectBackward");
  sum(y * tensor({1, 2, 3, 4}, {4}, kFloat64)).backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 2, 0, 1 + 3 + 4}));
}

TEST(IndexSelectTest, Gradcheck) {
  Tensor x = leaf64({3, 4, 2});
  const Tensor index = tensor({2, 0, 2, 1}, {4}, kInt64);
  for (int64_t dim : {0, 1, 2, -2}) {
    const Tensor idx = dim == 2 ? tensor({1, 1, 0}, {3}, kInt64) : index;
    EXPECT_TRUE(grad_ok(
        [&, dim](const std::vector<Tensor>& in) { return index_select(in[0], dim, idx); }, {x}))
        << "dim " << dim;
  }
}

TEST(IndexSelectTest, BadInputsThrow) {
  Tensor x = zeros({2, 3});
  EXPECT_TRUE(throws_error(
      [&] {
        index_select(x, 1, tensor({0, 1}, {2}));
      },
      {"index_select", "int64", "float32", "[2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        index_select(x, 1, zeros({1, 1}, kInt64));
      },
      {"index_select", "[1, 1]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        index_select(x, 1, tensor({0, 3}, {2}, kInt64));
      },
      {"index_select", "index 3", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { index_select(x, 0, tensor({-1}, {1}, kInt64)); },
                           {"index_select", "index -1", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { index_select(x, 2, tensor({0}, {1}, kInt64)); },
                           {"index_select", "dim 2", "[2, 3]"}));
}

// ---- where and masked_fill ------------------------------------------------------------

TEST(WhereTest, PicksElementwiseWithBroadcasting) {
  Tensor cond = tensor({1, 0, 0, 1}, {2, 2}, kBool);
  Tensor a = tensor({1, 2, 3, 4}, {2, 2});
  Tensor b = tensor({10, 20, 30, 40}, {2, 2});
  EXPECT_TRUE(all_close(where(cond, a, b), {1, 20, 30, 4}));
  EXPECT_TRUE(all_close(where(cond, a, -1.0), {1, -1, -1, 4}));
  // cond [2, 1], a [3], b 0-d  ->  [2, 3]
  Tensor y = where(tensor({1, 0}, {2, 1}, kBool), tensor({1, 2, 3}, {3}), scalar_tensor(9));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_TRUE(all_close(y, {1, 2, 3, 9, 9, 9}));
}

// Contiguous operands and one-value ones take a flat loop, others the strided
// walk: the same values either way.
TEST(WhereTest, FlatLoopMatchesTheStridedWalk) {
  manual_seed(4);
  const Tensor cond = gt(randn({5, 7}), zeros({}));
  const Tensor a = randn({5, 7}), b = randn({5, 7});
  // transpose(transpose(t).contiguous()): t's values with transposed strides
  const auto strided = [](const Tensor& t) {
    return transpose(transpose(t, 0, 1).contiguous(), 0, 1);
  };
  EXPECT_FALSE(strided(a).is_contiguous());
  const std::vector<double> walked = where(strided(cond), strided(a), strided(b)).to_vector();
  EXPECT_EQ(where(cond, a, b).to_vector(), walked);
  EXPECT_EQ(where(cond, a, 0.5).to_vector(), where(strided(cond), strided(a), 0.5).to_vector());
}

TEST(WhereTest, Gradcheck) {
  Tensor cond = tensor({1, 0, 1, 0, 0, 1}, {2, 3}, kBool);
  EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); },
                      {leaf64({2, 3}), leaf64({2, 3})}));
  // Broadcast operands: their gradients are summed back to [3] and [2, 1].
  EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); },
                      {leaf64({3}), leaf64({2, 1})}));
}

TEST(WhereTest, BadInputsThrow) {
  EXPECT_TRUE(throws_error([] { where(ones({2}), ones({2}), ones({2})); },
                           {"where", "bool", "float32", "[2]"}));
  EXPECT_TRUE(throws_error([] { where(ones({2}, kInt64), ones({2}), ones({2})); },
                           {"where", "bool", "int64"}));
  EXPECT_TRUE(throws_error([] { where(ones({2}, kBool), ones({2}), ones({2}, kFloat64)); },
                           {"where", "float32", "float64", "[2]"}));
  EXPECT_TRUE(
      throws_error([] { where(ones({2}, kBool), ones({3}), ones({3})); }, {"where", "[2]", "[3]"}));
}

TEST(MaskedFillTest, FillsWhereTheMaskIsTrue) {
  Tensor x = two_by_three();
  Tensor mask = tensor({0, 1, 1}, {3}, kBool);  // broadcast over rows
  EXPECT_TRUE(all_close(masked_fill(x, mask, -1e6), {1, -1e6, -1e6, 4, -1e6, -1e6}));
  EXPECT_TRUE(all_close(masked_fill(x, tensor({1, 0}, {2, 1}, kBool), 0), {0, 0, 0, 4, 5, 6}));
}

TEST(MaskedFillTest, GradientSkipsFilledPositions) {
  Tensor x = ones({2, 2}, kFloat64).requires_grad_();
  sum(masked_fill(x, tensor({1, 0, 0, 1}, {2, 2}, kBool), 5.0) * 3.0).backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 3, 3, 0}));
  Tensor mask = tensor({0, 1, 0}, {3}, kBool);
  EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, 2.0); },
                      {leaf64({2, 3})}));
}

TEST(MaskedFillTest, BadInputsThrow) {
  EXPECT_TRUE(throws_error(
      [] {
        masked_fill(ones({2, 3}), ones({3}), 0);
      },
      {"masked_fill", "bool", "float32", "[3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        masked_fill(ones({2, 3}), ones({4}, kBool), 0);
      },
      {"masked_fill", "[2, 3]", "[4]"}));
  // The mask may broadcast to x, but must not enlarge it.
  EXPECT_TRUE(throws_error(
      [] {
        masked_fill(ones({3}), ones({2, 3}, kBool), 0);
      },
      {"masked_fill", "[2, 3]", "[3]"}));
}

}  // namespace
}  // namespace ag
