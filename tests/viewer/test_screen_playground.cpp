// The playground scene on screen: both weight maps, cell by cell, against
// the library's own computation of the two scoring functions shown
// (d2l's AdditiveAttention and DotProductAttention by default; Luong's
// general score by hand for another pair), rerun on the points, values,
// valid_len and parameters the viewer dumped; and the outputs it prints.
#include <gtest/gtest.h>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

using Pair = std::array<std::string, 2>;

// Per function name: weights [Tq, Tk] and outputs [Tq].
struct Playground {
  std::map<std::string, Tensor> weights, outputs;
  Tensor keep;  // [Tq, Tk]: false past valid_len
};

// The run dumped the playground's inputs (not another tab's), for `pair`.
::testing::AssertionResult is_playground(const SceneRun& run, const Pair& pair) {
  if (run.exit_code != 0) return ::testing::AssertionFailure() << "the viewer failed";
  for (const std::string& name :
       {std::string("queries"), std::string("keys"), std::string("values"),
        std::string("valid_lens"), std::string("canvas"), "shown." + pair[0] + "_outputs",
        "shown." + pair[1] + "_scores"}) {
    if (run.inputs.count(name) == 0) {
      return ::testing::AssertionFailure()
             << "no input '" << name << "': the viewer did not draw the playground";
    }
  }
  return ::testing::AssertionSuccess();
}

// The scene's computation, redone from its inputs with the library: the d2l
// modules for additive and dot, Luong's general q^T W_a k by hand (then the
// masked softmax and the values' weighted sum).
Playground recompute(const std::map<std::string, Tensor>& inputs, const Pair& pair) {
  const Tensor& queries = inputs.at("queries");
  const Tensor& keys = inputs.at("keys");
  const Tensor& values = inputs.at("values");
  const Tensor& valid_lens = inputs.at("valid_lens");
  NoGradGuard no_grad;
  Playground out;
  for (const std::string& name : pair) {
    Tensor output, weights;
    if (name == "additive") {
      const auto state = with_prefix(inputs, "additive.");
      nn::AdditiveAttention additive(keys.size(2), queries.size(2), state.at("W_q.weight").size(0));
      additive.load_state_dict(state);
      additive.eval();
      output = additive(queries, keys, values, valid_lens);
      weights = additive.attention_weights();
    } else if (name == "dot") {
      nn::DotProductAttention dot;
      dot.eval();
      output = dot(queries, keys, values, valid_lens);
      weights = dot.attention_weights();
    } else {
      EXPECT_EQ(name, "general") << "no computation of " << name << " in this test";
      const Tensor W_a = inputs.at("general.W_a.weight");  // [q, k]: W_a k has the query's width
      weights = nn::masked_softmax(bmm(queries, transpose(linear(keys, W_a), 1, 2)), valid_lens);
      output = bmm(weights, values);
    }
    out.outputs[name] = reshape(output, {-1});
    out.weights[name] = squeeze(weights, 0);
  }
  const int64_t num_queries = queries.size(1), num_keys = keys.size(1);
  out.keep = expand(nn::sequence_mask(valid_lens, num_keys), {num_queries, num_keys});
  return out;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  return max(abs(a.to(kFloat64) - b.to(kFloat64))).item();
}

void check_playground(const SceneRun& run, const Pair& pair = {"additive", "dot"}) {
  ASSERT_TRUE(is_playground(run, pair));
  const Playground expected = recompute(run.inputs, pair);
  // d = 2, as the toy keys of d2l.
  EXPECT_EQ(run.inputs.at("keys").size(2), 2);
  const Tensor valid_lens = run.inputs.at("valid_lens");
  for (const std::string& name : pair) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(cells_match(run, "playground/" + name, expected.weights.at(name), expected.keep));
    // The printed outputs are the library's.
    EXPECT_LT(
        max_abs_difference(run.inputs.at("shown." + name + "_outputs"), expected.outputs.at(name)),
        1e-5);
    // The printed scores are the ones whose masked softmax gives the maps.
    const Tensor scores = unsqueeze(run.inputs.at("shown." + name + "_scores"), 0);
    EXPECT_LT(max_abs_difference(squeeze(nn::masked_softmax(scores, valid_lens), 0),
                                 expected.weights.at(name)),
              1e-5);
  }
}

TEST(PlaygroundScreen, WeightMapsAndOutputsAreTheLibrarys) {
  const SceneRun run = run_scene("playground");
  check_playground(run);
}

// Any two of the table's functions, by name: their maps, outputs and scores,
// and no trace of the default pair's.
TEST(PlaygroundScreen, AnotherPairOfTheTable) {
  const SceneRun run = run_scene("playground", 4, {"--set", "playground.scoring=additive,general"});
  check_playground(run, {"additive", "general"});
  // additive's parameters named as in d2l, general's W_a [q, k]; dot is not shown.
  EXPECT_EQ(run.inputs.count("additive.w_v.weight"), 1u);
  EXPECT_EQ(run.inputs.at("general.W_a.weight").shape(), (Shape{2, 2}));
  EXPECT_EQ(run.inputs.count("shown.dot_outputs"), 0u);
  EXPECT_THROW(find_map(run, "playground/dot"), Error);
  // The two maps differ: general is not additive under another name.
  const Playground expected = recompute(run.inputs, {"additive", "general"});
  EXPECT_GT(max_abs_difference(expected.weights.at("additive"), expected.weights.at("general")),
            0.1);
}

TEST(PlaygroundScreen, SmallWindow) {
  const SceneRun run = run_scene("playground", 4, {"--size", "1280x800"});
  check_playground(run);
  // Both maps fit side by side in the window.
  const LayoutEntry& dot = find_map(run, "playground/dot");
  EXPECT_LE(dot.x + dot.cell * static_cast<double>(dot.cols), run.screenshot.width);
  EXPECT_LE(dot.y + dot.cell * static_cast<double>(dot.rows), run.screenshot.height);
}

// What a learner sees first must already differ between the two scoring
// functions, or there is nothing to look at.
TEST(PlaygroundScreen, DefaultsShowADifference) {
  const SceneRun run = run_scene("playground", 2);
  ASSERT_TRUE(is_playground(run, {"additive", "dot"}));
  const Playground expected = recompute(run.inputs, {"additive", "dot"});
  EXPECT_GT(max_abs_difference(expected.weights.at("additive"), expected.weights.at("dot")), 0.1);
  // Several queries and keys, none masked.
  EXPECT_GE(run.inputs.at("queries").size(1), 2);
  EXPECT_GE(run.inputs.at("keys").size(1), 4);
  EXPECT_EQ(run.inputs.at("valid_lens").item(), static_cast<double>(run.inputs.at("keys").size(1)));
}

}  // namespace
}  // namespace ag::viewer_test
