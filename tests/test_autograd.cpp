// The engine: accumulation, shared subgraphs, deep chains, retain_graph,
// no-grad, detach, leaves, and the shape-checking accumulate step.
#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::throws_error;

TEST(AutogradTest, ScalarChainRule) {
  Tensor x = tensor({2.0}, {}, kFloat64).requires_grad_();
  Tensor y = x * x * x;  // y = x^3, dy/dx = 3x^2 = 12
  y.backward();
  EXPECT_TRUE(all_close(x.grad(), {12.0}));
  EXPECT_EQ(y.grad_fn_name(), "MulBackward");
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
}

TEST(AutogradTest, SharedSubgraphPropagatesOnce) {
  // z = (a*b) + (a*b) with one shared node: dz/da = 2b, not 4b.
  Tensor a = tensor({3.0}, {1}, kFloat64).requires_grad_();
  Tensor b = tensor({5.0}, {1}, kFloat64).requires_grad_();
  Tensor ab = a * b;
  Tensor z = sum(ab + ab);
  z.backward();
  EXPECT_TRUE(all_close(a.grad(), {10.0}));
  EXPECT_TRUE(all_close(b.grad(), {6.0}));
}

TEST(AutogradTest, GradientsAccumulateAcrossCalls) {
  Tensor x = tensor({1.0, 2.0}, {2}, kFloat64).requires_grad_();
  sum(x * 3.0).backward();
  sum(x * 3.0).backward();
  EXPECT_TRUE(all_close(x.grad(), {6.0, 6.0}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradTest, DeepChainDoesNotOverflowTheStack) {
  // 100,000 ops: both the topological sort and the graph's destruction must
  // be iterative.
  Tensor x = tensor({1.0}, {1}, kFloat64).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + 1e-5;
  sum(y).backward();
  EXPECT_TRUE(all_close(x.grad(), {1.0}));
  EXPECT_TRUE(all_close(y, {2.0}, 1e-9));
}

TEST(AutogradTest, DeepChainIsFreedWithoutBackward) {
  Tensor x = tensor({1.0}, {1}).requires_grad_();
  {
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y * 1.0;
  }  // the whole chain dies here
  SUCCEED();
}

TEST(AutogradTest, SecondBackwardThroughFreedGraphThrows) {
  Tensor x = tensor({1.0, 2.0}, {2}, kFloat64).requires_grad_();
  Tensor y = sum(exp(x));
  y.backward();
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"backward", "second time", "retain_graph"}));
}

TEST(AutogradTest, RetainGraphAllowsASecondBackward) {
  Tensor x = tensor({1.0, 2.0}, {2}, kFloat64).requires_grad_();
  Tensor y = sum(x * x);
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_TRUE(all_close(x.grad(), {4.0, 8.0}));
}

TEST(AutogradTest, BackwardWithExplicitGradient) {
  Tensor x = tensor({1.0, 2.0, 3.0}, {3}, kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  y.backward(tensor({1.0, 10.0, 100.0}, {3}, kFloat64));
  EXPECT_TRUE(all_close(x.grad(), {2.0, 20.0, 200.0}));
}

TEST(AutogradTest, BadBackwardCallsThrow) {
  Tensor x = tensor({1.0, 2.0}, {2}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"backward", "scalar", "[2]"}));
  EXPECT_TRUE(throws_error([&] { y.backward(ones({3})); }, {"backward", "[3]", "[2]"}));
  EXPECT_TRUE(throws_error([&] { y.backward(ones({2}, kFloat64)); }, {"backward", "float64"}));
  Tensor c = tensor({1.0});
  EXPECT_TRUE(throws_error([&] { c.backward(); }, {"backward", "does not require grad"}));
  Tensor i = arange(3, kInt64);
  EXPECT_TRUE(throws_error([&] { i.requires_grad_(); }, {"requires_grad_", "int64"}));
}

TEST(AutogradTest, NoGradGuardRecordsNothing) {
  Tensor x = tensor({1.0}, {1}).requires_grad_();
  {
    NoGradGuard guard;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(AutogradTest, DetachStopsGradientsAndSharesStorage) {
  Tensor x = tensor({1.0, 2.0}, {2}, kFloat64).requires_grad_();
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr<double>(), x.data_ptr<double>());
  Tensor y = sum(x * d);  // gradient only through the first factor: d
  y.backward();
  EXPECT_TRUE(all_close(x.grad(), {1.0, 2.0}));
}

TEST(AutogradTest, RequiresGradPropagates) {
  Tensor a = ones({2});
  Tensor b = ones({2}).requires_grad_();
  EXPECT_FALSE((a + a).requires_grad());
  EXPECT_TRUE((a + b).requires_grad());
  EXPECT_EQ((a + b).grad_fn_name(), "AddBackward");
}

TEST(AutogradTest, BroadcastGradientsAreSummedToTheInputShape) {
  Tensor a = tensor({1.0, 2.0, 3.0}, {3, 1}, kFloat64).requires_grad_();
  Tensor b = tensor({10.0, 20.0}, {2}, kFloat64).requires_grad_();
  sum(a * b).backward();  // [3, 2]
  EXPECT_TRUE(all_close(a.grad(), {30.0, 30.0, 30.0}));
  EXPECT_TRUE(all_close(b.grad(), {6.0, 6.0}));
  EXPECT_EQ(a.grad().shape(), (Shape{3, 1}));
}

TEST(AutogradTest, SumToShapeRejectsShapesThatDoNotBroadcast) {
  EXPECT_TRUE(throws_error(
      [] {
        sum_to_shape(ones({2, 3}), {4}, "FooBackward", 1);
      },
      {"autograd", "FooBackward", "[2, 3]", "[4]", "input 1"}));
  EXPECT_EQ(sum_to_shape(ones({2, 3}), {1, 3}, "X", 0).shape(), (Shape{1, 3}));
  EXPECT_TRUE(all_close(sum_to_shape(ones({4, 2, 3}), {3}, "X", 0), {8.0, 8.0, 8.0}));
}

TEST(AutogradTest, NodesCarryTheirOpNames) {
  Tensor x = rand({2, 3}).requires_grad_();
  EXPECT_EQ(exp(x).grad_fn_name(), "ExpBackward");
  EXPECT_EQ(transpose(x, 0, 1).grad_fn_name(), "TransposeBackward");
  EXPECT_EQ(sum(x).grad_fn_name(), "SumBackward");
  EXPECT_EQ(to_string(sum(x).detach() * 0.0), "tensor(0.)");
}

TEST(GradcheckTest, ReportsTheWorstElementOfABrokenGradient) {
  // A deliberately wrong backward: y = x^2 claiming dy/dx = x.
  auto broken_square = [](const std::vector<Tensor>& in) {
    Tensor y = in[0].detach() * in[0].detach();
    record(y, "BrokenBackward", {in[0]},
           [x = in[0].detach()](const Tensor& g) { return grads{g * x}; });
    return y;
  };
  Tensor x = tensor({1.0, -3.0, 2.0}, {3}, kFloat64).requires_grad_();
  GradcheckResult r = gradcheck(broken_square, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.worst_input, 0u);
  EXPECT_EQ(r.worst_index, 1);  // |x| largest at index 1
  EXPECT_NE(r.message.find("FAILED"), std::string::npos);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return in[0] * in[0]; }, {x}).ok);
}

TEST(GradcheckTest, RejectsFloat32Inputs) {
  Tensor x = rand({2}).requires_grad_();
  EXPECT_TRUE(
      throws_error([&] { gradcheck([](const std::vector<Tensor>& in) { return in[0]; }, {x}); },
                   {"gradcheck", "float64"}));
}

}  // namespace
}  // namespace ag
