// Reductions: sum, mean, max, argmax over each dim of a 3-D tensor, with and
// without keepdim, negative dims, full reductions; gradients; bad inputs.
#include <cmath>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// A [2, 3, 4] tensor holding a permutation of 0..23 (7 i mod 24), so that
// maxima sit at different positions along every dim:
//   [[[ 0,  7, 14, 21], [ 4, 11, 18,  1], [ 8, 15, 22,  5]],
//    [[12, 19,  2,  9], [16, 23,  6, 13], [20,  3, 10, 17]]]
Tensor scrambled(DType dtype = kFloat64) {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<size_t>(i)] = (i * 7) % 24;
  return tensor(v, {2, 3, 4}, dtype);
}

// Expected results of reducing scrambled() over one dim.
struct DimCase {
  int64_t dim;
  Shape shape, kept_shape;
  std::vector<double> sum, mean, max, argmax;
};

const std::vector<DimCase>& dim_cases() {
  static const std::vector<DimCase> cases = {
      {0,
       {3, 4},
       {1, 3, 4},
       {12, 26, 16, 30, 20, 34, 24, 14, 28, 18, 32, 22},
       {6, 13, 8, 15, 10, 17, 12, 7, 14, 9, 16, 11},
       {12, 19, 14, 21, 16, 23, 18, 13, 20, 15, 22, 17},
       {1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1}},
      {1,
       {2, 4},
       {2, 1, 4},
       {12, 33, 54, 27, 48, 45, 18, 39},
       {4, 11, 18, 9, 16, 15, 6, 13},
       {8, 15, 22, 21, 20, 23, 10, 17},
       {2, 2, 2, 0, 2, 1, 2, 2}},
      {2,
       {2, 3},
       {2, 3, 1},
       {42, 34, 50, 42, 58, 50},
       {10.5, 8.5, 12.5, 10.5, 14.5, 12.5},
       {21, 18, 22, 19, 23, 20},
       {3, 2, 2, 1, 1, 0}},
  };
  return cases;
}

// ---- forward values -------------------------------------------------------------------

TEST(ReduceTest, EachDimWithAndWithoutKeepdim) {
  const Tensor x = scrambled();
  for (const DimCase& c : dim_cases()) {
    // The dim and its negative twin (dim - 3) must agree.
    for (int64_t dim : {c.dim, c.dim - 3}) {
      for (bool keepdim : {false, true}) {
        const Shape& shape = keepdim ? c.kept_shape : c.shape;
        SCOPED_TRACE("dim " + std::to_string(dim) + (keepdim ? " keepdim" : ""));
        Tensor s = sum(x, dim, keepdim), m = mean(x, dim, keepdim), mx = max(x, dim, keepdim),
               am = argmax(x, dim, keepdim);
        EXPECT_EQ(s.shape(), shape);
        EXPECT_EQ(m.shape(), shape);
        EXPECT_EQ(mx.shape(), shape);
        EXPECT_EQ(am.shape(), shape);
        EXPECT_TRUE(all_close(s, c.sum));
        EXPECT_TRUE(all_close(m, c.mean));
        EXPECT_TRUE(all_close(mx, c.max));
        EXPECT_EQ(am.to_vector(), c.argmax);
        EXPECT_EQ(am.dtype(), kInt64);
        EXPECT_EQ(s.dtype(), kFloat64);
      }
    }
  }
}

TEST(ReduceTest, FullReductions) {
  const Tensor x = scrambled();
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_EQ(sum(x).item(), 276.0);
  EXPECT_EQ(mean(x).shape(), Shape{});
  EXPECT_EQ(mean(x).item(), 11.5);
  EXPECT_EQ(max(x).shape(), Shape{});
  EXPECT_EQ(max(x).item(), 23.0);
  // Several dims at once (in any order, negative or not).
  EXPECT_TRUE(all_close(sum(x, std::vector<int64_t>{0, 2}), {84, 92, 100}));
  EXPECT_TRUE(all_close(sum(x, std::vector<int64_t>{-1, 0}), {84, 92, 100}));
  EXPECT_TRUE(all_close(sum(x, std::vector<int64_t>{1, 2}), {126, 150}));
  Tensor kept = sum(x, std::vector<int64_t>{0, 1}, /*keepdim=*/true);
  EXPECT_EQ(kept.shape(), (Shape{1, 1, 4}));
  EXPECT_TRUE(all_close(kept, {60, 78, 72, 66}));
  EXPECT_EQ(sum(x, std::vector<int64_t>{0, 1, 2}).item(), 276.0);
  // No dims: nothing reduced.
  EXPECT_TRUE(all_close(sum(x, std::vector<int64_t>{}), x));
}

TEST(ReduceTest, StridedInputs) {
  // transpose(scrambled, 0, 2) is [4, 3, 2]; reducing its dim 2 is reducing dim 0.
  Tensor t = transpose(scrambled(), 0, 2);
  EXPECT_TRUE(all_close(sum(t, 2), transpose(sum(scrambled(), 0), 0, 1)));
  EXPECT_TRUE(all_close(max(t, 2), transpose(max(scrambled(), 0), 0, 1)));
  EXPECT_EQ(argmax(t, 0).to_vector(), transpose(argmax(scrambled(), 2), 0, 1).to_vector());
  Tensor e = expand(tensor({1, 2}, {2, 1}), {2, 3});  // stride-0 dim
  EXPECT_TRUE(all_close(sum(e, 1), {3, 6}));
  EXPECT_TRUE(all_close(sum(e, 0), {3, 3, 3}));
}

TEST(ReduceTest, ZeroDimensionalAndEmpty) {
  Tensor s = scalar_tensor(5);
  EXPECT_EQ(sum(s).item(), 5.0);
  EXPECT_EQ(sum(s, 0).shape(), Shape{});
  EXPECT_EQ(sum(s, -1).item(), 5.0);
  EXPECT_EQ(mean(s, 0).item(), 5.0);
  EXPECT_EQ(max(s, 0).item(), 5.0);
  EXPECT_EQ(argmax(s, 0).item(), 0.0);
  EXPECT_EQ(sum(zeros({0})).item(), 0.0);
  EXPECT_EQ(sum(zeros({2, 0}), 1).to_vector(), (std::vector<double>{0, 0}));
}

TEST(ReduceTest, IntegerAndBoolSums) {
  Tensor i = tensor({1, 2, 3, 4}, {2, 2}, kInt64);
  EXPECT_EQ(sum(i).dtype(), kInt64);
  EXPECT_EQ(sum(i, 0).to_vector(), (std::vector<double>{4, 6}));
  EXPECT_EQ(max(i, 1).to_vector(), (std::vector<double>{2, 4}));
  Tensor b = tensor({1, 0, 1, 1}, {2, 2}, kBool);
  EXPECT_EQ(sum(b).dtype(), kInt64);  // counts the true entries
  EXPECT_EQ(sum(b, 1).to_vector(), (std::vector<double>{1, 2}));
}

TEST(ReduceTest, SumsAccumulateInDouble) {
  // A float32 running sum of a million 0.1f drifts to about 100958; a double
  // accumulator lands on 100000 (0.1f is 0.100000001490116).
  EXPECT_NEAR(sum(full({1000000}, 0.1)).item(), 100000.0, 0.01);
  EXPECT_NEAR(mean(full({1000000}, 0.1)).item(), 0.1, 1e-7);
}

// float32 sums over the trailing dims of a contiguous tensor take reduce.cpp's
// row path (double lanes); float64, other dims and strided inputs the general
// walk. All against a double loop, at row lengths around the 16 lanes.
TEST(ReduceTest, TrailingDimSumsMatchADoubleLoop) {
  for (DType dtype : {kFloat32, kFloat64})
    for (int64_t cols : {1, 15, 16, 17, 100, 515}) {
      Tensor x = randn({3, 2, cols}, dtype);
      const std::vector<double> v = x.to_vector();
      std::vector<double> rows(6, 0.0);
      double all = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        rows[i / static_cast<size_t>(cols)] += v[i];
        all += v[i];
      }
      const double tol = dtype == kFloat32 ? 1e-5 : 1e-12;
      EXPECT_TRUE(all_close(sum(x, -1), tensor(rows, {3, 2}, kFloat64), tol, tol)) << cols;
      EXPECT_NEAR(sum(x).item(), all, tol * static_cast<double>(cols));
      EXPECT_NEAR(sum(x, std::vector<int64_t>{1, 2}).to_vector()[0], rows[0] + rows[1], tol * 10);
      // the same sums through a strided view (the general walk)
      EXPECT_TRUE(all_close(sum(transpose(x, 0, 1), -1), transpose(sum(x, -1), 0, 1), tol, tol));
    }
}

// float32 sums over the leading dims of a contiguous tensor (a bias's
// gradient) take reduce.cpp's column path: each column added in double in
// row order, as the general walk adds it, so the same bits as the walk over
// a non-contiguous copy of x, and a double loop's sums.
TEST(ReduceTest, LeadingDimSumsMatchTheGeneralWalkBitForBit) {
  for (int64_t cols : {1, 7, 8, 9, 32, 100}) {
    const Tensor x = randn({5, 3, cols}, kFloat32);
    // the same values in a layout the column path does not take
    const Tensor strided = transpose(transpose(x, 0, 1).contiguous(), 0, 1);
    ASSERT_FALSE(strided.is_contiguous());
    const std::vector<double> v = x.to_vector();
    std::vector<double> columns(static_cast<size_t>(cols), 0.0);
    for (size_t i = 0; i < v.size(); ++i) columns[i % static_cast<size_t>(cols)] += v[i];
    const Tensor fast = sum(x, std::vector<int64_t>{0, 1});
    EXPECT_EQ(fast.to_vector(), sum(strided, std::vector<int64_t>{0, 1}).to_vector()) << cols;
    EXPECT_TRUE(all_close(fast, tensor(columns, {cols}, kFloat64), 1e-6, 1e-6)) << cols;
    EXPECT_EQ(sum(x, 0).to_vector(), sum(strided, 0).to_vector()) << cols;
  }
}

TEST(ReduceTest, MaxTiesAndNaN) {
  Tensor x = tensor({1, 3, 3, 2});
  EXPECT_EQ(argmax(x, 0).item(), 1.0);  // the first maximum
  Tensor n = tensor({1, NAN, 3});
  EXPECT_TRUE(std::isnan(max(n, 0).item()));  // NaN wins, as in PyTorch
  EXPECT_EQ(argmax(n, 0).item(), 1.0);
}

// ---- gradients --------------------------------------------------------------------------

TEST(ReduceGradTest, EachDimWithAndWithoutKeepdim) {
  manual_seed(31);
  Tensor x = leaf64({2, 3, 4});
  for (int64_t dim : {0, 1, 2, -1, -2, -3}) {
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE("dim " + std::to_string(dim) + (keepdim ? " keepdim" : ""));
      EXPECT_TRUE(
          grad_ok([=](const std::vector<Tensor>& in) { return sum(in[0], dim, keepdim); }, {x}));
      EXPECT_TRUE(
          grad_ok([=](const std::vector<Tensor>& in) { return mean(in[0], dim, keepdim); }, {x}));
      // Random inputs: no ties, so max is differentiable.
      EXPECT_TRUE(
          grad_ok([=](const std::vector<Tensor>& in) { return max(in[0], dim, keepdim); }, {x}));
    }
  }
}

TEST(ReduceGradTest, FullAndMultiDimReductions) {
  manual_seed(32);
  Tensor x = leaf64({2, 3, 4});
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return sum(in[0]); }, {x}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return mean(in[0]); }, {x}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return max(in[0]); }, {x}));
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return sum(in[0], std::vector<int64_t>{0, 2});
      },
      {x}));
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        return sum(in[0], std::vector<int64_t>{-1, 1}, true);
      },
      {x}));
  // Through a strided view, and on a 0-d tensor.
  EXPECT_TRUE(
      grad_ok([](const std::vector<Tensor>& in) { return max(transpose(in[0], 0, 2), 1); }, {x}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return max(in[0], 0); }, {leaf64({})}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return mean(in[0], -1); }, {leaf64({})}));
}

TEST(ReduceGradTest, HandComputedGradients) {
  Tensor x = tensor({1, 5, 3, 5, 2, 0}, {2, 3}, kFloat64).requires_grad_();
  sum(mean(x, 1) * tensor({1, 2}, {2}, kFloat64)).backward();
  EXPECT_TRUE(all_close(x.grad(), {1.0 / 3, 1.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3, 2.0 / 3}));
  x.zero_grad();
  // The gradient of max goes to the first maximum only.
  sum(max(x, 1) * tensor({10, 20}, {2}, kFloat64)).backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 10, 0, 20, 0, 0}));
  x.zero_grad();
  max(x).backward();  // 5 at flat positions 1 and 3: the first wins
  EXPECT_TRUE(all_close(x.grad(), {0, 1, 0, 0, 0, 0}));
}

TEST(ReduceGradTest, NodesAreNamed) {
  Tensor x = ones({2, 2}).requires_grad_();
  EXPECT_EQ(sum(x).grad_fn_name(), "SumBackward");
  EXPECT_EQ(sum(x, 0, true).grad_fn_name(), "SumBackward");
  EXPECT_EQ(max(x, 1, true).grad_fn_name(), "MaxBackward");
  EXPECT_FALSE(argmax(x, 1).requires_grad());
}

// ---- bad inputs ---------------------------------------------------------------------------

TEST(ReduceErrorTest, DimsOutOfRange) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_TRUE(throws_error([&] { sum(x, 3); }, {"sum", "dim 3", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { sum(x, -4); }, {"sum", "dim -4", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { mean(x, 3); }, {"mean", "dim 3", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { max(x, 5, true); }, {"max", "dim 5", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { argmax(x, -4); }, {"argmax", "dim -4", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([] { sum(scalar_tensor(1), 1); }, {"sum", "dim 1", "[]"}));
  EXPECT_TRUE(throws_error([] { max(scalar_tensor(1), 3); }, {"max", "dim 3", "[]"}));
  EXPECT_TRUE(throws_error([] { argmax(scalar_tensor(1), -2); }, {"argmax", "dim -2", "[]"}));
  EXPECT_TRUE(throws_error([&] { sum(x, std::vector<int64_t>{1, -2}); }, {"sum", "repeats"}));
}

TEST(ReduceErrorTest, WrongDtypesAndEmptyInputs) {
  EXPECT_TRUE(throws_error([] { mean(ones({2, 3}, kInt64)); }, {"mean", "int64", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { mean(ones({2}, kBool), 0); }, {"mean", "bool", "[2]"}));
  EXPECT_TRUE(throws_error([] { max(ones({2}, kBool), 0); }, {"max", "bool", "[2]"}));
  EXPECT_TRUE(throws_error([] { argmax(ones({2}, kBool), 0); }, {"argmax", "bool", "[2]"}));
  EXPECT_TRUE(throws_error([] { max(zeros({0})); }, {"max", "empty", "[0]"}));
  EXPECT_TRUE(throws_error([] { max(zeros({2, 0}), 1); }, {"max", "empty", "[2, 0]"}));
  EXPECT_TRUE(throws_error([] { mean(zeros({0})); }, {"mean", "empty", "[0]"}));
  EXPECT_TRUE(throws_error([] { sum(Tensor()); }, {"sum", "undefined"}));
}

// ---- mean over several dims, max with indices ---------------------------------------

TEST(ReduceTest, MeanOverSeveralDimsIsSumOverCount) {
  const Tensor x = scrambled();
  for (bool keepdim : {false, true}) {
    const Tensor m = mean(x, {0, 2}, keepdim);
    EXPECT_EQ(m.shape(), keepdim ? (Shape{1, 3, 1}) : (Shape{3}));
    EXPECT_EQ(m.to_vector(), (sum(x, {0, 2}, keepdim) / 8.0).to_vector());
  }
  // Row means of the [2, 3, 4] permutation, by hand: (0+7+14+21+12+19+2+9) / 8 ...
  EXPECT_TRUE(all_close(mean(x, {0, -1}), {10.5, 11.5, 12.5}, 1e-12));
  // One dim in a list is mean over that dim; all dims is the full mean.
  EXPECT_EQ(mean(x, std::vector<int64_t>{1}).to_vector(), mean(x, 1).to_vector());
  EXPECT_EQ(mean(x, {0, 1, 2}).to_vector(), mean(x).to_vector());
  EXPECT_EQ(mean(x, {0, 1, 2}).shape(), Shape{});
}

TEST(ReduceGradTest, MeanOverSeveralDims) {
  EXPECT_TRUE(grad_ok([](const auto& in) { return mean(in[0], {0, 2}); }, {leaf64({2, 3, 4})}));
  EXPECT_TRUE(grad_ok(
      [](const auto& in) {
        return mean(in[0], {-1, 1}, true);
      },
      {leaf64({2, 3, 4})}));
}

TEST(ReduceErrorTest, MeanOverSeveralDims) {
  const Tensor x = scrambled();
  EXPECT_TRUE(throws_error([&] { mean(x, {0, 3}); }, {"mean", "dim 3", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { mean(x, {1, -2}); }, {"mean", "repeats"}));
  EXPECT_TRUE(throws_error([] { mean(ones({2}, kInt64), std::vector<int64_t>{0}); },
                           {"mean", "int64", "[2]"}));
  EXPECT_TRUE(throws_error([] { mean(zeros({2, 0}), {0, 1}); }, {"mean", "[2, 0]", "no elements"}));
}

TEST(ReduceTest, MaxWithIndicesAgreesWithMaxAndArgmax) {
  const Tensor x = scrambled();
  for (int64_t dim : {0, 1, 2, -1})
    for (bool keepdim : {false, true}) {
      const MaxResult r = max_with_indices(x, dim, keepdim);
      EXPECT_EQ(r.values.shape(), max(x, dim, keepdim).shape());
      EXPECT_EQ(r.values.to_vector(), max(x, dim, keepdim).to_vector());
      EXPECT_EQ(r.indices.dtype(), kInt64);
      EXPECT_EQ(r.indices.shape(), argmax(x, dim, keepdim).shape());
      EXPECT_EQ(r.indices.to_vector(), argmax(x, dim, keepdim).to_vector());
    }
  // By hand along the last dim: rows [0, 7, 14, 21], [4, 11, 18, 1], ...
  const MaxResult r = max_with_indices(x, -1);
  EXPECT_EQ(r.values.to_vector(), (std::vector<double>{21, 18, 22, 19, 23, 20}));
  EXPECT_EQ(r.indices.to_vector(), (std::vector<double>{3, 2, 2, 1, 1, 0}));
  // A 0-d tensor is its own maximum, at index 0.
  const MaxResult s = max_with_indices(scalar_tensor(4), 0);
  EXPECT_EQ(s.values.shape(), Shape{});
  EXPECT_EQ(s.indices.shape(), Shape{});
  EXPECT_EQ(s.indices.item(), 0);
}

TEST(ReduceGradTest, MaxWithIndicesValuesCarryMaxsGradient) {
  Tensor x = scrambled().requires_grad_();
  const MaxResult r = max_with_indices(x, 1);
  EXPECT_EQ(r.values.grad_fn_name(), "MaxBackward");
  EXPECT_FALSE(r.indices.requires_grad());
  sum(r.values).backward();
  Tensor y = scrambled().requires_grad_();
  sum(max(y, 1)).backward();
  EXPECT_EQ(x.grad().to_vector(), y.grad().to_vector());
  EXPECT_TRUE(throws_error([] { max_with_indices(ones({2}, kBool), 0); }, {"max", "bool"}));
}

}  // namespace
}  // namespace ag
