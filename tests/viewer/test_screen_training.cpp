// The training scene on screen, live: after some frames of training, every
// cell of both models' weights, dL/dweights and dL/dscores has the colour of
// the number the library computes from the dumped data and parameters of
// the step shown; a pair other than the default trains as the library's own
// Adam trains the same table functions; a function without parameters
// (dot) does not move; the loss falls within 300 frames; memory does not
// grow.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

using Pair = std::array<std::string, 2>;
const Pair kDefaultPair = {"additive", "general_scaled"};

// The retrieval task's maps, [B, T] each.
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

// Function `name`'s weights [B, 1, T] at the dumped parameters, computed
// without its table class: d2l's AdditiveAttention and DotProductAttention,
// Luong's general q^T W_a k by hand (general_scaled: over sqrt(k)).
Tensor weights_by_hand(const std::map<std::string, Tensor>& in, const std::string& name) {
  const Tensor& queries = in.at("queries");
  const Tensor& keys = in.at("keys");
  const Tensor& values = in.at("values");
  const Tensor& valid_lens = in.at("valid_lens");
  NoGradGuard no_grad;
  if (name == "additive") {
    const auto state = with_prefix(in, "additive.");
    nn::AdditiveAttention additive(keys.size(2), queries.size(2), state.at("W_q.weight").size(0));
    additive.load_state_dict(state);
    additive(queries, keys, values, valid_lens);
    return additive.attention_weights();
  }
  if (name == "dot") {
    nn::DotProductAttention dot;
    dot(queries, keys, values, valid_lens);
    return dot.attention_weights();
  }
  EXPECT_TRUE(name == "general" || name == "general_scaled") << "no computation of " << name;
  const Tensor W_a = in.at(name + ".W_a.weight");  // [q, k]
  Tensor scores = bmm(queries, transpose(linear(keys, W_a), 1, 2));
  if (name == "general_scaled") scores = scores / std::sqrt(static_cast<double>(keys.size(2)));
  return nn::masked_softmax(scores, valid_lens);
}

::testing::AssertionResult is_retrieval(const SceneRun& run, const Pair& pair) {
  if (run.exit_code != 0) return ::testing::AssertionFailure() << "the viewer failed";
  for (const std::string& name :
       {std::string("queries"), std::string("keys"), std::string("values"),
        std::string("valid_lens"), std::string("answer"), std::string("target"),
        std::string("shown.step"), "shown." + pair[0] + ".weights", "shown." + pair[1] + ".loss"}) {
    if (run.inputs.count(name) == 0) {
      return ::testing::AssertionFailure()
             << "no input '" << name << "': the viewer did not draw the training scene";
    }
  }
  return ::testing::AssertionSuccess();
}

// Every cell of the six maps against the weights by hand and the gradients
// by hand of the step shown.
void check_cells(const SceneRun& run, const Pair& pair = kDefaultPair) {
  ASSERT_TRUE(is_retrieval(run, pair));
  const auto& in = run.inputs;
  const int64_t B = in.at("queries").size(0), T = in.at("keys").size(1);
  const Tensor keep = nn::sequence_mask(in.at("valid_lens"), T);  // [B, T]: false at the padding
  for (const std::string& name : pair) {
    SCOPED_TRACE(name);
    const Maps expected = maps_of(weights_by_hand(in, name), in.at("values"), in.at("answer"));
    EXPECT_TRUE(cells_match(run, "training/" + name + "_weights", expected.weights, keep));
    EXPECT_TRUE(cells_match(run, "training/" + name + "_grad_weights", expected.grad_weights));
    EXPECT_TRUE(cells_match(run, "training/" + name + "_grad_scores", expected.grad_scores));
    // The numbers the tests above coloured are the ones the scene keeps.
    EXPECT_LT(max(abs(in.at("shown." + name + ".weights") - expected.weights)).item(), 1e-5);
    EXPECT_EQ(find_map(run, "training/" + name + "_weights").rows, B);
  }
  // Weights on a fixed [0, 1]; each gradient pair shares one scale centred on 0.
  const LayoutEntry& weights_map = find_map(run, "training/" + pair[1] + "_weights");
  EXPECT_EQ(weights_map.scale.lo, 0.0);
  EXPECT_EQ(weights_map.scale.hi, 1.0);
  for (const std::string map : {"grad_weights", "grad_scores"}) {
    const LayoutEntry& a = find_map(run, "training/" + pair[0] + "_" + map);
    const LayoutEntry& b = find_map(run, "training/" + pair[1] + "_" + map);
    EXPECT_EQ(a.scale.map, viz::Colormap::Diverging) << map;
    EXPECT_NEAR(a.scale.lo, -a.scale.hi, 1e-12) << map;
    EXPECT_EQ(b.scale.hi, a.scale.hi) << map;
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
  const Tensor weights =
      nn::masked_softmax_keep(-0.5 * distance * distance, keep, nn::MaskedRows::Zero);
  EXPECT_TRUE(cells_match(run, "training/nw_weights", weights, keep));
  const Tensor test_distance = (unsqueeze(in.at("x_test"), 1) - unsqueeze(x, 0)) * w;
  EXPECT_TRUE(cells_match(run, "training/nw_test_weights",
                          softmax(-0.5 * test_distance * test_distance, -1)));
}

// Any two of the table's functions, by name. At step 0 (paused) each map is
// the library's masked softmax of the function's scores by hand; 30 frames
// later each function's parameters and weights are what 30 steps of the
// library's Adam give the same table functions from those step-0 parameters,
// trained here.
TEST(TrainingScreen, AnotherPairTrainsAsTheLibrarysAdamTrainsIt) {
  const Pair pair = {"additive", "general"};
  const SceneRun start =
      run_scene("training", 2, {"--set", "training.scoring=additive,general,training.paused=yes"});
  check_cells(start, pair);
  ASSERT_EQ(start.inputs.at("shown.step").item(), 0);
  constexpr int kSteps = 30;
  const SceneRun trained =
      run_scene("training", kSteps, {"--set", "training.scoring=additive,general"});
  check_cells(trained, pair);
  ASSERT_EQ(trained.inputs.at("shown.step").item(), kSteps);

  // The same data (the same seed), the step-0 parameters, then Adam at the
  // scene's default rate on each model's mean squared error.
  const auto& in = start.inputs;
  for (const char* data : {"queries", "keys", "values", "valid_lens", "answer"}) {
    EXPECT_EQ(trained.inputs.at(data).to_vector(), in.at(data).to_vector()) << data;
  }
  const Tensor& queries = in.at("queries");
  const Tensor& keys = in.at("keys");
  const Tensor& values = in.at("values");
  const Tensor& valid_lens = in.at("valid_lens");
  std::vector<std::unique_ptr<nn::ScoringFunction>> functions;
  std::vector<Tensor> parameters;
  for (const std::string& name : pair) {
    functions.push_back(nn::make_scoring_function(name, {.query_size = queries.size(2),
                                                         .key_size = keys.size(2),
                                                         .num_hiddens = 8,
                                                         .value_size = values.size(2)}));
    functions.back()->load_state_dict(with_prefix(in, name + "."));
    for (const Tensor& p : functions.back()->parameters()) parameters.push_back(p);
  }
  optim::Adam adam(parameters, 0.01);
  const auto weights_of = [&](nn::ScoringFunction& function) {
    return nn::masked_softmax(function.scores(queries, function.remember(keys, values)),
                              valid_lens);
  };
  for (int step = 0; step < kSteps; ++step) {
    adam.zero_grad();
    Tensor loss = zeros({});
    for (auto& function : functions) {
      loss = loss + mse_loss(bmm(weights_of(*function), values), in.at("answer"));
    }
    loss.backward();
    adam.step();
  }
  NoGradGuard no_grad;
  const int64_t B = queries.size(0), T = keys.size(1);
  const Tensor keep = nn::sequence_mask(valid_lens, T);
  for (size_t m = 0; m < 2; ++m) {
    SCOPED_TRACE(pair[m]);
    for (const auto& [name, p] : functions[m]->named_parameters()) {
      const Tensor shown = trained.inputs.at(pair[m] + "." + name);
      EXPECT_LT(max(abs(shown - p)).item(), 1e-5) << name;
      // And they moved: 30 steps of training, not the start again.
      EXPECT_GT(max(abs(shown - in.at(pair[m] + "." + name))).item(), 1e-3) << name;
    }
    const Tensor weights = reshape(weights_of(*functions[m]), {B, T});
    EXPECT_LT(max(abs(trained.inputs.at("shown." + pair[m] + ".weights") - weights)).item(), 1e-5);
    EXPECT_TRUE(cells_match(trained, "training/" + pair[m] + "_weights", weights, keep));
  }
}

// The table's dot has no parameters: nothing trains, its loss and maps stay
// as they start (--stats: loss_first_dot = loss_last_dot), while additive
// beside it learns.
TEST(TrainingScreen, DotHasNothingToTrain) {
  const SceneRun run =
      run_scene("training", 20, {"--set", "training.scoring=additive,dot", "--stats"});
  check_cells(run, {"additive", "dot"});
  const std::map<std::string, double> stats = read_stats(run.output);
  ASSERT_EQ(stats.count("loss_first_dot"), 1u) << run.output;
  EXPECT_EQ(stats.at("loss_last_dot"), stats.at("loss_first_dot")) << run.output;
  EXPECT_LT(stats.at("loss_last_additive"), 0.9 * stats.at("loss_first_additive")) << run.output;
  EXPECT_NEAR(stats.at("loss_last_dot"), run.inputs.at("shown.dot.loss").item(), 1e-6);
  for (const auto& [name, t] : run.inputs) EXPECT_NE(name.rfind("dot.", 0), 0u) << name;
}

TEST(TrainingScreen, SmallWindow) {
  const SceneRun run = run_scene("training", 10, {"--size", "1280x800"});
  check_cells(run);
  for (const char* id :
       {"training/general_scaled_grad_scores", "training/general_scaled_weights"}) {
    const LayoutEntry& map = find_map(run, id);
    EXPECT_LE(map.x + map.cell * static_cast<double>(map.cols), run.screenshot.width) << id;
    EXPECT_LE(map.y + map.cell * static_cast<double>(map.rows), run.screenshot.height) << id;
  }
}

// --stats prints the loss at step 0 and at the last step, the two models'
// mean and each model's; 300 frames of training take it down by more than 10x.
TEST(TrainingScreen, TrainingLowersTheLossWithin300Frames) {
  const SceneRun run = run_scene("training", 300, {"--stats"});
  ASSERT_EQ(run.exit_code, 0);
  std::map<std::string, double> stats = read_stats(run.output);
  ASSERT_EQ(stats.count("loss_first"), 1u) << run.output;
  ASSERT_EQ(stats.count("loss_last"), 1u) << run.output;
  EXPECT_GT(stats["loss_first"], 0);
  EXPECT_LT(stats["loss_last"], 0.1 * stats["loss_first"]) << run.output;
  // loss_last is the mean of the two models' losses at the newest step.
  double sum = 0;
  for (const std::string& name : kDefaultPair) {
    const double loss = run.inputs.at("shown." + name + ".loss").item();
    EXPECT_NEAR(stats["loss_last_" + name], loss, 1e-4 * loss + 1e-7) << name;
    EXPECT_LT(stats["loss_last_" + name], stats["loss_first_" + name]) << name;
    sum += loss;
  }
  EXPECT_NEAR(stats["loss_last"], sum / 2, 1e-4 * stats["loss_last"] + 1e-7);
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
