// The playground scene on screen: both weight maps, cell by cell, against
// AdditiveAttention and DotProductAttention rerun on the points, values,
// valid_len and parameters the viewer dumped; and the outputs it prints.
#include <gtest/gtest.h>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

struct Playground {
  Tensor additive_weights, dot_weights, additive_outputs, dot_outputs;
  Tensor keep;  // [Tq, Tk]: false past valid_len
};

// The run dumped the playground's inputs (not another tab's).
::testing::AssertionResult is_playground(const SceneRun& run) {
  if (run.exit_code != 0) return ::testing::AssertionFailure() << "the viewer failed";
  for (const char* name : {"queries", "keys", "values", "valid_lens", "canvas",
                           "shown.additive_outputs", "shown.dot_scores"}) {
    if (run.inputs.count(name) == 0) {
      return ::testing::AssertionFailure()
             << "no input '" << name << "': the viewer did not draw the playground";
    }
  }
  return ::testing::AssertionSuccess();
}

// The scene's computation, redone from its inputs with the library.
Playground recompute(const std::map<std::string, Tensor>& inputs) {
  const Tensor& queries = inputs.at("queries");
  const Tensor& keys = inputs.at("keys");
  const Tensor& values = inputs.at("values");
  const Tensor& valid_lens = inputs.at("valid_lens");
  std::map<std::string, Tensor> state;
  for (const auto& [name, t] : inputs) {
    if (name.rfind("additive.", 0) == 0) state[name.substr(9)] = t;
  }
  const int64_t hiddens = state.at("W_q.weight").size(0);
  nn::AdditiveAttention additive(keys.size(2), queries.size(2), hiddens);
  additive.load_state_dict(state);
  additive.eval();
  nn::DotProductAttention dot;
  dot.eval();

  NoGradGuard no_grad;
  Playground out;
  out.additive_outputs = reshape(additive(queries, keys, values, valid_lens), {-1});
  out.dot_outputs = reshape(dot(queries, keys, values, valid_lens), {-1});
  out.additive_weights = squeeze(additive.attention_weights(), 0);
  out.dot_weights = squeeze(dot.attention_weights(), 0);
  const int64_t num_queries = queries.size(1), num_keys = keys.size(1);
  out.keep = expand(sequence_mask(valid_lens, num_keys), {num_queries, num_keys});
  return out;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  return max(abs(a.to(kFloat64) - b.to(kFloat64))).item();
}

void check_playground(const SceneRun& run) {
  ASSERT_TRUE(is_playground(run));
  const Playground expected = recompute(run.inputs);
  // d = 2, as the toy keys of d2l; additive attention's parameters are named as in d2l.
  EXPECT_EQ(run.inputs.at("keys").size(2), 2);
  EXPECT_EQ(run.inputs.count("additive.W_k.weight"), 1u);
  EXPECT_EQ(run.inputs.count("additive.w_v.weight"), 1u);
  EXPECT_TRUE(cells_match(run, "playground/additive", expected.additive_weights, expected.keep));
  EXPECT_TRUE(cells_match(run, "playground/dot", expected.dot_weights, expected.keep));
  // The printed outputs are the library's.
  EXPECT_LT(max_abs_difference(run.inputs.at("shown.additive_outputs"), expected.additive_outputs),
            1e-5);
  EXPECT_LT(max_abs_difference(run.inputs.at("shown.dot_outputs"), expected.dot_outputs), 1e-5);
  // The printed scores are the ones whose masked softmax gives the maps.
  const Tensor valid_lens = run.inputs.at("valid_lens");
  const Tensor additive_scores = unsqueeze(run.inputs.at("shown.additive_scores"), 0);
  const Tensor dot_scores = unsqueeze(run.inputs.at("shown.dot_scores"), 0);
  EXPECT_LT(max_abs_difference(squeeze(masked_softmax(additive_scores, valid_lens), 0),
                               expected.additive_weights),
            1e-5);
  EXPECT_LT(
      max_abs_difference(squeeze(masked_softmax(dot_scores, valid_lens), 0), expected.dot_weights),
      1e-5);
}

TEST(PlaygroundScreen, WeightMapsAndOutputsAreTheLibrarys) {
  const SceneRun run = run_scene("playground");
  check_playground(run);
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
  ASSERT_TRUE(is_playground(run));
  const Playground expected = recompute(run.inputs);
  EXPECT_GT(max_abs_difference(expected.additive_weights, expected.dot_weights), 0.1);
  // Several queries and keys, none masked.
  EXPECT_GE(run.inputs.at("queries").size(1), 2);
  EXPECT_GE(run.inputs.at("keys").size(1), 4);
  EXPECT_EQ(run.inputs.at("valid_lens").item(), static_cast<double>(run.inputs.at("keys").size(1)));
}

}  // namespace
}  // namespace ag::viewer_test
