// Elementwise unary ops: neg, exp, log, tanh, sigmoid, relu, sqrt, abs —
// values, gradients (away from kinks), conventions at the kinks, bad dtypes.
#include <cmath>
#include <functional>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// ---- forward values -------------------------------------------------------------------

TEST(UnaryTest, Neg) {
  EXPECT_TRUE(all_close(neg(tensor({1, -2, 0.5})), {-1, 2, -0.5}));
  EXPECT_EQ(neg(tensor({3, -4}, {2}, kInt64)).to_vector(), (std::vector<double>{-3, 4}));
}

TEST(UnaryTest, Exp) {
  EXPECT_TRUE(all_close(exp(tensor({0, 1, -1, 2}, {4}, kFloat64)),
                        {1, 2.718281828459045, 0.36787944117144233, 7.38905609893065}, 1e-12));
  EXPECT_EQ(exp(tensor({-1000})).item(), 0.0);
  EXPECT_TRUE(std::isinf(exp(tensor({1000})).item()));
}

TEST(UnaryTest, Log) {
  EXPECT_TRUE(all_close(log(tensor({1, 2.718281828459045, 0.5, 100}, {4}, kFloat64)),
                        {0, 1, -0.6931471805599453, 4.605170185988092}, 1e-12));
  EXPECT_EQ(log(tensor({0})).item(), -INFINITY);
  EXPECT_TRUE(std::isnan(log(tensor({-1})).item()));
}

TEST(UnaryTest, Tanh) {
  EXPECT_TRUE(all_close(tanh(tensor({0, 0.5, -2, 20}, {4}, kFloat64)),
                        {0, 0.46211715726000974, -0.9640275800758169, 1}, 1e-12));
}

TEST(UnaryTest, Sigmoid) {
  EXPECT_TRUE(all_close(sigmoid(tensor({0, 2, -2}, {3}, kFloat64)),
                        {0.5, 0.8807970779778823, 0.11920292202211755}, 1e-12));
  // Stable at both ends: no overflow, no NaN.
  Tensor far = sigmoid(tensor({-1000, 1000, -100}, {3}, kFloat64));
  EXPECT_TRUE(all_close(far, {0, 1, 3.720075976020836e-44}, 0, 1e-12));
  EXPECT_TRUE(all_close(sigmoid(tensor({-1000, 1000})), {0, 1}, 0));
}

TEST(UnaryTest, Relu) {
  EXPECT_TRUE(all_close(relu(tensor({-1, 0, 2.5, -0.001})), {0, 0, 2.5, 0}));
  EXPECT_TRUE(std::isnan(relu(tensor({NAN})).item()));  // NaN passes through, as in PyTorch
}

TEST(UnaryTest, Sqrt) {
  EXPECT_TRUE(all_close(sqrt(tensor({0, 4, 2, 0.25}, {4}, kFloat64)),
                        {0, 2, 1.4142135623730951, 0.5}, 1e-12));
  EXPECT_TRUE(std::isnan(sqrt(tensor({-1})).item()));
}

TEST(UnaryTest, Abs) {
  EXPECT_TRUE(all_close(abs(tensor({-3, 0, 2.5})), {3, 0, 2.5}));
  EXPECT_EQ(abs(tensor({-3, 4}, {2}, kInt64)).to_vector(), (std::vector<double>{3, 4}));
  EXPECT_EQ(abs(tensor({-3, 4}, {2}, kInt64)).dtype(), kInt64);
}

TEST(UnaryTest, KeepShapeAndDtypeAndReadStridedViews) {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64);
  Tensor y = sqrt(transpose(x, 0, 1));  // [[1, 4], [2, 5], [3, 6]]
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_TRUE(
      all_close(y, {1, 2, std::sqrt(2.0), std::sqrt(5.0), std::sqrt(3.0), std::sqrt(6.0)}, 1e-12));
  // Broadcast (stride-0) views too.
  EXPECT_TRUE(all_close(exp(expand(tensor({0}, {1}), {3})), {1, 1, 1}));
  EXPECT_EQ(exp(scalar_tensor(0)).shape(), Shape{});
  EXPECT_EQ(exp(zeros({0, 2})).shape(), (Shape{0, 2}));
}

// ---- gradients --------------------------------------------------------------------------

struct UnaryOp {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  double low, high;  // where to sample inputs: inside the domain, off any kink
};

const std::vector<UnaryOp>& smooth_ops() {
  static const std::vector<UnaryOp> ops = {
      {"neg", [](const Tensor& x) { return neg(x); }, -2, 2},
      {"exp", [](const Tensor& x) { return exp(x); }, -2, 2},
      {"log", [](const Tensor& x) { return log(x); }, 0.5, 3},
      {"tanh", [](const Tensor& x) { return tanh(x); }, -2, 2},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -4, 4},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0.5, 3},
  };
  return ops;
}

TEST(UnaryGradTest, SmoothOps) {
  manual_seed(21);
  for (const UnaryOp& op : smooth_ops()) {
    for (const Shape& shape : {Shape{2, 3}, Shape{}, Shape{4, 1, 2}}) {
      EXPECT_TRUE(grad_ok([&op](const std::vector<Tensor>& in) { return op.fn(in[0]); },
                          {leaf64(shape, op.low, op.high)}))
          << op.name << " " << shape_str(shape);
    }
    // Through a transposed input.
    EXPECT_TRUE(
        grad_ok([&op](const std::vector<Tensor>& in) { return op.fn(transpose(in[0], 0, 1)); },
                {leaf64({3, 2}, op.low, op.high)}))
        << op.name << " transposed";
  }
}

TEST(UnaryGradTest, ReluAndAbsAwayFromZero) {
  // Both signs, every value at least 0.1 from the kink at 0.
  Tensor x = tensor({-1.3, -0.4, 0.2, 0.7, 1.9, -2.2}, {2, 3}, kFloat64).requires_grad_();
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return relu(in[0]); }, {x}));
  EXPECT_TRUE(grad_ok([](const std::vector<Tensor>& in) { return abs(in[0]); }, {x}));
}

TEST(UnaryGradTest, HandComputedGradients) {
  Tensor x = tensor({0, 1}, {2}, kFloat64).requires_grad_();
  sum(exp(x)).backward();  // e^x
  EXPECT_TRUE(all_close(x.grad(), {1, 2.718281828459045}, 1e-12));
  x.zero_grad();
  sum(tanh(x)).backward();  // 1 - tanh^2
  EXPECT_TRUE(all_close(x.grad(), {1, 1 - std::pow(std::tanh(1.0), 2)}, 1e-12));
  x.zero_grad();
  sum(sigmoid(x)).backward();  // s (1 - s)
  EXPECT_TRUE(all_close(x.grad(), {0.25, 0.19661193324148185}, 1e-12));

  Tensor p = tensor({4, 0.5}, {2}, kFloat64).requires_grad_();
  sum(log(p)).backward();  // 1 / x
  EXPECT_TRUE(all_close(p.grad(), {0.25, 2}));
  p.zero_grad();
  sum(sqrt(p)).backward();  // 1 / (2 sqrt x)
  EXPECT_TRUE(all_close(p.grad(), {0.25, 1 / (2 * std::sqrt(0.5))}, 1e-12));
}

TEST(UnaryGradTest, KinksTakePyTorchsConventions) {
  // relu'(0) = 0 and |x|'(0) = 0.
  Tensor x = tensor({-1, 0, 2}, {3}, kFloat64).requires_grad_();
  sum(relu(x)).backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 0, 1}));
  x.zero_grad();
  sum(abs(x)).backward();
  EXPECT_TRUE(all_close(x.grad(), {-1, 0, 1}));
}

TEST(UnaryGradTest, NodesAreNamed) {
  Tensor x = ones({2}).requires_grad_();
  EXPECT_EQ(neg(x).grad_fn_name(), "NegBackward");
  EXPECT_EQ(exp(x).grad_fn_name(), "ExpBackward");
  EXPECT_EQ(log(x).grad_fn_name(), "LogBackward");
  EXPECT_EQ(tanh(x).grad_fn_name(), "TanhBackward");
  EXPECT_EQ(sigmoid(x).grad_fn_name(), "SigmoidBackward");
  EXPECT_EQ(relu(x).grad_fn_name(), "ReluBackward");
  EXPECT_EQ(sqrt(x).grad_fn_name(), "SqrtBackward");
  EXPECT_EQ(abs(x).grad_fn_name(), "AbsBackward");
}

// ---- bad inputs ---------------------------------------------------------------------------

TEST(UnaryErrorTest, FloatingPointOnlyOps) {
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
  };
  for (const auto& op : ops) {
    const char* name = op.first;
    const auto& fn = op.second;  // (a structured binding cannot be captured before clang 16)
    EXPECT_TRUE(throws_error([&] { fn(ones({2, 3}, kInt64)); }, {name, "int64", "[2, 3]"})) << name;
    EXPECT_TRUE(throws_error([&] { fn(ones({2}, kBool)); }, {name, "bool", "[2]"})) << name;
    EXPECT_TRUE(throws_error([&] { fn(Tensor()); }, {name, "undefined"})) << name;
  }
}

TEST(UnaryErrorTest, SignedOpsRefuseBool) {
  EXPECT_TRUE(throws_error([] { neg(ones({2}, kBool)); }, {"neg", "bool", "[2]"}));
  EXPECT_TRUE(throws_error([] { abs(ones({3, 1}, kBool)); }, {"abs", "bool", "[3, 1]"}));
}

}  // namespace
}  // namespace ag
