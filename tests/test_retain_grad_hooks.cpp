// Tensor::retain_grad and Tensor::register_hook against PyTorch's behaviour.
// Every expected value below was printed by PyTorch 1.13 (/usr/bin/python3)
// running the same expression in float64; the torch line is quoted above it.
#include <vector>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::throws_error;

Tensor leaf(std::vector<double> values, Shape shape = {}) {
  return tensor(std::move(values), std::move(shape), kFloat64).requires_grad_();
}

// ---- retain_grad ---------------------------------------------------------------------------

TEST(RetainGradTest, KeepsTheGradientOfOpOutputsThroughBroadcasts) {
  // x [2, 3], b [3]; y = b * 2 [3] is broadcast by the next op, p = x * y
  // [2, 3] is made by a broadcast; q = p * p is not retained.
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = leaf({0.5, -1, 2}, {3});
  Tensor y = b * 2.0;
  y.retain_grad();
  Tensor p = x * y;
  p.retain_grad();
  Tensor q = p * p;
  sum(q).backward();
  // torch: y.grad [34, -116, 360]; p.grad [[2, -8, 24], [8, -20, 48]]; q.grad None
  EXPECT_TRUE(all_close(y.grad(), {34, -116, 360}));
  EXPECT_EQ(y.grad().shape(), (Shape{3}));
  EXPECT_TRUE(all_close(p.grad(), tensor({2, -8, 24, 8, -20, 48}, {2, 3}, kFloat64)));
  EXPECT_FALSE(q.grad().defined());
  // torch: b.grad [68, -232, 720]; x.grad [[2, 16, 96], [8, 40, 192]] (unchanged by retaining)
  EXPECT_TRUE(all_close(b.grad(), {68, -232, 720}));
  EXPECT_TRUE(all_close(x.grad(), tensor({2, 16, 96, 8, 40, 192}, {2, 3}, kFloat64)));
  // torch: y.retains_grad True, p True, q False, x (a leaf) False
  EXPECT_TRUE(y.retains_grad());
  EXPECT_TRUE(p.retains_grad());
  EXPECT_FALSE(q.retains_grad());
  EXPECT_FALSE(x.retains_grad());
}

TEST(RetainGradTest, IsANoOpOnALeafAndIdempotent) {
  Tensor x = leaf({1, 2});
  x.retain_grad();  // torch: x.retains_grad stays False; x.grad as without
  EXPECT_FALSE(x.retains_grad());
  Tensor y = x * 3.0;
  y.retain_grad();
  y.retain_grad();  // a second call adds nothing: the gradient is not counted twice
  sum(y).backward();
  EXPECT_TRUE(all_close(x.grad(), {3, 3}));
  EXPECT_TRUE(all_close(y.grad(), {1, 1}));
}

TEST(RetainGradTest, AccumulatesAcrossBackwardsWithRetainGraph) {
  // torch: y = x * 2; y.retain_grad(); z = (y * y).sum()
  //        z.backward(retain_graph=True) -> y.grad [4, 8, 12]
  //        z.backward()                  -> y.grad [8, 16, 24], x.grad [16, 32, 48]
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  y.retain_grad();
  Tensor z = sum(y * y);
  z.backward(Tensor(), /*retain_graph=*/true);
  EXPECT_TRUE(all_close(y.grad(), {4, 8, 12}));
  z.backward();
  EXPECT_TRUE(all_close(y.grad(), {8, 16, 24}));
  EXPECT_TRUE(all_close(x.grad(), {16, 32, 48}));
  // The graph is freed now, as without retain_grad.
  EXPECT_TRUE(throws_error([&] { z.backward(); }, {"backward", "retain_graph"}));
  // zero_grad() resets a retained gradient as a leaf's.
  y.zero_grad();
  EXPECT_FALSE(y.grad().defined());
}

TEST(RetainGradTest, AccumulatesAcrossTwoGraphsThroughTheSameTensor) {
  // Two losses built on one retained y, each with its own backward.
  Tensor x = leaf({1, 2});
  Tensor y = x * x;
  y.retain_grad();
  sum(y * 3.0).backward(Tensor(), /*retain_graph=*/true);  // keeps y's node for the next
  sum(y * 5.0).backward();
  EXPECT_TRUE(all_close(y.grad(), {8, 8}));
  EXPECT_TRUE(all_close(x.grad(), {16, 32}));  // 8 * 2x
}

TEST(RetainGradTest, TheRetainedGradientIsItsOwnBuffer) {
  // y.grad() must not share storage with a leaf's grad() nor with the seed
  // (PyTorch clones): writing one must not change the others.
  Tensor x = leaf({1, 2});
  Tensor y = x + 0.0;  // AddBackward hands g itself to x
  y.retain_grad();
  const Tensor seed = tensor({1, 1}, {2}, kFloat64);
  y.backward(seed);
  EXPECT_NE(y.grad().impl()->storage(), x.grad().impl()->storage());
  EXPECT_NE(y.grad().impl()->storage(), seed.impl()->storage());
}

TEST(RetainGradTest, GradientBeforeAnInPlaceVersionErrorIsKept) {
  // torch: y = x * w; y.retain_grad(); z = (y * y).sum(); x.add_(1) under no_grad;
  //        z.backward() raises "modified by an inplace operation";
  //        y.grad [8, 20, 36] (its hook ran before MulBackward unpacked x); x.grad, w.grad None
  Tensor x = leaf({1, 2, 3});
  Tensor w = leaf({4, 5, 6});
  Tensor y = x * w;
  y.retain_grad();
  Tensor z = sum(y * y);
  x.impl()->storage()->bump_version();  // what an optimizer step on x does
  EXPECT_TRUE(throws_error([&] { z.backward(); }, {"MulBackward", "modified in place"}));
  EXPECT_TRUE(all_close(y.grad(), {8, 20, 36}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

TEST(RetainGradTest, ATensorGoneBeforeTheBackwardIsSkipped) {
  Tensor x = leaf({1, 2});
  Tensor z;
  {
    Tensor y = x * 2.0;
    y.retain_grad();
    z = sum(y);
  }  // y is gone; its node lives on in z's graph
  z.backward();
  EXPECT_TRUE(all_close(x.grad(), {2, 2}));
}

TEST(RetainGradTest, RefusesATensorThatRequiresNoGrad) {
  // torch: "can't retain_grad on Tensor that has requires_grad=False"
  EXPECT_TRUE(throws_error(
      [] {
        ones({2, 3}).retain_grad();
      },
      {"retain_grad", "does not require grad", "float32 [2, 3]"}));
}

// ---- register_hook -------------------------------------------------------------------------

TEST(HookTest, ScalesTheGradientOfAnOpOutput) {
  // torch: y = x * 2; y.register_hook(lambda g: g * 10); y.sum().backward() -> x.grad [20, 20, 20]
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor& g) { return g * 10.0; });
  sum(y).backward();
  EXPECT_TRUE(all_close(x.grad(), {20, 20, 20}));
  EXPECT_FALSE(y.grad().defined());  // a hook does not retain
}

TEST(HookTest, ReplacesTheGradient) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor&) { return tensor({1, -1, 0.5}, {3}, kFloat64); });
  sum(y * y).backward();
  EXPECT_TRUE(all_close(x.grad(), {2, -2, 1}));
}

TEST(HookTest, HooksRunInRegistrationOrder) {
  // torch: hooks g + 1 then g * 10 on y = x * 2 -> x.grad [40, 40, 40]
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  std::vector<int> order;
  y.register_hook([&](const Tensor& g) {
    order.push_back(1);
    return g + 1.0;
  });
  y.register_hook([&](const Tensor& g) {
    order.push_back(2);
    return g * 10.0;
  });
  sum(y).backward();
  EXPECT_TRUE(all_close(x.grad(), {40, 40, 40}));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(HookTest, AHookReturningNothingOnlyWatches) {
  // torch: a hook returning None leaves the gradient: x.grad [2, 2, 2]
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  Tensor seen;
  y.register_hook([&](const Tensor& g) { seen = g; });  // returns void
  y.register_hook([](const Tensor&) { return Tensor(); });
  sum(y * x).backward();
  EXPECT_TRUE(all_close(seen, {1, 2, 3}));       // dL/dy = x
  EXPECT_TRUE(all_close(x.grad(), {4, 8, 12}));  // y + 2 x
  EXPECT_FALSE(seen.requires_grad());            // hooks run without recording
}

TEST(HookTest, RemovedHooksDoNotRun) {
  // torch: h = y.register_hook(lambda g: g * 10); h.remove(); h.remove() -> x.grad [2, 2, 2]
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  HookHandle scale = y.register_hook([](const Tensor& g) { return g * 10.0; });
  int watched = 0;
  y.register_hook([&](const Tensor&) { ++watched; });
  scale.remove();
  scale.remove();  // harmless
  sum(y).backward(Tensor(), /*retain_graph=*/true);
  EXPECT_TRUE(all_close(x.grad(), {2, 2, 2}));
  EXPECT_EQ(watched, 1);
  HookHandle().remove();  // a handle of no hook
}

TEST(HookTest, AHandleOutlivingItsTensorIsHarmless) {
  Tensor x = leaf({1, 2});
  HookHandle on_output, on_leaf;
  {
    Tensor y = x * 2.0;
    Tensor local = leaf({3, 4});
    on_output = y.register_hook([](const Tensor& g) { return g; });
    on_leaf = local.register_hook([](const Tensor& g) { return g; });
  }  // y, its graph and `local` are gone
  on_output.remove();
  on_leaf.remove();
  SUCCEED();
}

TEST(HookTest, AHookMayRemoveItselfWhileRunning) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2.0;
  int calls = 0;
  HookHandle once;
  once = y.register_hook([&](const Tensor& g) {
    ++calls;
    once.remove();
    return g * 3.0;
  });
  Tensor z = sum(y);
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(all_close(x.grad(), {8, 8}));  // 6 from the hooked sweep, 2 from the other
}

TEST(HookTest, LeafHooksRunBeforeAccumulation) {
  // torch: x.register_hook(lambda g: g * 0 + 7); (x * 2).sum().backward() -> x.grad [7, 7, 7];
  //        a second (x * 2).sum().backward() -> x.grad [14, 14, 14]
  Tensor x = leaf({1, 2, 3});
  x.register_hook([](const Tensor& g) { return g * 0.0 + 7.0; });
  sum(x * 2.0).backward();
  EXPECT_TRUE(all_close(x.grad(), {7, 7, 7}));
  sum(x * 2.0).backward();
  EXPECT_TRUE(all_close(x.grad(), {14, 14, 14}));
}

TEST(HookTest, ALeafUsedTwiceGetsOneCallWithTheSum) {
  // torch: (x * 2 + x * 3).sum().backward() calls x's hook once, with [5, 5, 5]
  Tensor x = leaf({1, 2, 3});
  std::vector<Tensor> calls;
  x.register_hook([&](const Tensor& g) { calls.push_back(g); });
  sum(x * 2.0 + x * 3.0).backward();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(all_close(calls[0], {5, 5, 5}));
  EXPECT_TRUE(all_close(x.grad(), {5, 5, 5}));
}

TEST(HookTest, AnOpOutputUsedTwiceGetsOneCallWithTheSum) {
  // torch: y = x * 2; (y * y + y).sum().backward() calls y's hook once, with
  //        [5, 9, 13]; x.grad [10, 18, 26]
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  std::vector<Tensor> calls;
  y.register_hook([&](const Tensor& g) { calls.push_back(g); });
  sum(y * y + y).backward();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(all_close(calls[0], {5, 9, 13}));
  EXPECT_TRUE(all_close(x.grad(), {10, 18, 26}));
}

TEST(HookTest, TheRootsHookSeesTheSeed) {
  // torch: y = (x * 2).sum(); y.register_hook(lambda g: g * 3); y.backward() -> x.grad [6, 6, 6]
  Tensor x = leaf({1, 2, 3});
  Tensor y = sum(x * 2.0);
  y.register_hook([](const Tensor& g) { return g * 3.0; });
  y.backward();
  EXPECT_TRUE(all_close(x.grad(), {6, 6, 6}));
  // torch: x.register_hook(lambda g: g * 3); x.backward(torch.ones(3)) -> x.grad [3, 3, 3]
  Tensor l = leaf({1, 2, 3});
  l.register_hook([](const Tensor& g) { return g * 3.0; });
  l.backward(ones({3}, kFloat64));
  EXPECT_TRUE(all_close(l.grad(), {3, 3, 3}));
}

TEST(HookTest, ARetainedGradientSeesTheHooksRegisteredBeforeIt) {
  // PyTorch 1.13 treats retain_grad as one more hook, in order:
  // torch: retain_grad() then register_hook(g * 10) -> y.grad [1, 1, 1], x.grad [20, 20, 20]
  //        register_hook(g * 10) then retain_grad() -> y.grad [10, 10, 10], x.grad [20, 20, 20]
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  y.retain_grad();
  y.register_hook([](const Tensor& g) { return g * 10.0; });
  sum(y).backward();
  EXPECT_TRUE(all_close(y.grad(), {1, 1, 1}));
  EXPECT_TRUE(all_close(x.grad(), {20, 20, 20}));

  Tensor x2 = leaf({1, 2, 3});
  Tensor y2 = x2 * 2.0;
  y2.register_hook([](const Tensor& g) { return g * 10.0; });
  y2.retain_grad();
  sum(y2).backward();
  EXPECT_TRUE(all_close(y2.grad(), {10, 10, 10}));
  EXPECT_TRUE(all_close(x2.grad(), {20, 20, 20}));
}

TEST(HookTest, TheObserverSeesTheHookedGradient) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor& g) { return g * 10.0; });
  std::vector<Tensor> seen;
  backward(sum(y), Tensor(), false, [&](const BackwardStep& step) {
    if (step.node.name() == "MulBackward") seen.push_back(step.grad_output);
  });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(all_close(seen[0], {10, 10}));
}

TEST(HookTest, BadHooksAndTensorsThrow) {
  // torch: "cannot register a hook on a tensor that doesn't require gradient"
  EXPECT_TRUE(throws_error([] { ones({3}).register_hook([](const Tensor& g) { return g; }); },
                           {"register_hook", "does not require grad", "float32 [3]"}));
  // torch: "hook '<lambda>' has changed the size of value"
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor& g) { return sum(g); });
  EXPECT_TRUE(throws_error([&] { sum(y).backward(); },
                           {"register_hook", "hook 0", "MulBackward", "shape []", "shape [3]"}));
  Tensor l = leaf({1, 2});
  l.register_hook([](const Tensor& g) { return g.to(kFloat32); });
  EXPECT_TRUE(throws_error([&] { sum(l * 2.0).backward(); },
                           {"register_hook", "a leaf", "float32", "float64"}));
  EXPECT_FALSE(l.grad().defined());
  // An exception thrown by a hook propagates out of backward unchanged.
  Tensor w = leaf({1});
  w.register_hook([](const Tensor&) -> Tensor { throw Error("my hook failed"); });
  EXPECT_TRUE(throws_error([&] { sum(w * 2.0).backward(); }, {"my hook failed"}));
}

TEST(HookTest, GradcheckIsUnaffectedByHooksThatOnlyWatch) {
  // A watching hook on an intermediate changes no gradient.
  int calls = 0;
  EXPECT_TRUE(testing::grad_ok(
      [&](const std::vector<Tensor>& in) {
        Tensor h = tanh(in[0] * in[1]);
        if (h.requires_grad()) {  // not in gradcheck's no-grad evaluations
          h.register_hook([&](const Tensor&) { ++calls; });
          h.retain_grad();
        }
        return sum(h * h);
      },
      {testing::leaf64({2, 3}), testing::leaf64({3})}));
  EXPECT_GT(calls, 0);
}

}  // namespace
}  // namespace ag
