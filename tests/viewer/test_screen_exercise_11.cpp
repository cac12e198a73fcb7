// Exercise 11's --viewer (scripts/exercise.sh 11 --viewer): the learner's
// scoring function, registered as my_general, beside the library's general in
// the compare scene. Both draw W_a from the same seed, so a right answer's
// maps are general's, cell for cell. The plausible wrong answer (W_a never
// registered) computes the same scores from an unregistered W_a, drawn in its
// constructor from the same seed: what differs on the screen is its line,
// "no parameters, nothing to train".
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "screen_check.h"
#include "test_util.h"

namespace ag::viewer_test {
namespace {

// Luong's general score by hand, from the scene's dumped inputs and W_a:
// q_i^T W_a k_j = q (k W_a^T)^T, then the masked softmax over the valid keys.
Tensor general_weights(const SceneRun& run, const Tensor& W_a) {
  const Tensor& queries = run.inputs.at("queries");
  const Tensor& keys = run.inputs.at("keys");
  const Tensor scores = bmm(queries, transpose(linear(keys, W_a), 1, 2));
  return squeeze(nn::masked_softmax(scores, run.inputs.at("valid_lens")), 0);
}

Tensor kept_keys(const SceneRun& run) {
  const int64_t num_queries = run.inputs.at("queries").size(1);
  const int64_t num_keys = run.inputs.at("keys").size(1);
  return expand(nn::sequence_mask(run.inputs.at("valid_lens"), num_keys), {num_queries, num_keys});
}

TEST(Exercise11Screen, TheSolutionDrawsGeneralsMapsCellForCell) {
#ifdef ATTOGRAD_WEB_SCREEN
  GTEST_SKIP() << "the page is the viewer alone; the exercise runs it natively";
#endif
  if (exercise_11_program("solution").empty()) GTEST_SKIP() << "the exercises are not built";
  SceneRun run =
      run_program_scene(exercise_11_program("solution"), "compare", 4, {"--viewer", "--stats"});
  ASSERT_EQ(run.exit_code, 0);
  const std::map<std::string, double> stats = read_stats(run.output);
  EXPECT_EQ(stats.at("compare_parameters_general"), 4);  // W_a [2, 2]
  EXPECT_EQ(stats.at("compare_parameters_my_general"), 4);
  // The same seed gave both classes the same W_a ...
  const Tensor W_a = run.inputs.at("general.W_a.weight");
  ASSERT_EQ(run.inputs.count("my_general.W_a.weight"), 1u);
  EXPECT_EQ(ag::testing::max_abs_diff(run.inputs.at("my_general.W_a.weight"), W_a), 0.0);
  // ... so both maps are the hand-computed general weights.
  const Tensor weights = general_weights(run, W_a);
  EXPECT_TRUE(cells_match(run, "compare/general", weights, kept_keys(run)));
  EXPECT_TRUE(cells_match(run, "compare/my_general", weights, kept_keys(run)));
}

TEST(Exercise11Screen, TheWrongAnswerShowsNoParameters) {
#ifdef ATTOGRAD_WEB_SCREEN
  GTEST_SKIP() << "the page is the viewer alone; the exercise runs it natively";
#endif
  if (exercise_11_program("wrong").empty()) GTEST_SKIP() << "the exercises are not built";
  SceneRun run =
      run_program_scene(exercise_11_program("wrong"), "compare", 4, {"--viewer", "--stats"});
  ASSERT_EQ(run.exit_code, 0);
  // W_a was never registered: the scene counts no parameter and dumps none ...
  const std::map<std::string, double> stats = read_stats(run.output);
  EXPECT_EQ(stats.at("compare_parameters_general"), 4);
  EXPECT_EQ(stats.at("compare_parameters_my_general"), 0);
  EXPECT_EQ(run.inputs.count("my_general.W_a.weight"), 0u);
  // ... though its scores are general's: the mistake is in what the module
  // owns (its state dict, what an optimiser trains), not in its arithmetic.
  const Tensor weights = general_weights(run, run.inputs.at("general.W_a.weight"));
  EXPECT_TRUE(cells_match(run, "compare/my_general", weights, kept_keys(run)));
}

}  // namespace
}  // namespace ag::viewer_test
