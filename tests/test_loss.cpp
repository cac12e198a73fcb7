// dropout, mse_loss and cross_entropy: values, statistics, reproducibility,
// gradients and errors.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// ---- dropout ------------------------------------------------------------------------------

TEST(DropoutTest, IdentityInEvalAndForPZero) {
  const Tensor x = randn({3, 4}).requires_grad_();
  EXPECT_TRUE(dropout(x, 0.5, /*training=*/false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, /*training=*/true).is_same(x));
}

TEST(DropoutTest, KeepsAboutOneMinusPAndScalesTheSurvivors) {
  manual_seed(7);
  const double p = 0.3;
  const int64_t n = 200000;
  const std::vector<double> y = dropout(ones({n}), p, /*training=*/true).to_vector();
  int64_t kept = 0;
  for (double v : y) {
    if (v == 0) continue;
    ++kept;
    EXPECT_FLOAT_EQ(v, 1.0 / (1.0 - p));
  }
  // Binomial(n, 0.7): standard deviation ~205 elements; allow 5 of them.
  EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 5 * std::sqrt(p * (1 - p) / n));
  // Inverted dropout keeps the mean.
  EXPECT_NEAR(mean(tensor(y, {n}, kFloat64)).item(), 1.0, 0.01);
}

TEST(DropoutTest, ReproducibleFromManualSeed) {
  const Tensor x = ones({1000}, kFloat64);
  manual_seed(42);
  const Tensor a = dropout(x, 0.5, true);
  const Tensor b = dropout(x, 0.5, true);  // the next draw: a different mask
  manual_seed(42);
  const Tensor c = dropout(x, 0.5, true);
  EXPECT_EQ(a.to_vector(), c.to_vector());
  EXPECT_NE(a.to_vector(), b.to_vector());
}

TEST(DropoutTest, GradientUsesTheSameMask) {
  manual_seed(3);
  const Tensor x = uniform({50, 40}, 1, 2, kFloat64).requires_grad_();
  const Tensor y = dropout(x, 0.25, true);
  EXPECT_EQ(y.grad_fn_name(), "DropoutBackward");
  sum(y).backward();
  // y = x * mask  =>  dL/dx = mask = y / x
  EXPECT_TRUE(all_close(x.grad(), y.detach() / x.detach(), 1e-12, 1e-12));
}

TEST(DropoutTest, NonContiguousInputAndFloat32) {
  manual_seed(5);
  const Tensor x = transpose(uniform({6, 8}, 1, 2), 0, 1);
  const Tensor y = dropout(x, 0.5, true);
  EXPECT_EQ(y.shape(), (Shape{8, 6}));
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_TRUE(yv[i] == 0 || std::abs(yv[i] - 2 * xv[i]) < 1e-6);
}

// The float32 kernel (detail::dropout_f32, SIMD clones) against the plain
// float64 loop: the same mask from the same seed, and out = x * float(1/(1-p))
// where kept. 1027 elements: full vectors and a tail.
TEST(DropoutTest, Float32KernelMatchesTheFloat64Loop) {
  const Tensor x = uniform({1027}, -2, 2);
  const double p = 0.3;
  manual_seed(11);
  const std::vector<double> y32 = dropout(x, p, true).to_vector();
  manual_seed(11);
  const std::vector<double> y64 = dropout(x.to(kFloat64), p, true).to_vector();
  const std::vector<double> xv = x.to_vector();
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    kept += y64[i] != 0;
    const float expected = y64[i] == 0 ? 0.0f : static_cast<float>(xv[i]) * scale;
    EXPECT_EQ(y32[i], static_cast<double>(expected)) << "element " << i;
  }
  EXPECT_GT(kept, 600);
  EXPECT_LT(kept, 840);
}

TEST(DropoutTest, BadArgumentsThrow) {
  EXPECT_TRUE(throws_error([] { dropout(ones({2}), -0.1, true); }, {"dropout", "[0, 1)", "-0.1"}));
  EXPECT_TRUE(throws_error([] { dropout(ones({2}), 1.0, true); }, {"dropout", "[0, 1)"}));
  EXPECT_TRUE(throws_error([] { dropout(ones({2}), std::nan(""), false); }, {"dropout", "[0, 1)"}));
  EXPECT_TRUE(throws_error([] { dropout(arange(3, kInt64), 0.5, true); }, {"dropout", "int64"}));
}

// ---- mse_loss --------------------------------------------------------------------------------

TEST(MseLossTest, ValuesAndGradients) {
  const Tensor input = tensor({1, 2, 3, 4}, {2, 2}, kFloat64).requires_grad_();
  const Tensor target = tensor({0, 2, 5, 1}, {2, 2}, kFloat64).requires_grad_();
  const Tensor loss = mse_loss(input, target);
  EXPECT_EQ(loss.shape(), Shape{});
  EXPECT_DOUBLE_EQ(loss.item(), (1.0 + 0.0 + 4.0 + 9.0) / 4);
  EXPECT_EQ(loss.grad_fn_name(), "MseLossBackward");
  loss.backward();
  // dL/dinput = 2 (input - target) / n
  EXPECT_TRUE(all_close(input.grad(), {0.5, 0.0, -1.0, 1.5}, 1e-15));
  EXPECT_TRUE(all_close(target.grad(), {-0.5, 0.0, 1.0, -1.5}, 1e-15));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1]); },
                      {leaf64({3, 4}), leaf64({3, 4})}));
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) { return mse_loss(transpose(in[0], 0, 1), in[1]) * 3.0; },
      {leaf64({4, 3}), leaf64({3, 4})}));
  EXPECT_NEAR(mse_loss(ones({5}), zeros({5})).item(), 1.0, 1e-7);  // float32
}

TEST(MseLossTest, BadArgumentsThrow) {
  // No broadcasting: a [3] target against [3, 1] input is a classic silent bug.
  EXPECT_TRUE(throws_error(
      [] {
        mse_loss(ones({3, 1}), ones({3}));
      },
      {"mse_loss", "[3, 1]", "[3]", "same shape"}));
  EXPECT_TRUE(throws_error([] { mse_loss(ones({3}), ones({3}, kFloat64)); },
                           {"mse_loss", "float32", "float64"}));
  EXPECT_TRUE(
      throws_error([] { mse_loss(ones({3}, kInt64), ones({3}, kInt64)); }, {"mse_loss", "int64"}));
  EXPECT_TRUE(throws_error([] { mse_loss(ones({0}), ones({0})); }, {"mse_loss", "empty"}));
}

// ---- cross_entropy ---------------------------------------------------------------------------

// -mean_n log(softmax(logits)[n, t_n]), computed by hand on std::vectors.
double reference_cross_entropy(const std::vector<double>& logits, const std::vector<int64_t>& t,
                               int64_t C) {
  double total = 0;
  const int64_t N = static_cast<int64_t>(t.size());
  for (int64_t n = 0; n < N; ++n) {
    double max = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t c = 0; c < C; ++c) max = std::max(max, logits[static_cast<size_t>(n * C + c)]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(logits[static_cast<size_t>(n * C + c)] - max);
    total -= logits[static_cast<size_t>(n * C + t[static_cast<size_t>(n)])] - max - std::log(s);
  }
  return total / static_cast<double>(N);
}

Tensor targets(const std::vector<int64_t>& t) {
  return tensor(std::vector<double>(t.begin(), t.end()), {static_cast<int64_t>(t.size())}, kInt64);
}

TEST(CrossEntropyTest, Values) {
  const std::vector<double> v = {1, 2, 3, 1, 1, 1, -2, 0.5, 4};
  const Tensor logits = tensor(v, {3, 3}, kFloat64);
  const Tensor loss = cross_entropy(logits, targets({2, 0, 1}));
  EXPECT_EQ(loss.shape(), Shape{});
  EXPECT_NEAR(loss.item(), reference_cross_entropy(v, {2, 0, 1}, 3), 1e-14);
  // Uniform logits: log C.
  EXPECT_NEAR(cross_entropy(zeros({4, 5}), targets({0, 1, 2, 4})).item(), std::log(5.0), 1e-6);
  // One sample: logits [C] and a 0-d target.
  const Tensor one = cross_entropy(tensor({1, 2, 3}, {3}, kFloat64), reshape(targets({2}), {}));
  EXPECT_NEAR(one.item(), reference_cross_entropy({1, 2, 3}, {2}, 3), 1e-14);
  // Huge logits stay finite.
  const Tensor huge = cross_entropy(tensor({1000, 0, -1000, 1000}, {2, 2}), targets({1, 0}));
  EXPECT_NEAR(huge.item(), (1000.0 + 2000.0) / 2, 1e-3);
}

TEST(CrossEntropyTest, GradientIsSoftmaxMinusOneHot) {
  const Tensor logits = tensor({1, 2, 3, 0, 0, 0}, {2, 3}, kFloat64).requires_grad_();
  const Tensor loss = cross_entropy(logits, targets({2, 1}));
  EXPECT_EQ(loss.grad_fn_name(), "CrossEntropyBackward");
  loss.backward();
  const Tensor p = softmax(logits.detach(), 1);
  const Tensor onehot = tensor({0, 0, 1, 0, 1, 0}, {2, 3}, kFloat64);
  EXPECT_TRUE(all_close(logits.grad(), (p - onehot) / 2.0, 1e-15));
  const Tensor t = targets({0, 3, 3, 1});
  EXPECT_TRUE(grad_ok([t](const std::vector<Tensor>& in) { return cross_entropy(in[0], t); },
                      {leaf64({4, 5}, -3, 3)}));
  EXPECT_TRUE(grad_ok(
      [t](const std::vector<Tensor>& in) { return cross_entropy(transpose(in[0], 0, 1), t) * 2.0; },
      {leaf64({5, 4}, -3, 3)}));
  const Tensor t0 = reshape(targets({1}), {});
  EXPECT_TRUE(grad_ok([t0](const std::vector<Tensor>& in) { return cross_entropy(in[0], t0); },
                      {leaf64({3})}));
}

TEST(CrossEntropyTest, Float32AgreesWithFloat64) {
  const Tensor logits = uniform({6, 7}, -4, 4, kFloat64);
  const Tensor t = targets({0, 6, 3, 3, 1, 2});
  EXPECT_NEAR(cross_entropy(logits.to(kFloat32), t).item(), cross_entropy(logits, t).item(), 1e-5);
}

TEST(CrossEntropyTest, BadTargetsAndShapesThrow) {
  EXPECT_TRUE(throws_error(
      [] {
        cross_entropy(zeros({2, 5}), targets({1, 5}));
      },
      {"cross_entropy", "target 5", "index 1", "5 classes"}));
  EXPECT_TRUE(throws_error(
      [] {
        cross_entropy(zeros({2, 5}), targets({-1, 0}));
      },
      {"cross_entropy", "target -1", "5 classes"}));
  EXPECT_TRUE(throws_error(
      [] {
        cross_entropy(zeros({2, 5}), zeros({2}));
      },
      {"cross_entropy", "int64", "float32"}));
  EXPECT_TRUE(throws_error(
      [] {
        cross_entropy(zeros({2, 5}), targets({1, 2, 3}));
      },
      {"cross_entropy", "[2, 5]", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        cross_entropy(zeros({2, 3, 5}), targets({1, 2}));
      },
      {"cross_entropy", "[N, C]", "[2, 3, 5]"}));
  EXPECT_TRUE(throws_error([] { cross_entropy(zeros({5}), targets({1})); },
                           {"cross_entropy", "[5]", "0-d"}));
  EXPECT_TRUE(throws_error(
      [] {
        cross_entropy(zeros({2, 5}, kInt64), targets({1, 2}));
      },
      {"cross_entropy", "logits", "int64"}));
}

}  // namespace
}  // namespace ag
