// softmax and log_softmax: the fused kernels against the composed textbook
// formula, on every dim of several shapes, with -inf, huge values, and errors.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The reference: softmax composed from primitives, exp(x - max) / sum(exp(x - max)).
Tensor reference_softmax(const Tensor& x, int64_t dim) {
  const Tensor e = exp(x - max(x, dim, /*keepdim=*/true).detach());
  return e / sum(e, dim, /*keepdim=*/true);
}

// log_softmax(x) = (x - max) - log(sum(exp(x - max))).
Tensor reference_log_softmax(const Tensor& x, int64_t dim) {
  const Tensor shifted = x - max(x, dim, /*keepdim=*/true).detach();
  return shifted - log(sum(exp(shifted), dim, /*keepdim=*/true));
}

// Forward values and the gradient of sum(y * w) from the fused op and the reference.
void expect_fused_matches_reference(bool log_variant, const Tensor& input, int64_t dim) {
  const Tensor x = input.detach().clone().requires_grad_();
  const Tensor xr = input.detach().clone().requires_grad_();
  const Tensor y = log_variant ? log_softmax(x, dim) : softmax(x, dim);
  const Tensor yr = log_variant ? reference_log_softmax(xr, dim) : reference_softmax(xr, dim);
  const double tol = input.dtype() == kFloat64 ? 1e-12 : 1e-6;
  ASSERT_TRUE(all_close(y, yr, tol, tol));
  const Tensor w = uniform(y.shape(), 0.5, 1.5, input.dtype());
  sum(y * w).backward();
  sum(yr * w).backward();
  EXPECT_TRUE(all_close(x.grad(), xr.grad(), tol, tol));
}

TEST(SoftmaxTest, FusedMatchesComposedOnEveryDim) {
  for (const Shape& shape : {Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{2, 1, 5, 3}, Shape{}}) {
    // Every dim, counted from the front and from the end (a 0-d tensor accepts 0 and -1).
    const int64_t nd = std::max<int64_t>(static_cast<int64_t>(shape.size()), 1);
    for (int64_t dim = -nd; dim < nd; ++dim) {
      for (const DType dtype : {kFloat64, kFloat32}) {
        for (const bool log_variant : {false, true}) {
          SCOPED_TRACE(shape_str(shape) + " dim " + std::to_string(dim) + " " + dtype_name(dtype) +
                       (log_variant ? " log_softmax" : " softmax"));
          expect_fused_matches_reference(log_variant, uniform(shape, -3, 3, dtype), dim);
        }
      }
    }
  }
}

TEST(SoftmaxTest, LongRowsAndWideBlocks) {
  // A row longer than any vector width, and many columns side by side.
  expect_fused_matches_reference(false, uniform({3, 1000}, -5, 5, kFloat64), 1);
  expect_fused_matches_reference(true, uniform({3, 1000}, -5, 5, kFloat64), 1);
  expect_fused_matches_reference(false, uniform({2, 17, 300}, -5, 5, kFloat64), 1);
  expect_fused_matches_reference(true, uniform({2, 17, 300}, -5, 5, kFloat64), 1);
}

TEST(SoftmaxTest, SameBitsWithAnyThreadCount) {
  // Rows are split across threads, but each row's arithmetic never changes.
  Tensor x = randn({64, 300}).requires_grad_(), g = randn({64, 300});
  Tensor z = randn({8, 50, 90}).requires_grad_(), gz = randn({8, 50, 90});
  auto run = [&] {
    x.zero_grad();
    z.zero_grad();
    softmax(x, 1).backward(g);
    log_softmax(z, 1).backward(gz);
    return std::vector<std::vector<double>>{softmax(x, 1).to_vector(), x.grad().to_vector(),
                                            log_softmax(z, 1).to_vector(), z.grad().to_vector()};
  };
  const int threads = get_num_threads();
  set_num_threads(1);
  const auto serial = run();
  set_num_threads(std::max(threads, 3));
  const auto parallel = run();
  set_num_threads(threads);
  EXPECT_EQ(serial, parallel);
}

TEST(SoftmaxTest, NonContiguousInput) {
  const Tensor base = uniform({4, 6}, -2, 2, kFloat64);
  expect_fused_matches_reference(false, transpose(base, 0, 1), 1);
  expect_fused_matches_reference(true, transpose(base, 0, 1), 0);
  expect_fused_matches_reference(false, expand(uniform({1, 5}, -2, 2, kFloat64), {3, 5}), -1);
}

TEST(SoftmaxTest, HandComputedValues) {
  const Tensor x = tensor({0, std::log(2.0), std::log(5.0)}, {3}, kFloat64);
  EXPECT_TRUE(all_close(softmax(x, 0), {1.0 / 8, 2.0 / 8, 5.0 / 8}, 1e-15));
  EXPECT_TRUE(all_close(log_softmax(x, 0),
                        {std::log(1.0 / 8), std::log(2.0 / 8), std::log(5.0 / 8)}, 1e-15));
  EXPECT_EQ(softmax(scalar_tensor(3.0), 0).item(), 1.0);  // 0-d: one element, weight 1
  // Rows sum to one along the chosen dim, in float32 too.
  const Tensor p = softmax(randn({4, 5, 6}), 1);
  EXPECT_TRUE(all_close(sum(p, 1), std::vector<double>(24, 1.0), 1e-6));
}

TEST(SoftmaxTest, LargeValuesAreStable) {
  // Without the max subtraction exp(1000) would overflow to inf.
  for (const DType dtype : {kFloat32, kFloat64}) {
    const Tensor big = tensor({1000, 1001, 1002}, {1, 3}, dtype);
    const Tensor small = tensor({0, 1, 2}, {1, 3}, dtype);
    EXPECT_TRUE(all_close(softmax(big, 1), softmax(small, 1), 1e-6));
    EXPECT_TRUE(all_close(log_softmax(big, 1), log_softmax(small, 1), 1e-5));
    EXPECT_TRUE(all_close(softmax(-big, 1), softmax(-small, 1), 1e-6));
  }
}

TEST(SoftmaxTest, MinusInfinityGetsZeroWeight) {
  const Tensor x = tensor({1, -kInf, 2, -kInf, -kInf, 0}, {2, 3}, kFloat64).requires_grad_();
  const Tensor y = softmax(x, 1);
  const double e = std::exp(1.0);
  EXPECT_TRUE(all_close(y, {1 / (1 + e), 0, e / (1 + e), 0, 0, 1}, 1e-15));
  sum(y * tensor({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64)).backward();
  // The masked positions get no gradient, and nothing is NaN.
  const std::vector<double> g = x.grad().to_vector();
  EXPECT_EQ(g[1], 0.0);
  EXPECT_EQ(g[3], 0.0);
  for (double v : g) EXPECT_FALSE(std::isnan(v));
  const std::vector<double> ly = log_softmax(x.detach(), 1).to_vector();
  EXPECT_NEAR(ly[0], std::log(1 / (1 + e)), 1e-15);
  EXPECT_NEAR(ly[2], std::log(e / (1 + e)), 1e-15);
  EXPECT_EQ(ly[5], 0.0);
  EXPECT_TRUE(ly[1] == -kInf && ly[3] == -kInf && ly[4] == -kInf);
}

TEST(SoftmaxTest, RowOfOnlyMinusInfinityIsNaNLikePyTorch) {
  // No finite max: (-inf) - (-inf) is NaN. nn's masked_softmax avoids this by
  // masking with a large finite negative value.
  const Tensor x = tensor({-kInf, -kInf, 1, 2}, {2, 2}, kFloat64);
  const std::vector<double> y = softmax(x, 1).to_vector();
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_FALSE(std::isnan(y[2]) || std::isnan(y[3]));
  const std::vector<double> ly = log_softmax(x, 1).to_vector();
  EXPECT_TRUE(std::isnan(ly[0]) && std::isnan(ly[1]));
}

TEST(SoftmaxTest, GradcheckEveryDim) {
  const Tensor x = leaf64({2, 3, 4}, -2, 2);
  for (int64_t dim = -3; dim < 3; ++dim) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    EXPECT_TRUE(grad_ok([dim](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, {x}));
    EXPECT_TRUE(
        grad_ok([dim](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); }, {x}));
  }
  // Through a transposed view, and composed with other ops.
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) { return softmax(exp(transpose(in[0], 0, 2)), 1); }, {x}));
}

TEST(SoftmaxTest, NodeNamesAndErrors) {
  const Tensor x = ones({2, 3}).requires_grad_();
  EXPECT_EQ(softmax(x, 1).grad_fn_name(), "SoftmaxBackward");
  EXPECT_EQ(log_softmax(x, 1).grad_fn_name(), "LogSoftmaxBackward");
  EXPECT_TRUE(throws_error(
      [] {
        softmax(ones({2, 3}), 2);
      },
      {"softmax", "dim 2 out of range", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { log_softmax(ones({2, 3}), -3); }, {"log_softmax", "dim -3"}));
  EXPECT_TRUE(throws_error([] { softmax(arange(3, kInt64), 0); }, {"softmax", "int64", "[3]"}));
  EXPECT_TRUE(throws_error([] { log_softmax(Tensor(), 0); }, {"log_softmax", "undefined"}));
  EXPECT_EQ(softmax(ones({2, 0}), 1).shape(), (Shape{2, 0}));
  EXPECT_EQ(softmax(ones({0, 3}), 1).shape(), (Shape{0, 3}));
}

}  // namespace
}  // namespace ag
