// The training scene on screen, live: after some frames of training, every
// cell of both models' weights, dL/dweights and dL/dscores has the colour of
// the number the library computes from the dumped data and parameters of
// the step shown; the loss falls within 300 frames; memory does not grow.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

// The retrieval task's maps, [B, T] each, recomputed with the modules' own
// forward: d2l's AdditiveAttention, and DotProductAttention after the dot
// model's two projections.
struct Maps {
  Tensor weights, grad_weights, grad_scores;
};

// dL/dweights and dL/dscores by hand, for output = weights @ values and the
// mean squared error against `answer`:
//   dL/doutput   = 2 (output - answer) / numel
//   dL/dweights  = dL/doutput @ values^T
//   dL/dscores   = weights * (dL/dweights - sum_j weights_j dL/dweights_j)   (softmax)
Maps maps_of(const Tensor& weights, const Tensor& values, const Tensor& answer) {
  const Tensor output = bmm(weights, values);  // [B, 1, v]
  const Tensor grad_output = 2.0 * (output - answer) / static_cast<double>(answer.numel());
  const Tensor grad_weights = bmm(grad_output, transpose(values, 1, 2));  // [B, 1, T]
  const Tensor grad_scores =
      weights * (grad_weights - sum(weights * grad_weights, -1, /*keepdim=*/true));
  const int64_t B = weights.size(0), T = weights.size(2);
  return {reshape(weights, {B, T}), reshape(grad_weights, {B, T}), reshape(grad_scores, {B, T})};
}

::testing::AssertionResult is_retrieval(const SceneRun& run) {
  if (run.exit_code != 0) return ::testing::AssertionFailure() << "the viewer failed";
  for (const char* name : {"queries", "keys", "values", "valid_lens", "answer", "target",
                           "additive.W_q.weight", "dot.W_q.weight", "shown.step"}) {
    if (run.inputs.count(name) == 0) {
      return ::testing::AssertionFailure()
             << "no input '" << name << "': the viewer did not draw the training scene";
    }
  }
  return ::testing::AssertionSuccess();
}

void check_cells(const SceneRun& run) {
  ASSERT_TRUE(is_retrieval(run));
  const auto& in = run.inputs;
  const Tensor& queries = in.at("queries");
  const Tensor& keys = in.at("keys");
  const Tensor& values = in.at("values");
  const Tensor& valid_lens = in.at("valid_lens");
  const Tensor& answer = in.at("answer");
  NoGradGuard no_grad;

  const auto additive_state = with_prefix(in, "additive.");
  nn::AdditiveAttention additive(keys.size(2), queries.size(2),
                                 additive_state.at("W_q.weight").size(0));
  additive.load_state_dict(additive_state);
  additive(queries, keys, values, valid_lens);
  nn::DotProductAttention dot;
  dot(linear(queries, in.at("dot.W_q.weight")), linear(keys, in.at("dot.W_k.weight")), values,
      valid_lens);

  const int64_t B = queries.size(0), T = keys.size(1);
  const Tensor keep = sequence_mask(valid_lens, T);  // [B, T]: false at the padding
  const std::pair<std::string, Tensor> models[] = {{"additive", additive.attention_weights()},
                                                   {"dot", dot.attention_weights()}};
  for (const auto& [name, weights] : models) {
    SCOPED_TRACE(name);
    const Maps expected = maps_of(weights, values, answer);
    EXPECT_TRUE(cells_match(run, "training/" + name + "_weights", expected.weights, keep));
    EXPECT_TRUE(cells_match(run, "training/" + name + "_grad_weights", expected.grad_weights));
    EXPECT_TRUE(cells_match(run, "training/" + name + "_grad_scores", expected.grad_scores));
    // The numbers the tests above coloured are the ones the scene keeps.
    EXPECT_LT(max(abs(in.at("shown." + name + ".weights") - expected.weights)).item(), 1e-5);
    EXPECT_EQ(find_map(run, "training/" + name + "_weights").rows, B);
  }
  // Weights on a fixed [0, 1]; each gradient pair shares one scale centred on 0.
  const LayoutEntry& weights_map = find_map(run, "training/dot_weights");
  EXPECT_EQ(weights_map.scale.lo, 0.0);
  EXPECT_EQ(weights_map.scale.hi, 1.0);
  for (const char* map : {"grad_weights", "grad_scores"}) {
    const LayoutEntry& a = find_map(run, std::string("training/additive_") + map);
    const LayoutEntry& d = find_map(run, std::string("training/dot_") + map);
    EXPECT_EQ(a.scale.map, viz::Colormap::Diverging) << map;
    EXPECT_NEAR(a.scale.lo, -a.scale.hi, 1e-12) << map;
    EXPECT_EQ(d.scale.hi, a.scale.hi) << map;
  }
}

TEST(TrainingScreen, EveryCellIsTheLibrarysAtTheStepShown) {
  const SceneRun run = run_scene("training", 40);
  check_cells(run);
  // It trained while it drew: one step a frame, from the first frame on.
  EXPECT_EQ(run.inputs.at("shown.step").item(), 40);
}

// --frames counts frames of the scene asked for: the first frame already
// draws it (ImGui opens a tab bar's first tab on its first frame; the viewer
// settles the tab bar before counting).
TEST(TrainingScreen, TheFirstFrameDrawsTheSceneAskedFor) {
  const SceneRun run = run_scene("training", 1);
  check_cells(run);
  EXPECT_EQ(run.inputs.at("shown.step").item(), 1);
}

// --set opens the Nadaraya-Watson task paused at step 0: its weight maps are
// the library's masked softmax of the kernel scores at the initial width.
TEST(TrainingScreen, SetOpensNadarayaWatsonPausedAtStepZero) {
  const SceneRun run =
      run_scene("training", 3, {"--set", "training.task=nadaraya-watson,training.paused=yes"});
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  ASSERT_EQ(in.count("x_train"), 1u) << "not the Nadaraya-Watson task";
  EXPECT_EQ(in.at("shown.step").item(), 0);
  const Tensor x = in.at("x_train"), w = in.at("w");
  const int64_t n = x.size(0);
  const Tensor distance = (unsqueeze(x, 1) - unsqueeze(x, 0)) * w;
  const Tensor keep = logical_not(eq(unsqueeze(arange(n), 1), unsqueeze(arange(n), 0)));
  const Tensor weights = masked_softmax_keep(-0.5 * distance * distance, keep, MaskedRows::Zero);
  EXPECT_TRUE(cells_match(run, "training/nw_weights", weights, keep));
  const Tensor test_distance = (unsqueeze(in.at("x_test"), 1) - unsqueeze(x, 0)) * w;
  EXPECT_TRUE(cells_match(run, "training/nw_test_weights",
                          softmax(-0.5 * test_distance * test_distance, -1)));
}

TEST(TrainingScreen, SmallWindow) {
  const SceneRun run = run_scene("training", 10, {"--size", "1280x800"});
  check_cells(run);
  for (const char* id : {"training/dot_grad_scores", "training/dot_weights"}) {
    const LayoutEntry& map = find_map(run, id);
    EXPECT_LE(map.x + map.cell * static_cast<double>(map.cols), run.screenshot.width) << id;
    EXPECT_LE(map.y + map.cell * static_cast<double>(map.rows), run.screenshot.height) << id;
  }
}

// --stats prints the loss at step 0 and at the last step; 300 frames of
// training take it down by more than 10x.
TEST(TrainingScreen, TrainingLowersTheLossWithin300Frames) {
  const SceneRun run = run_scene("training", 300, {"--stats"});
  ASSERT_EQ(run.exit_code, 0);
  std::map<std::string, double> stats = read_stats(run.output);
  ASSERT_EQ(stats.count("loss_first"), 1u) << run.output;
  ASSERT_EQ(stats.count("loss_last"), 1u) << run.output;
  EXPECT_GT(stats["loss_first"], 0);
  EXPECT_LT(stats["loss_last"], 0.1 * stats["loss_first"]) << run.output;
  // loss_last is the mean of the two models' losses at the newest step.
  EXPECT_NEAR(
      stats["loss_last"],
      (run.inputs.at("shown.additive.loss").item() + run.inputs.at("shown.dot.loss").item()) / 2,
      1e-4 * stats["loss_last"] + 1e-7);
  std::printf("%s", run.output.c_str());
}

// The resident set after 2,000 frames of training is within 2 MiB of the
// one after the first 100: the history is allocated once, the loss curve is
// bounded. (A small window keeps software GL quick.)
TEST(TrainingScreen, NoMemoryGrowthWhileTraining) {
  if (!kMemoryIsMeasurable) GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory";
  const SceneRun run = run_checking_memory("training", 2000);
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_GE(run.inputs.at("shown.step").item(), 1990);
}

}  // namespace
}  // namespace ag::viewer_test
