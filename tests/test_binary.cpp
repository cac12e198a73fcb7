// Elementwise binary ops: add, sub, mul, div, pow, maximum and the scalar
// operators at equal and broadcast shapes (values and gradients), dtype and
// shape errors, comparisons and logic.
#include <cmath>
#include <functional>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

struct BinaryOp {
  const char* name;
  BinaryFn fn;
  double (*ref)(double, double);  // the same op on plain numbers
};

// Every differentiable binary op; pow and div want a positive right operand
// for their gradients, which the gradient tests provide.
const std::vector<BinaryOp>& binary_ops() {
  static const std::vector<BinaryOp> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; },
       [](double x, double y) { return x + y; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; },
       [](double x, double y) { return x - y; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; },
       [](double x, double y) { return x * y; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; },
       [](double x, double y) { return x / y; }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double x, double y) { return std::pow(x, y); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double x, double y) { return std::max(x, y); }},
  };
  return ops;
}

// ---- forward values -------------------------------------------------------------------

TEST(BinaryTest, EqualShapes) {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64);
  Tensor b = tensor({2, 3, 1, 0.5, 0, -1}, {2, 3}, kFloat64);
  EXPECT_TRUE(all_close(a + b, {3, 5, 4, 4.5, 5, 5}));
  EXPECT_TRUE(all_close(a - b, {-1, -1, 2, 3.5, 5, 7}));
  EXPECT_TRUE(all_close(a * b, {2, 6, 3, 2, 0, -6}));
  EXPECT_TRUE(all_close(b / a, {2, 1.5, 1.0 / 3, 0.125, 0, -1.0 / 6}));
  EXPECT_TRUE(all_close(pow(a, b), {1, 8, 3, 2, 1, 1.0 / 6}));
  EXPECT_TRUE(all_close(maximum(a, b), {2, 3, 3, 4, 5, 6}));
  EXPECT_TRUE(all_close(add(a, b), a + b));
  EXPECT_TRUE(all_close(sub(a, b), a - b));
  EXPECT_TRUE(all_close(mul(a, b), a * b));
  EXPECT_TRUE(all_close(div(a, abs(b) + 1.0), a / (abs(b) + 1.0)));
  EXPECT_EQ((a + b).dtype(), kFloat64);
  EXPECT_EQ((a + b).shape(), (Shape{2, 3}));
}

TEST(BinaryTest, BroadcastColumnWithRow) {
  // [3, 1] with [4] -> [3, 4]
  Tensor a = tensor({1, 2, 3}, {3, 1});
  Tensor b = tensor({1, 2, 4, -1}, {4});
  EXPECT_EQ((a + b).shape(), (Shape{3, 4}));
  EXPECT_TRUE(all_close(a + b, {2, 3, 5, 0, 3, 4, 6, 1, 4, 5, 7, 2}));
  EXPECT_TRUE(all_close(a - b, {0, -1, -3, 2, 1, 0, -2, 3, 2, 1, -1, 4}));
  EXPECT_TRUE(all_close(a * b, {1, 2, 4, -1, 2, 4, 8, -2, 3, 6, 12, -3}));
  EXPECT_TRUE(all_close(a / b, {1, 0.5, 0.25, -1, 2, 1, 0.5, -2, 3, 1.5, 0.75, -3}));
  EXPECT_TRUE(all_close(pow(a, b), {1, 1, 1, 1, 2, 4, 16, 0.5, 3, 9, 81, 1.0 / 3}));
  EXPECT_TRUE(all_close(maximum(a, b), {1, 2, 4, 1, 2, 2, 4, 2, 3, 3, 4, 3}));
  // The other way round: [4] with [3, 1].
  EXPECT_TRUE(all_close(b - a, {0, 1, 3, -2, -1, 0, 2, -3, -2, -1, 1, -4}));
}

TEST(BinaryTest, BroadcastThreeDimensions) {
  // [2, 1, 4] with [3, 1] -> [2, 3, 4]: out[i, j, k] = f(a[i, 0, k], b[j, 0]).
  const std::vector<double> av = {1, 2, 3, 4, 0.5, 1.5, 2.5, 3.5}, bv = {1, 2, 0.25};
  Tensor a = tensor(av, {2, 1, 4}, kFloat64);
  Tensor b = tensor(bv, {3, 1}, kFloat64);
  for (const BinaryOp& op : binary_ops()) {
    Tensor y = op.fn(a, b);
    ASSERT_EQ(y.shape(), (Shape{2, 3, 4})) << op.name;
    std::vector<double> expected;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) expected.push_back(op.ref(av[i * 4 + k], bv[j]));
    EXPECT_TRUE(all_close(y, expected, 1e-12)) << op.name;
  }
}

TEST(BinaryTest, BroadcastZeroDimensional) {
  Tensor s = scalar_tensor(2);
  Tensor t = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ((s + t).shape(), (Shape{2, 3}));
  EXPECT_TRUE(all_close(s + t, {3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(all_close(s - t, {1, 0, -1, -2, -3, -4}));
  EXPECT_TRUE(all_close(t - s, {-1, 0, 1, 2, 3, 4}));
  EXPECT_TRUE(all_close(s * t, {2, 4, 6, 8, 10, 12}));
  EXPECT_TRUE(all_close(s / t, {2, 1, 2.0 / 3, 0.5, 0.4, 1.0 / 3}));
  EXPECT_TRUE(all_close(t / s, {0.5, 1, 1.5, 2, 2.5, 3}));
  EXPECT_TRUE(all_close(pow(s, t), {2, 4, 8, 16, 32, 64}));
  EXPECT_TRUE(all_close(pow(t, s), {1, 4, 9, 16, 25, 36}));
  EXPECT_TRUE(all_close(maximum(s, t), {2, 2, 3, 4, 5, 6}));
  // Two 0-d operands give a 0-d result.
  EXPECT_EQ((s * s).shape(), Shape{});
  EXPECT_EQ((s * s).item(), 4.0);
}

// A one-value operand with a contiguous one takes a flat loop; with a
// transposed one the strided walk: the same values, on either side.
TEST(BinaryTest, OneValueOperandFlatLoopMatchesTheWalk) {
  manual_seed(2);
  const Tensor x = randn({6, 9});
  const Tensor xt = transpose(transpose(x, 0, 1).contiguous(), 0, 1);  // x's values, strided
  ASSERT_FALSE(xt.is_contiguous());
  const Tensor v = scalar_tensor(1.7);
  EXPECT_EQ(div(x, v).to_vector(), div(xt, v).to_vector());
  EXPECT_EQ(sub(v, x).to_vector(), sub(v, xt).to_vector());
  EXPECT_EQ(mul(x, ones({1, 1})).to_vector(), x.to_vector());
}

TEST(BinaryTest, ScalarOperators) {
  Tensor x = tensor({1, 2, 4, -0.5}, {4}, kFloat64);
  EXPECT_TRUE(all_close(x + 2.0, {3, 4, 6, 1.5}));
  EXPECT_TRUE(all_close(2.0 + x, {3, 4, 6, 1.5}));
  EXPECT_TRUE(all_close(x - 2.0, {-1, 0, 2, -2.5}));
  EXPECT_TRUE(all_close(2.0 - x, {1, 0, -2, 2.5}));
  EXPECT_TRUE(all_close(x * 2.0, {2, 4, 8, -1}));
  EXPECT_TRUE(all_close(2.0 * x, {2, 4, 8, -1}));
  EXPECT_TRUE(all_close(x / 2.0, {0.5, 1, 2, -0.25}));
  EXPECT_TRUE(all_close(2.0 / x, {2, 1, 0.5, -4}));
  EXPECT_TRUE(all_close(-x, {-1, -2, -4, 0.5}));
  // The scalar takes the tensor's dtype: no promotion.
  EXPECT_EQ((x * 2.0).dtype(), kFloat64);
  EXPECT_EQ((tensor({1}) * 2.0).dtype(), kFloat32);
  EXPECT_EQ((tensor({3, 4}, {2}, kInt64) + 2.0).to_vector(), (std::vector<double>{5, 6}));
  EXPECT_EQ((tensor({3, 4}, {2}, kInt64) + 2.0).dtype(), kInt64);
}

TEST(BinaryTest, PowWithScalarExponent) {
  Tensor x = tensor({1, 4, 9}, {3}, kFloat64);
  EXPECT_TRUE(all_close(pow(x, 0.5), {1, 2, 3}));
  EXPECT_TRUE(all_close(pow(x, 2.0), {1, 16, 81}));
  EXPECT_TRUE(all_close(pow(x, -1.0), {1, 0.25, 1.0 / 9}));
  EXPECT_TRUE(all_close(pow(x, 0.0), {1, 1, 1}));
}

TEST(BinaryTest, Int64Arithmetic) {
  Tensor a = tensor({7, -7, 3}, {3}, kInt64);
  Tensor b = tensor({2, 2, -4}, {3}, kInt64);
  EXPECT_EQ((a + b).to_vector(), (std::vector<double>{9, -5, -1}));
  EXPECT_EQ((a - b).to_vector(), (std::vector<double>{5, -9, 7}));
  EXPECT_EQ((a * b).to_vector(), (std::vector<double>{14, -14, -12}));
  EXPECT_EQ(maximum(a, b).to_vector(), (std::vector<double>{7, 2, 3}));
  EXPECT_EQ((a * b).dtype(), kInt64);
  // Integer division truncates toward zero (C++), and refuses a zero divisor.
  EXPECT_EQ((a / b).to_vector(), (std::vector<double>{3, -3, 0}));
  EXPECT_TRUE(throws_error([&] { a / tensor({1, 0, 1}, {3}, kInt64); }, {"div", "zero"}));
}

TEST(BinaryTest, MaximumPropagatesNaN) {
  Tensor y = maximum(tensor({NAN, 1, 2}), tensor({1, NAN, 1}));
  const std::vector<double> v = y.to_vector();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 2.0);
}

// ---- gradients --------------------------------------------------------------------------

// Shapes of (a, b) to check every op at: equal, then each kind of broadcast.
const std::vector<std::pair<Shape, Shape>>& shape_pairs() {
  static const std::vector<std::pair<Shape, Shape>> pairs = {
      {{2, 3}, {2, 3}}, {{3, 1}, {4}}, {{4}, {3, 1}}, {{2, 1, 4}, {3, 1}},
      {{}, {2, 3}},     {{2, 3}, {}},  {{1}, {2, 2}},
  };
  return pairs;
}

TEST(BinaryGradTest, EveryOpAtEveryShape) {
  manual_seed(11);
  for (const BinaryOp& op : binary_ops()) {
    for (const auto& [sa, sb] : shape_pairs()) {
      // pow: positive base; div: divisor away from 0; maximum: random, so no ties.
      const bool positive_a = std::string(op.name) == "pow";
      const bool positive_b = std::string(op.name) == "div";
      Tensor a = positive_a ? leaf64(sa, 0.5, 2.0) : leaf64(sa);
      Tensor b = positive_b ? leaf64(sb, 0.5, 2.0) : leaf64(sb);
      EXPECT_TRUE(
          grad_ok([&op](const std::vector<Tensor>& in) { return op.fn(in[0], in[1]); }, {a, b}))
          << op.name << " " << shape_str(sa) << " with " << shape_str(sb);
    }
  }
}

TEST(BinaryGradTest, OneOperandConstant) {
  manual_seed(12);
  Tensor c = uniform({3, 1}, 0.5, 2.0, kFloat64);  // no requires_grad
  for (const BinaryOp& op : binary_ops()) {
    Tensor a = leaf64({4}, 0.5, 2.0);
    EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return op.fn(in[0], c); }, {a}))
        << op.name;
    EXPECT_TRUE(grad_ok([&](const std::vector<Tensor>& in) { return op.fn(c, in[0]); }, {a}))
        << op.name;
  }
}

TEST(BinaryGradTest, ScalarOperators) {
  manual_seed(13);
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"x + 2", [](const Tensor& x) { return x + 2.0; }},
      {"2 + x", [](const Tensor& x) { return 2.0 + x; }},
      {"x - 2", [](const Tensor& x) { return x - 2.0; }},
      {"2 - x", [](const Tensor& x) { return 2.0 - x; }},
      {"x * 3", [](const Tensor& x) { return x * 3.0; }},
      {"3 * x", [](const Tensor& x) { return 3.0 * x; }},
      {"x / 3", [](const Tensor& x) { return x / 3.0; }},
      {"3 / x", [](const Tensor& x) { return 3.0 / x; }},
      {"-x", [](const Tensor& x) { return -x; }},
      {"x ^ 3", [](const Tensor& x) { return pow(x, 3.0); }},
      {"x ^ 0.5", [](const Tensor& x) { return pow(x, 0.5); }},
      {"x ^ -1.5", [](const Tensor& x) { return pow(x, -1.5); }},
  };
  // (Structured bindings cannot be captured by lambdas before clang 16.)
  for (const auto& op : ops) {
    const auto& fn = op.second;
    EXPECT_TRUE(grad_ok([&fn](const std::vector<Tensor>& in) { return fn(in[0]); },
                        {leaf64({2, 3}, 0.5, 2.0)}))
        << op.first;
    EXPECT_TRUE(
        grad_ok([&fn](const std::vector<Tensor>& in) { return fn(in[0]); }, {leaf64({}, 0.5, 2.0)}))
        << op.first << " on a 0-d tensor";
  }
}

TEST(BinaryGradTest, HandComputedGradients) {
  Tensor a = tensor({1, 2}, {2}, kFloat64).requires_grad_();
  Tensor b = tensor({4, -1}, {2}, kFloat64).requires_grad_();
  sum(a * b).backward();
  EXPECT_TRUE(all_close(a.grad(), {4, -1}));
  EXPECT_TRUE(all_close(b.grad(), {1, 2}));
  a.zero_grad();
  b.zero_grad();
  sum(a / b).backward();  // d/da = 1/b, d/db = -a/b^2
  EXPECT_TRUE(all_close(a.grad(), {0.25, -1}));
  EXPECT_TRUE(all_close(b.grad(), {-1.0 / 16, -2}));
  a.zero_grad();
  sum(pow(a, 3.0)).backward();  // 3 a^2
  EXPECT_TRUE(all_close(a.grad(), {3, 12}));
}

TEST(BinaryGradTest, BroadcastGradientsSumOverTheBroadcastDims) {
  // out[i, j] = a[i, 0] * b[j]: dL/da[i] = sum_j b[j], dL/db[j] = sum_i a[i].
  Tensor a = tensor({1, 2, 3}, {3, 1}, kFloat64).requires_grad_();
  Tensor b = tensor({1, 10, 100, 1000}, {4}, kFloat64).requires_grad_();
  sum(a * b).backward();
  EXPECT_EQ(a.grad().shape(), (Shape{3, 1}));
  EXPECT_TRUE(all_close(a.grad(), {1111, 1111, 1111}));
  EXPECT_TRUE(all_close(b.grad(), {6, 6, 6, 6}));
  Tensor s = scalar_tensor(2, kFloat64).requires_grad_();
  sum(s * ones({2, 3}, kFloat64)).backward();
  EXPECT_EQ(s.grad().shape(), Shape{});
  EXPECT_EQ(s.grad().item(), 6.0);
}

TEST(BinaryGradTest, PowConventionsOffTheLogDomain) {
  // d/dy x^y = x^y ln x is taken as 0 where x <= 0 (the log is undefined there).
  Tensor x = tensor({-2, 0, 2}, {3}, kFloat64).requires_grad_();
  Tensor y = tensor({2, 3, 3}, {3}, kFloat64).requires_grad_();
  Tensor out = pow(x, y);
  EXPECT_TRUE(all_close(out, {4, 0, 8}));
  sum(out).backward();
  EXPECT_TRUE(all_close(x.grad(), {-4, 0, 12}));  // y x^(y-1)
  EXPECT_TRUE(all_close(y.grad(), {0, 0, 8 * std::log(2.0)}));
}

TEST(BinaryGradTest, MaximumSendsTiesToTheFirstOperand) {
  Tensor a = tensor({1, 2, 5}, {3}, kFloat64).requires_grad_();
  Tensor b = tensor({1, 3, 4}, {3}, kFloat64).requires_grad_();
  sum(maximum(a, b)).backward();
  EXPECT_TRUE(all_close(a.grad(), {1, 0, 1}));
  EXPECT_TRUE(all_close(b.grad(), {0, 1, 0}));
}

TEST(BinaryGradTest, NodesAreNamed) {
  Tensor a = ones({2}).requires_grad_();
  EXPECT_EQ((a + a).grad_fn_name(), "AddBackward");
  EXPECT_EQ((a - a).grad_fn_name(), "SubBackward");
  EXPECT_EQ((a * a).grad_fn_name(), "MulBackward");
  EXPECT_EQ((a / a).grad_fn_name(), "DivBackward");
  EXPECT_EQ(pow(a, a).grad_fn_name(), "PowBackward");
  EXPECT_EQ(pow(a, 2.0).grad_fn_name(), "PowBackward");
  EXPECT_EQ(maximum(a, a).grad_fn_name(), "MaximumBackward");
}

// ---- bad inputs ---------------------------------------------------------------------------

TEST(BinaryErrorTest, ShapesThatDoNotBroadcast) {
  for (const BinaryOp& op : binary_ops()) {
    EXPECT_TRUE(throws_error(
        [&] {
          op.fn(ones({2, 3}), ones({4}));
        },
        {op.name, "[2, 3]", "[4]", "broadcast"}))
        << op.name;
    EXPECT_TRUE(throws_error(
        [&] {
          op.fn(ones({2, 1, 3}), ones({3, 2}));
        },
        {op.name, "[2, 1, 3]", "[3, 2]"}))
        << op.name;
  }
}

TEST(BinaryErrorTest, DtypesMustMatch) {
  for (const BinaryOp& op : binary_ops()) {
    EXPECT_TRUE(throws_error([&] { op.fn(ones({2}), ones({3}, kFloat64)); },
                             {op.name, "float32", "float64", "[2]", "[3]"}))
        << op.name;
    EXPECT_TRUE(throws_error([&] { op.fn(ones({2}, kInt64), ones({2})); },
                             {op.name, "int64", "float32", "[2]"}))
        << op.name;
  }
}

TEST(BinaryErrorTest, BoolArithmeticIsRefused) {
  Tensor m = ones({2}, kBool);
  for (const BinaryOp& op : binary_ops())
    EXPECT_TRUE(throws_error([&] { op.fn(m, m); }, {op.name, "bool", "[2]"})) << op.name;
  EXPECT_TRUE(throws_error([&] { m + 1.0; }, {"add", "bool"}));
  EXPECT_TRUE(throws_error([&] { -m; }, {"neg", "bool", "[2]"}));
}

TEST(BinaryErrorTest, PowNeedsFloatingPoint) {
  Tensor i = ones({2}, kInt64);
  EXPECT_TRUE(throws_error([&] { pow(i, 2.0); }, {"pow", "int64", "[2]"}));
  EXPECT_TRUE(throws_error([&] { pow(i, i); }, {"pow", "int64", "[2]"}));
}

TEST(BinaryErrorTest, UndefinedOperands) {
  EXPECT_TRUE(throws_error([] { ones({2}) + Tensor(); }, {"add", "undefined"}));
  EXPECT_TRUE(throws_error([] { eq(Tensor(), ones({2})); }, {"eq", "undefined"}));
}

// ---- comparisons and logic ------------------------------------------------------------------

TEST(CompareTest, ElementwiseResultsAreBool) {
  Tensor a = tensor({1, 2, 3});
  Tensor b = tensor({2, 2, 2});
  EXPECT_EQ(eq(a, b).to_vector(), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(ne(a, b).to_vector(), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(lt(a, b).to_vector(), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(le(a, b).to_vector(), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(gt(a, b).to_vector(), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(ge(a, b).to_vector(), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(eq(a, b).dtype(), kBool);
}

TEST(CompareTest, BroadcastsAndHandlesEveryDtype) {
  // [2, 1] with [3] -> [2, 3]
  Tensor col = tensor({1, 3}, {2, 1}, kInt64);
  Tensor row = tensor({0, 2, 4}, {3}, kInt64);
  Tensor y = lt(col, row);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector(), (std::vector<double>{0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(ge(scalar_tensor(2), tensor({1, 2, 3})).to_vector(), (std::vector<double>{1, 1, 0}));
  Tensor m = tensor({1, 0}, {2}, kBool);
  EXPECT_EQ(eq(m, tensor({1, 1}, {2}, kBool)).to_vector(), (std::vector<double>{1, 0}));
  // NaN equals nothing, itself included.
  Tensor n = tensor({NAN, 1});
  EXPECT_EQ(eq(n, n).to_vector(), (std::vector<double>{0, 1}));
  EXPECT_EQ(ne(n, n).to_vector(), (std::vector<double>{1, 0}));
}

TEST(CompareTest, NotDifferentiable) {
  Tensor x = ones({2}).requires_grad_();
  EXPECT_FALSE(gt(x, zeros({2})).requires_grad());
  EXPECT_TRUE(gt(x, zeros({2})).is_leaf());
}

TEST(CompareTest, BadInputsThrow) {
  EXPECT_TRUE(
      throws_error([] { eq(ones({2}), ones({2}, kInt64)); }, {"eq", "float32", "int64", "[2]"}));
  EXPECT_TRUE(throws_error([] { lt(ones({2, 3}), ones({4})); }, {"lt", "[2, 3]", "[4]"}));
}

TEST(LogicTest, AndOrNot) {
  Tensor a = tensor({1, 1, 0, 0}, {4}, kBool);
  Tensor b = tensor({1, 0, 1, 0}, {4}, kBool);
  EXPECT_EQ(logical_and(a, b).to_vector(), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(logical_or(a, b).to_vector(), (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(logical_not(a).to_vector(), (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(logical_not(a).dtype(), kBool);
  // Broadcast: [2, 1] with [2] -> [2, 2]
  Tensor y = logical_and(tensor({1, 0}, {2, 1}, kBool), tensor({1, 1}, {2}, kBool));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<double>{1, 1, 0, 0}));
  // Through a strided view.
  Tensor t = transpose(tensor({1, 0, 0, 0}, {2, 2}, kBool), 0, 1);
  EXPECT_EQ(logical_not(t).to_vector(), (std::vector<double>{0, 1, 1, 1}));
}

TEST(LogicTest, NeedBoolOperands) {
  EXPECT_TRUE(throws_error([] { logical_and(ones({2}), ones({2}, kBool)); },
                           {"logical_and", "bool", "float32"}));
  EXPECT_TRUE(throws_error([] { logical_or(ones({2}, kBool), ones({2}, kInt64)); },
                           {"logical_or", "int64"}));
  EXPECT_TRUE(throws_error([] { logical_not(ones({2})); }, {"logical_not", "float32"}));
}

}  // namespace
}  // namespace ag
