// How the engine sums the gradients of a tensor used several times: in place
// when only the engine can see the sum, never into a gradient someone else
// holds; and the slices of record_slice (narrow), whose gradients are added
// into the slice of the input's gradient instead of being widened to its
// shape with zeros first.
#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::lens;
using testing::max_abs_diff;
using testing::throws_error;

// [0, 1, ..., n - 1] / 8 in `shape`, float64.
Tensor ramp(const Shape& shape) {
  return arange(shape_numel(shape), kFloat64).reshape(shape) / 8.0;
}

TEST(SliceGradientTest, NarrowsOfOneTensorSumIntoItsGradient) {
  // Every step of a GRU reads one slice of its input projection [T, B, 3H]:
  // here T = 4 slices along dim 0, plus two that overlap them along dim 1.
  const Tensor x = leaf64({4, 3, 2});
  const Tensor y = x * 2.0;  // an op output: its gradient is summed in its node
  Tensor loss = zeros({}, kFloat64);
  for (int64_t t = 0; t < 4; ++t) loss = loss + sum(narrow(y, 0, t, 1) * ramp({1, 3, 2}));
  loss = loss + sum(narrow(y, 1, 1, 2) * 3.0) + sum(narrow(y, 1, 0, 1));
  loss.backward();
  // dL/dy[t, j, k] = ramp[j, k] + 3 (j >= 1) + 1 (j == 0), and dL/dx = 2 dL/dy
  Tensor expected = empty({4, 3, 2}, kFloat64);
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k)
        expected.data_ptr<double>()[(t * 3 + j) * 2 + k] =
            2.0 * (static_cast<double>(j * 2 + k) / 8.0 + (j >= 1 ? 3.0 : 1.0));
  EXPECT_TRUE(all_close(x.grad(), expected, 1e-12));
  // The same loss through index_select, whose backward scatters instead.
  const Tensor x2 = x.detach().clone().requires_grad_();
  const Tensor y2 = x2 * 2.0;
  Tensor loss2 = zeros({}, kFloat64);
  for (int64_t t = 0; t < 4; ++t)
    loss2 = loss2 + sum(index_select(y2, 0, lens({static_cast<double>(t)})) * ramp({1, 3, 2}));
  loss2 =
      loss2 + sum(index_select(y2, 1, lens({1, 2})) * 3.0) + sum(index_select(y2, 1, lens({0})));
  loss2.backward();
  EXPECT_EQ(max_abs_diff(x.grad(), x2.grad()), 0.0);
}

TEST(SliceGradientTest, Gradcheck) {
  // Slices along each dim of an op output and of a leaf, overlapping.
  EXPECT_TRUE(grad_ok(
      [](const std::vector<Tensor>& in) {
        const Tensor y = tanh(in[0]);
        Tensor out = sum(narrow(y, 0, 0, 2) * narrow(y, 0, 1, 2));
        out = out + sum(exp(narrow(y, 2, 1, 2))) + sum(narrow(in[0], 1, 1, 1) * 0.5);
        return out + sum(narrow(y, 1, 0, 2) * narrow(y, 1, 0, 2));
      },
      {leaf64({3, 2, 4})}));
}

TEST(SliceGradientTest, ALeafGetsItsWholeGradient) {
  // narrow straight on a leaf: grad() has the leaf's shape, zeros outside the slice.
  Tensor x = leaf64({2, 3});
  sum(narrow(x, 1, 1, 1) * 5.0).backward();
  EXPECT_TRUE(all_close(x.grad(), {0, 5, 0, 0, 5, 0}));
  sum(narrow(x, 1, 2, 1)).backward();  // accumulated into that grad()
  EXPECT_TRUE(all_close(x.grad(), {0, 5, 1, 0, 5, 1}));
}

TEST(SliceGradientTest, TheObserverSeesTheInputsShape) {
  // BackwardStep::grad_inputs are dL/dinput at the input's shape, slices too.
  const Tensor x = leaf64({4, 2});
  const Tensor y = x * 1.0;
  const Tensor loss = sum(narrow(y, 0, 1, 2)) + sum(narrow(y, 0, 3, 1) * 2.0);
  std::vector<Tensor> narrow_grads;
  backward(loss, Tensor(), false, [&](const BackwardStep& step) {
    if (step.node.name() == "NarrowBackward") narrow_grads.push_back(step.grad_inputs[0]);
  });
  ASSERT_EQ(narrow_grads.size(), 2u);
  for (const Tensor& g : narrow_grads) EXPECT_EQ(g.shape(), Shape({4, 2}));
  EXPECT_TRUE(all_close(x.grad(), {0, 0, 1, 1, 1, 1, 2, 2}));
  const Tensor last_row = narrow(y, 0, 3, 1);  // keeps its node alive while we read it
  const Node& node = *last_row.grad_fn();
  ASSERT_TRUE(node.input_slice().has_value());
  EXPECT_EQ(node.input_slice()->dim, 0);
  EXPECT_EQ(node.input_slice()->start, 3);
  EXPECT_EQ(node.input_slice()->length, 1);
}

TEST(SliceGradientTest, HooksAndRetainedGradientsSeeTheSum) {
  const Tensor x = leaf64({3, 2});
  Tensor y = x * 1.0;
  y.retain_grad();
  std::vector<Tensor> seen;
  y.register_hook([&](const Tensor& g) { seen.push_back(g); });
  sum(narrow(y, 0, 0, 1)).backward(Tensor(), true);
  (sum(narrow(y, 0, 0, 2) * 2.0) + sum(narrow(y, 0, 2, 1) * 3.0)).backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(all_close(seen[0], {1, 1, 0, 0, 0, 0}));
  EXPECT_TRUE(all_close(seen[1], {2, 2, 2, 2, 3, 3}));
  EXPECT_TRUE(all_close(y.grad(), {3, 3, 2, 2, 3, 3}));
  EXPECT_TRUE(all_close(x.grad(), {3, 3, 2, 2, 3, 3}));
}

TEST(SliceGradientTest, RecordSliceChecksTheSlice) {
  const Tensor x = leaf64({4, 2});
  Tensor out = zeros({2, 2}, kFloat64);
  EXPECT_TRUE(throws_error(
      [&] {
        record_slice(out, "TestSliceBackward", x, {0, 3, 2},
                     [](const Tensor& g) { return grads{g}; });
      },
      {"record_slice", "TestSliceBackward", "start 3", "length 2", "[4, 2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        record_slice(out, "TestSliceBackward", x, {2, 0, 1},
                     [](const Tensor& g) { return grads{g}; });
      },
      {"record_slice", "dim 2"}));
  // A backward that returns a gradient of another shape than the slice's is caught.
  Tensor bad = zeros({2, 2}, kFloat64);
  record_slice(bad, "TestSliceBackward", x, {0, 1, 2}, [](const Tensor& g) {
    return grads{ones({3, 2}, g.dtype())};
  });
  EXPECT_TRUE(
      throws_error([&] { sum(bad * 1.0).backward(); }, {"TestSliceBackward", "[3, 2]", "[2, 2]"}));
}

// ---- summing in place, never into a gradient someone holds ------------------------

TEST(InPlaceAccumulationTest, AGradientAHookKeptIsNotWrittenLater) {
  // u = a + c hands u's gradient g_u itself to a (AddBackward passes g
  // through); a hook on u keeps g_u. a's other use (a * 3) adds 3: that sum
  // must not land in the kept g_u, whichever of the two reaches a first.
  for (const bool u_first : {true, false}) {
    const Tensor x = leaf64({3});
    const Tensor a = x * 1.0;
    const Tensor c = leaf64({3});
    Tensor u = a + c;
    Tensor kept;
    u.register_hook([&](const Tensor& g) { kept = g; });
    const Tensor from_u = sum(u * 2.0), from_a = sum(a * 3.0);
    (u_first ? from_u + from_a : from_a + from_u).backward();
    EXPECT_TRUE(all_close(kept, {2, 2, 2}));
    EXPECT_TRUE(all_close(x.grad(), {5, 5, 5}));
    EXPECT_TRUE(all_close(c.grad(), {2, 2, 2}));
  }
}

TEST(InPlaceAccumulationTest, AGradHandleTheUserHoldsIsNotWritten) {
  Tensor x = leaf64({2});
  sum(x * 2.0).backward();
  const Tensor held = x.grad();  // a second owner of grad()'s buffer
  sum(x * 3.0).backward();
  EXPECT_TRUE(all_close(held, {2, 2}));
  EXPECT_TRUE(all_close(x.grad(), {5, 5}));
  // Once the user lets go, the sum may go into grad()'s own buffer: same values.
  sum(x * 4.0).backward();
  EXPECT_TRUE(all_close(x.grad(), {9, 9}));
  EXPECT_TRUE(all_close(held, {2, 2}));
}

TEST(InPlaceAccumulationTest, BroadcastGradientsAreAddedElementByElement) {
  // sum(y)'s backward hands y a broadcast view of one number (stride 0),
  // which must not be written in place (all its elements are one); the
  // product's fresh gradient can take the sum instead, in either order.
  const Tensor x = leaf64({2, 3});
  const Tensor y = x * 2.0;
  (sum(y) + sum(y * ramp({2, 3}))).backward();
  const Tensor x2 = x.detach().clone().requires_grad_();
  const Tensor y2 = x2 * 2.0;
  (sum(y2 * ramp({2, 3})) + sum(y2)).backward();
  const Tensor expected = (ramp({2, 3}) + 1.0) * 2.0;
  EXPECT_TRUE(all_close(x.grad(), expected, 1e-12));
  EXPECT_TRUE(all_close(x2.grad(), expected, 1e-12));
  // A tensor added to itself: AddBackward hands one g to both uses.
  const Tensor z = leaf64({3});
  const Tensor w = z * 1.0;
  sum((w + w) * 3.0).backward();
  EXPECT_TRUE(all_close(z.grad(), {6, 6, 6}));
}

}  // namespace
}  // namespace ag
