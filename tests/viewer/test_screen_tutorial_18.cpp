// Tutorial 18's --viewer: the viewer opened by a program that registered its
// own scoring function (cosine, written in the tutorial's file), through
// ag::viewer::run_viewer. The compare and training scenes show cosine beside
// additive, and their cells are the registered function's weights.
#include <gtest/gtest.h>

#include <cmath>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

// x / |x| over the last dim.
Tensor unit(const Tensor& x) {
  return x / sqrt(sum(x * x, -1, true));
}

TEST(Tutorial18Screen, CosineBesideAdditiveInTheCompareScene) {
#ifdef ATTOGRAD_WEB_SCREEN
  GTEST_SKIP() << "the page is the viewer alone; tutorial 18 runs it natively";
#endif
  if (tutorial_18_program().empty()) GTEST_SKIP() << "the tutorials are not built";
  SceneRun run = run_program_scene(tutorial_18_program(), "compare", 4, {"--viewer"});
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  const Tensor& queries = in.at("queries");
  const Tensor& keys = in.at("keys");
  const Tensor& valid_lens = in.at("valid_lens");
  const int64_t num_queries = queries.size(1), num_keys = keys.size(1);
  const Tensor keep = expand(nn::sequence_mask(valid_lens, num_keys), {num_queries, num_keys});

  // The tutorial's score, from the parameters the scene drew for it:
  // exp(t) cos(W_q q, k), then the masked softmax over the valid keys.
  const Tensor W_q = in.at("cosine.W_q.weight");
  const Tensor log_temperature = in.at("cosine.log_temperature");
  const Tensor scores = squeeze(bmm(unit(linear(queries, W_q)), transpose(unit(keys), 1, 2)), 0) *
                        exp(log_temperature);
  const Tensor weights = nn::masked_softmax(unsqueeze(scores, 0), valid_lens);
  EXPECT_TRUE(cells_match(run, "compare/cosine_scores", scores, keep));
  EXPECT_TRUE(cells_match(run, "compare/cosine", squeeze(weights, 0), keep));
  // And additive beside it, the table's own.
  EXPECT_NO_THROW(find_map(run, "compare/additive"));
  EXPECT_EQ(in.count("additive.W_k.weight"), 1u);
}

// The training scene's retrieval task, opened by the same --viewer with
// cosine beside additive (paused at step 0): the cosine map's cells are the
// registered function's weights, and 10 steps later it has learned (its
// parameters moved and its loss fell).
TEST(Tutorial18Screen, CosineBesideAdditiveInTheTrainingScene) {
#ifdef ATTOGRAD_WEB_SCREEN
  GTEST_SKIP() << "the page is the viewer alone; tutorial 18 runs it natively";
#endif
  if (tutorial_18_program().empty()) GTEST_SKIP() << "the tutorials are not built";
  const SceneRun start = run_program_scene(tutorial_18_program(), "training", 2,
                                           {"--viewer", "--set", "training.paused=yes"});
  ASSERT_EQ(start.exit_code, 0);
  const auto& in = start.inputs;
  ASSERT_EQ(in.count("shown.cosine.weights"), 1u) << "no cosine model in the training scene";
  EXPECT_EQ(in.at("shown.step").item(), 0);
  const Tensor& keys = in.at("keys");
  const int64_t B = keys.size(0), T = keys.size(1);
  // exp(t) cos(W_q q, k), masked to each example's valid keys.
  const Tensor scores =
      bmm(unit(linear(in.at("queries"), in.at("cosine.W_q.weight"))), transpose(unit(keys), 1, 2)) *
      exp(in.at("cosine.log_temperature"));
  const Tensor weights = reshape(nn::masked_softmax(scores, in.at("valid_lens")), {B, T});
  const Tensor keep = nn::sequence_mask(in.at("valid_lens"), T);
  EXPECT_TRUE(cells_match(start, "training/cosine_weights", weights, keep));
  EXPECT_LT(max(abs(in.at("shown.cosine.weights") - weights)).item(), 1e-5);
  EXPECT_NO_THROW(find_map(start, "training/additive_weights"));

  const SceneRun trained =
      run_program_scene(tutorial_18_program(), "training", 10, {"--viewer", "--stats"});
  ASSERT_EQ(trained.exit_code, 0);
  const std::map<std::string, double> stats = read_stats(trained.output);
  ASSERT_EQ(stats.count("loss_last_cosine"), 1u) << trained.output;
  EXPECT_LT(stats.at("loss_last_cosine"), stats.at("loss_first_cosine"));
  EXPECT_GT(max(abs(trained.inputs.at("cosine.W_q.weight") - in.at("cosine.W_q.weight"))).item(),
            1e-4);
}

}  // namespace
}  // namespace ag::viewer_test
