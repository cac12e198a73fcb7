// ag::backward's observer: it sees every node the sweep runs, once, in the
// engine's order, with the gradients the engine then accumulates; it changes
// nothing; and an observer that throws leaves the engine in the documented state.
#include <map>
#include <unordered_set>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::leaf64;
using testing::max_abs_diff;
using testing::throws_error;

// Everything one step showed, copied (the step's references die with the call).
struct Seen {
  const Node* node;
  std::string name;
  Tensor grad_output;
  std::vector<Tensor> grad_inputs;
};

BackwardObserver recorder(std::vector<Seen>& seen) {
  return [&seen](const BackwardStep& step) {
    EXPECT_EQ(step.index, seen.size());
    seen.push_back({&step.node, step.node.name(), step.grad_output, step.grad_inputs});
  };
}

std::vector<std::string> names(const std::vector<Seen>& seen) {
  std::vector<std::string> out;
  for (const Seen& s : seen) out.push_back(s.name);
  return out;
}

// An op whose backward lambda logs its name when the engine runs it: the log
// is the engine's own order, which the observer must reproduce.
Tensor logged(const char* name, const std::vector<Tensor>& inputs, std::vector<std::string>& log) {
  Tensor out = inputs[0].detach() * 1.0;
  for (size_t i = 1; i < inputs.size(); ++i) out = out + inputs[i].detach();
  record(out, name, inputs, [name, n = inputs.size(), &log](const Tensor& g) {
    log.push_back(name);
    return grads(n, g);  // out = sum of inputs: dL/dinput = g for each
  });
  return out;
}

// Self-attention on one sequence, x used as queries, keys and values: x is a
// leaf reached by several nodes, so its grad() is a sum.
Tensor self_attention(const Tensor& x, const Tensor& w) {
  Tensor scores = bmm(x, transpose(x * w, 1, 2)) / 2.0;  // sqrt(d), d = 4
  return bmm(softmax(scores, -1), x);
}

TEST(BackwardObserverTest, SeesTheEnginesOrder) {
  // A diamond and a shared node: e = f(c, d), c = f(a), d = f(a, b), a = f(x).
  std::vector<std::string> log;
  Tensor x = leaf64({2});
  Tensor y = leaf64({2});
  Tensor a = logged("A", {x}, log);
  Tensor b = logged("B", {y, x}, log);
  Tensor c = logged("C", {a}, log);
  Tensor d = logged("D", {a, b}, log);
  Tensor e = logged("E", {c, d}, log);
  std::vector<Seen> seen;
  backward(e, ones({2}, kFloat64), false, recorder(seen));
  EXPECT_EQ(names(seen), log);
  // Each node once, and before the nodes of its inputs (topological).
  ASSERT_EQ(seen.size(), 5u);
  std::unordered_set<const Node*> done;
  for (const Seen& s : seen) {
    EXPECT_TRUE(done.insert(s.node).second) << s.name << " seen twice";
    for (const NodeInput& input : s.node->inputs())
      EXPECT_FALSE(input.grad_fn() && done.count(input.grad_fn().get()))
          << s.name << " runs after its input " << input.grad_fn_name();
  }
}

TEST(BackwardObserverTest, KnownOrderOfAHandBuiltGraph) {
  // L = sum(a + exp(a)), a = x * 2: exp consumes a, so ExpBackward runs before MulBackward.
  Tensor x = leaf64({3});
  Tensor a = x * 2.0;
  Tensor loss = sum(a + exp(a));
  std::vector<Seen> seen;
  backward(loss, Tensor(), false, recorder(seen));
  EXPECT_EQ(names(seen),
            (std::vector<std::string>{"SumBackward", "AddBackward", "ExpBackward", "MulBackward"}));
  // MulBackward's incoming gradient is the sum of what Add and Exp sent to a: 1 + exp(a).
  EXPECT_TRUE(all_close(seen[3].grad_output, ones({3}, kFloat64) + exp(a.detach()), 1e-12));
}

TEST(BackwardObserverTest, GradientsAreWhatBackwardStores) {
  Tensor x = leaf64({1, 3, 4});
  Tensor w = leaf64({1, 1, 4});  // broadcast: its gradients arrive summed to [1, 1, 4]
  Tensor out = self_attention(x, w);
  Tensor g = leaf64({1, 3, 4}).detach();
  std::vector<Seen> seen;
  backward(out, g, false, recorder(seen));

  // Leaves: the sum of everything sent to them equals grad().
  // Inner nodes: the sum of everything sent to their output equals the
  // grad_output they are given (observed later, since the order is topological).
  std::map<const TensorImpl*, Tensor> to_leaf;
  std::map<const Node*, Tensor> to_node{{out.grad_fn().get(), g}};
  for (const Seen& s : seen) {
    ASSERT_TRUE(to_node.count(s.node)) << s.name;
    EXPECT_EQ(max_abs_diff(s.grad_output, to_node.at(s.node)), 0.0) << s.name;
    ASSERT_EQ(s.grad_inputs.size(), s.node->inputs().size());
    for (size_t i = 0; i < s.grad_inputs.size(); ++i) {
      const NodeInput& input = s.node->inputs()[i];
      const Tensor& gi = s.grad_inputs[i];
      if (!input.defined() || !input.requires_grad()) {
        EXPECT_FALSE(gi.defined()) << s.name << " input " << i;
        continue;
      }
      ASSERT_TRUE(gi.defined()) << s.name << " input " << i;
      EXPECT_EQ(gi.shape(), input.shape()) << s.name << " input " << i;
      Tensor& sum_so_far =
          input.is_leaf() ? to_leaf[input.tensor().impl()] : to_node[input.grad_fn().get()];
      sum_so_far = sum_so_far.defined() ? sum_so_far + gi : gi;
    }
  }
  ASSERT_EQ(to_leaf.size(), 2u);
  EXPECT_EQ(max_abs_diff(to_leaf.at(x.impl()), x.grad()), 0.0);
  EXPECT_EQ(max_abs_diff(to_leaf.at(w.impl()), w.grad()), 0.0);
}

TEST(BackwardObserverTest, DoesNotChangeResults) {
  Tensor x = leaf64({1, 3, 4});
  Tensor w = leaf64({1, 1, 4});
  Tensor g = leaf64({1, 3, 4}).detach();
  self_attention(x, w).backward(g);
  const Tensor gx = x.grad(), gw = w.grad();
  x.zero_grad();
  w.zero_grad();
  std::vector<Seen> seen;
  backward(self_attention(x, w), g, false, recorder(seen));
  EXPECT_FALSE(seen.empty());
  EXPECT_EQ(max_abs_diff(x.grad(), gx), 0.0);
  EXPECT_EQ(max_abs_diff(w.grad(), gw), 0.0);
}

TEST(BackwardObserverTest, RetainGraphSweepsTwiceAlike) {
  Tensor x = leaf64({1, 3, 4});
  Tensor w = leaf64({1, 1, 4});
  Tensor loss = sum(self_attention(x, w));
  std::vector<Seen> first, second;
  backward(loss, Tensor(), true, recorder(first));
  const Tensor gx = x.grad().clone();
  backward(loss, Tensor(), true, recorder(second));
  ASSERT_EQ(names(first), names(second));
  for (size_t k = 0; k < first.size(); ++k) {
    EXPECT_EQ(first[k].node, second[k].node);
    EXPECT_EQ(max_abs_diff(first[k].grad_output, second[k].grad_output), 0.0);
  }
  EXPECT_TRUE(all_close(x.grad(), gx * 2.0, 1e-12));  // accumulated across the two
}

TEST(BackwardObserverTest, KeptGradientsStayUnchanged) {
  // The observer keeps handles to grad_inputs; the engine must copy, not
  // adopt, them as a leaf's grad(), so later accumulation cannot write into them.
  Tensor x = leaf64({3});
  Tensor loss = sum(x * 3.0);
  std::vector<Seen> seen;
  backward(loss, Tensor(), true, recorder(seen));
  const Tensor kept = seen.back().grad_inputs[0];
  const Tensor before = kept.clone();
  backward(loss, Tensor(), true);
  x.grad().data_ptr<double>()[0] = 42.0;  // write into grad() in place, as an optimizer could
  EXPECT_EQ(max_abs_diff(kept, before), 0.0);
}

TEST(BackwardObserverTest, LeafRootRunsNoNode) {
  Tensor x = leaf64({2});
  int calls = 0;
  backward(x, ones({2}, kFloat64), false, [&](const BackwardStep&) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(all_close(x.grad(), {1.0, 1.0}));
}

TEST(BackwardObserverTest, ThrowingObserverLeavesASaneEngine) {
  // L = sum(x * 3) + sum(exp(y)) sweeps Add, Sum, Exp, Sum, Mul. The observer
  // throws at step 2 (Exp, whose gradient goes to y); steps 0 and 1 sent
  // theirs to inner nodes only.
  Tensor x = leaf64({3});
  Tensor y = leaf64({3});
  Tensor loss = sum(x * 3.0) + sum(exp(y));
  std::vector<Seen> seen;
  auto throw_at_2 = [&](const BackwardStep& step) {
    seen.push_back({&step.node, step.node.name(), step.grad_output, step.grad_inputs});
    if (step.index == 2) throw Error("observer: stop at step 2");
  };
  EXPECT_TRUE(throws_error([&] { backward(loss, Tensor(), true, throw_at_2); },
                           {"observer: stop at step 2"}));
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_TRUE(grad_mode_enabled());
  // Step 2's gradients were not accumulated; no leaf was reached before it.
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(y.grad().defined());
  // With retain_graph the graph is intact: a plain backward now gives the full result.
  loss.backward();
  EXPECT_TRUE(all_close(x.grad(), {3.0, 3.0, 3.0}, 1e-12));
  EXPECT_TRUE(all_close(y.grad(), exp(y.detach()), 1e-12));

  // Without retain_graph the swept nodes are freed: a second backward says so.
  Tensor loss2 = sum(x * 3.0);
  EXPECT_TRUE(throws_error(
      [&] {
        backward(loss2, Tensor(), false, [](const BackwardStep& step) {
          if (step.index == 1) throw Error("observer: stop");
        });
      },
      {"observer: stop"}));
  EXPECT_TRUE(throws_error([&] { loss2.backward(); }, {"a second time", "SumBackward"}));
}

}  // namespace
}  // namespace ag
