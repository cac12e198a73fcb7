// The training scene under Dear ImGui's null backend (no display): play,
// pause, single step, reset and the history slider do what they say; both
// tasks draw every map; the gradients on screen (dL/dweights, dL/dscores,
// from the scene's backward cut in three) agree with finite differences of
// the loss, and the parameters' gradients with one uncut backward.
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "heatmap_widget.h"
#include "null_backend.h"
#include "scene_training.h"
#include "test_util.h"

namespace ag::viewer {
namespace {

using Task = TrainingScene::Task;
using Inputs = std::map<std::string, Tensor>;

class TrainingUi : public NullBackend {
 protected:
  void frame() {
    NullBackend::frame([&] { scene.draw(); });
  }
  // Exactly equal values (the history stores float32, as trained).
  static bool same(const Tensor& a, const Tensor& b) { return a.to_vector() == b.to_vector(); }

  TrainingScene scene;
};

// ---- the controls ------------------------------------------------------------------------

TEST_F(TrainingUi, TrainsLiveFromTheFirstFrameAtStepsPerFrame) {
  EXPECT_EQ(scene.task(), Task::Retrieval);
  EXPECT_FALSE(scene.session().paused());
  EXPECT_EQ(scene.session().steps(), 0);
  frame();
  frame();
  EXPECT_EQ(scene.session().steps(), 2);
  EXPECT_EQ(scene.session().shown_step(), 2);
  scene.set_steps_per_frame(5);
  frame();
  EXPECT_EQ(scene.session().steps(), 7);
  EXPECT_EQ(scene.inputs().at("shown.step").item(), 7);
}

TEST_F(TrainingUi, PauseStopsTrainingAndPlayResumes) {
  frame();
  scene.session().set_paused(true);
  const Inputs before = scene.inputs();
  for (int i = 0; i < 3; ++i) frame();
  EXPECT_EQ(scene.session().steps(), 1);
  EXPECT_TRUE(
      same(scene.inputs().at("general_scaled.W_a.weight"), before.at("general_scaled.W_a.weight")));
  scene.session().set_paused(false);
  frame();
  EXPECT_EQ(scene.session().steps(), 2);
  EXPECT_FALSE(
      same(scene.inputs().at("general_scaled.W_a.weight"), before.at("general_scaled.W_a.weight")));
}

TEST_F(TrainingUi, SingleStepTakesOneStepAndPauses) {
  frame();
  scene.session().single_step();
  EXPECT_TRUE(scene.session().paused());
  EXPECT_EQ(scene.session().steps(), 2);
  frame();
  frame();
  EXPECT_EQ(scene.session().steps(), 2);
  scene.session().single_step();
  EXPECT_EQ(scene.session().steps(), 3);
  EXPECT_EQ(scene.session().shown_step(), 3);
}

TEST_F(TrainingUi, ResetGoesBackToTheSameStart) {
  const Inputs start = scene.inputs();
  frame();
  const Inputs first_step = scene.inputs();
  for (int i = 0; i < 5; ++i) frame();
  ASSERT_FALSE(same(scene.inputs().at("additive.W_q.weight"), start.at("additive.W_q.weight")));
  scene.session().reset();
  EXPECT_EQ(scene.session().steps(), 0);
  EXPECT_EQ(scene.session().oldest_step(), 0);
  const Inputs again = scene.inputs();
  for (const auto& [name, t] : start) EXPECT_TRUE(same(again.at(name), t)) << name;
  // And it trains the same way again: deterministic from the seed.
  frame();
  const Inputs first_again = scene.inputs();
  for (const auto& [name, t] : first_step) EXPECT_TRUE(same(first_again.at(name), t)) << name;
}

TEST_F(TrainingUi, LearningRateIsTheShownTasksAndTrainingGoesOn) {
  EXPECT_DOUBLE_EQ(scene.session().learning_rate(), 0.01);
  scene.session().set_learning_rate(0.03);
  EXPECT_DOUBLE_EQ(scene.session().learning_rate(), 0.03);
  frame();
  EXPECT_EQ(scene.session().steps(), 1);
  scene.set_task(Task::NadarayaWatson);
  EXPECT_DOUBLE_EQ(scene.session().learning_rate(), 0.05);  // its own default
  EXPECT_EQ(scene.session().steps(), 0);                    // each task keeps its own progress
}

// The slider shows an older step exactly as it was drawn live: the same
// parameters, loss and maps; it pauses training, Step walks forward through
// the history, and Play goes back to the newest step.
TEST_F(TrainingUi, HistoryShowsOlderStepsAsTheyWere) {
  std::vector<Inputs> live;
  live.push_back(scene.inputs());
  for (int i = 0; i < 10; ++i) {
    frame();
    live.push_back(scene.inputs());
  }
  scene.session().show_step(4);
  EXPECT_TRUE(scene.session().paused());
  EXPECT_EQ(scene.session().shown_step(), 4);
  frame();
  EXPECT_EQ(scene.session().steps(), 10);
  const Inputs shown = scene.inputs();
  for (const auto& [name, t] : live[4]) EXPECT_TRUE(same(shown.at(name), t)) << name;

  scene.session().single_step();  // through the history, not a new training step
  EXPECT_EQ(scene.session().shown_step(), 5);
  EXPECT_EQ(scene.session().steps(), 10);
  EXPECT_TRUE(same(scene.inputs().at("shown.general_scaled.weights"),
                   live[5].at("shown.general_scaled.weights")));

  scene.session().set_paused(false);
  frame();
  EXPECT_EQ(scene.session().steps(), 11);
  EXPECT_EQ(scene.session().shown_step(), 11);
}

TEST_F(TrainingUi, HistoryHoldsTheLastStepsOnly) {
  scene.set_steps_per_frame(20);
  const int64_t frames = TrainingScene::kHistory / 20 + 3;
  for (int64_t i = 0; i < frames; ++i) frame();
  const int64_t steps = frames * 20;
  ASSERT_EQ(scene.session().steps(), steps);
  EXPECT_EQ(scene.session().oldest_step(), steps - TrainingScene::kHistory + 1);
  scene.session().show_step(0);  // clamped to the oldest held
  EXPECT_EQ(scene.session().shown_step(), scene.session().oldest_step());
  EXPECT_EQ(scene.inputs().at("shown.step").item(),
            static_cast<double>(scene.session().oldest_step()));
  scene.session().show_step(steps + 100);  // the newest: live again
  EXPECT_EQ(scene.session().shown_step(), steps);
}

// ---- both tasks draw their maps and learn --------------------------------------------------

std::vector<std::string> drawn_ids() {
  std::vector<std::string> ids;
  for (const DrawnHeatmap& map : drawn_heatmaps()) ids.push_back(map.id);
  return ids;
}

TEST_F(TrainingUi, RetrievalDrawsWeightsAndBothGradientsOfBothModels) {
  frame();
  EXPECT_EQ(drawn_ids(),
            (std::vector<std::string>{
                "training/additive_weights", "training/general_scaled_weights",
                "training/additive_grad_weights", "training/general_scaled_grad_weights",
                "training/additive_grad_scores", "training/general_scaled_grad_scores"}));
  const std::vector<DrawnHeatmap>& maps = drawn_heatmaps();
  const Inputs in = scene.inputs();
  for (const DrawnHeatmap& map : maps) {
    EXPECT_EQ(map.rows, in.at("queries").size(0)) << map.id;  // one row per example
    EXPECT_EQ(map.cols, in.at("keys").size(1)) << map.id;     // one column per key
  }
  // Weights on [0, 1]; each gradient pair on one scale, centred on 0.
  EXPECT_EQ(maps[0].scale.lo, 0.0);
  EXPECT_EQ(maps[0].scale.hi, 1.0);
  for (size_t i = 2; i < maps.size(); i += 2) {
    EXPECT_EQ(maps[i].scale.map, viz::Colormap::Diverging) << maps[i].id;
    EXPECT_EQ(maps[i].scale.lo, -maps[i].scale.hi) << maps[i].id;
    EXPECT_EQ(maps[i + 1].scale.hi, maps[i].scale.hi) << maps[i].id;
  }
}

TEST_F(TrainingUi, NadarayaWatsonDrawsTheTestWeightsAndTheTrainingStep) {
  scene.set_task(Task::NadarayaWatson);
  frame();
  EXPECT_EQ(drawn_ids(),
            (std::vector<std::string>{"training/nw_test_weights", "training/nw_weights",
                                      "training/nw_grad_weights", "training/nw_grad_scores"}));
  const Inputs in = scene.inputs();
  const int64_t n = in.at("x_train").size(0);
  for (const DrawnHeatmap& map : drawn_heatmaps()) {
    EXPECT_EQ(map.rows, n) << map.id;
    EXPECT_EQ(map.cols, n) << map.id;
  }
  EXPECT_EQ(drawn_heatmaps()[3].scale.map, viz::Colormap::Diverging);
}

double stat(const TrainingScene& scene, const std::string& key) {
  std::ostringstream out;
  scene.print_stats(out);
  std::istringstream lines(out.str());
  std::string name;
  double value = 0;
  while (lines >> name >> value) {
    if (name == key) return value;
  }
  ADD_FAILURE() << "no " << key << " in:\n" << out.str();
  return 0;
}

TEST_F(TrainingUi, BothTasksLowerTheirLossWithin300Steps) {
  scene.set_steps_per_frame(30);
  for (Task task : {Task::Retrieval, Task::NadarayaWatson}) {
    scene.set_task(task);
    for (int i = 0; i < 10; ++i) frame();
    SCOPED_TRACE(static_cast<int>(task));
    EXPECT_LT(stat(scene, "loss_last"), 0.5 * stat(scene, "loss_first"));
  }
}

// Example b's largest weight is on its target key, for each b.
std::vector<bool> on_target(const Inputs& in, const std::string& model) {
  const std::vector<double> picked = argmax(in.at("shown." + model + ".weights"), -1).to_vector();
  const std::vector<double> target = in.at("target").to_vector();
  std::vector<bool> right;
  for (size_t b = 0; b < picked.size(); ++b) right.push_back(picked[b] == target[b]);
  return right;
}

// What the scene's "Try this" note promises a learner.
TEST_F(TrainingUi, TryThisNotesHold) {
  scene.set_steps_per_frame(30);
  for (int i = 0; i < 10; ++i) frame();
  Inputs in = scene.inputs();
  // "With the default pair and seed 0, general_scaled's loss falls faster
  // than additive's; after 300 steps each still has a row or two on a wrong key."
  ASSERT_EQ(in.at("shown.step").item(), 300);
  EXPECT_LT(in.at("shown.general_scaled.loss").item(), in.at("shown.additive.loss").item());
  for (const char* model : {"additive", "general_scaled"}) {
    const std::vector<bool> right = on_target(in, model);
    const auto wrong = std::count(right.begin(), right.end(), false);
    EXPECT_GE(wrong, 1) << model;
    EXPECT_LE(wrong, 2) << model;
  }
  // "Padding: ... dL/dscores there is exactly 0: no gradient passes a masked score."
  const Tensor padding = logical_not(nn::sequence_mask(in.at("valid_lens"), in.at("keys").size(1)));
  for (const char* model : {"shown.additive.grad_scores", "shown.general_scaled.grad_scores"}) {
    EXPECT_EQ(sum(abs(where(padding, in.at(model), 0.0))).item(), 0.0) << model;
  }
  // "Set the learning rate to about 0.1 and press Reset ... general_scaled
  // gets all 16 rows right within 200 steps; additive keeps two wrong, and
  // the gradient left on their rows of dL/dscores is nearly 0."
  scene.session().set_learning_rate(0.1);
  scene.session().reset();
  scene.set_steps_per_frame(20);
  for (int i = 0; i < 10; ++i) frame();
  in = scene.inputs();
  ASSERT_EQ(in.at("shown.step").item(), 200);
  const std::vector<bool> general_scaled = on_target(in, "general_scaled");
  EXPECT_EQ(std::count(general_scaled.begin(), general_scaled.end(), false), 0);
  const std::vector<bool> right = on_target(in, "additive");
  EXPECT_EQ(std::count(right.begin(), right.end(), false), 2);
  const std::vector<double> grad_scores = in.at("shown.additive.grad_scores").to_vector();
  const size_t keys = static_cast<size_t>(in.at("keys").size(1));
  for (size_t b = 0; b < right.size(); ++b) {
    if (right[b]) continue;
    for (size_t j = 0; j < keys; ++j) EXPECT_LT(std::abs(grad_scores[b * keys + j]), 1e-3) << b;
  }
}

// The knob and the combos choose any two of nn's table: new models named
// after them (records, maps, the plot's series), step 0 again at the seed,
// learning rate and pause the task had; the other task is left as it was.
TEST_F(TrainingUi, AnyTwoScoringFunctionsOfTheTableLearnTheRetrieval) {
  EXPECT_EQ(scene.retrieval_pair(), (ScoringPair{"additive", "general_scaled"}));
  scene.session().set_seed(3);
  scene.session().set_learning_rate(0.02);
  frame();
  scene.session().set_paused(true);
  for (const Knob& knob : scene.knobs()) {
    if (knob.name == "scoring") knob.set("multihead,dot");
  }
  EXPECT_EQ(scene.retrieval_pair(), (ScoringPair{"multihead", "dot"}));
  EXPECT_EQ(scene.session().steps(), 0);
  EXPECT_EQ(scene.session().seed(), 3);
  EXPECT_DOUBLE_EQ(scene.session().learning_rate(), 0.02);
  EXPECT_TRUE(scene.session().paused());
  std::vector<std::string> series;
  for (const auto& s : scene.session().trainer().series()) series.push_back(s.label);
  EXPECT_EQ(series, (std::vector<std::string>{"multihead", "dot"}));
  frame();
  EXPECT_EQ(drawn_ids(), (std::vector<std::string>{
                             "training/multihead_weights", "training/dot_weights",
                             "training/multihead_grad_weights", "training/dot_grad_weights",
                             "training/multihead_grad_scores", "training/dot_grad_scores"}));
  scene.session().single_step();
  const Inputs in = scene.inputs();
  // multihead learns W_q and W_k through its scores; the task pools the
  // values itself, so W_v and W_o get no gradient (0 in the record).
  EXPECT_GT(max(abs(in.at("shown.grad.multihead.W_q.weight"))).item(), 0.0);
  EXPECT_EQ(max(abs(in.at("shown.grad.multihead.W_v.weight"))).item(), 0.0);
  EXPECT_EQ(in.count("dot.W_q.weight"), 0u);  // dot has no parameters
  // A bad pair, here or in the playground, is an error saying what is accepted.
  auto scenes = make_scenes();
  EXPECT_TRUE(testing::throws_error([&] { apply_setting(scenes, "training.scoring=dot,dot"); },
                                    {"both 'dot'"}));
  EXPECT_TRUE(
      testing::throws_error([&] { apply_setting(scenes, "training.scoring=additive,cosine"); },
                            {"no scoring function 'cosine'", "general_scaled"}));
  EXPECT_TRUE(testing::throws_error([&] { apply_setting(scenes, "playground.scoring=dot,dot"); },
                                    {"both 'dot'"}));
  EXPECT_TRUE(testing::throws_error([&] { apply_setting(scenes, "playground.scoring=cosine,dot"); },
                                    {"no scoring function 'cosine'", "general_scaled"}));
  EXPECT_TRUE(testing::throws_error([&] { apply_setting(scenes, "playground.scoring=dot"); },
                                    {"two scoring functions"}));
  // --list-knobs lists the table's names and each scene's default pair.
  std::ostringstream knobs;
  print_knobs(knobs, scenes);
  for (const char* line :
       {"training.scoring=two of additive, dot, general, multihead, general_scaled",
        "(default additive,general_scaled)", "playground.scoring=two of additive, dot",
        "(default additive,dot)"}) {
    EXPECT_NE(knobs.str().find(line), std::string::npos) << line << "\n" << knobs.str();
  }
}

// ---- the gradients on screen ------------------------------------------------------------------
// Central differences, in float64, of `loss_of` at `x` (a float64 copy of
// what the scene computed), entry by entry.
Tensor numeric_gradient(const std::function<double(const Tensor&)>& loss_of, const Tensor& x) {
  const double eps = 1e-6;
  std::vector<double> values = x.to(kFloat64).to_vector(), gradient(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double kept = values[i];
    values[i] = kept + eps;
    const double up = loss_of(tensor(values, x.shape(), kFloat64));
    values[i] = kept - eps;
    const double down = loss_of(tensor(values, x.shape(), kFloat64));
    values[i] = kept;
    gradient[i] = (up - down) / (2 * eps);
  }
  return tensor(gradient, x.shape(), kFloat64);
}

// |shown - numeric| within 1e-3 of the largest |numeric| (float32 against float64).
::testing::AssertionResult agree(const Tensor& shown, const Tensor& numeric) {
  const double scale = max(abs(numeric)).item();
  const double error = max(abs(shown.to(kFloat64) - numeric)).item();
  if (scale > 0 && error <= 1e-3 * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "max |difference| " << error << ", largest |gradient| " << scale;
}

Tensor f64(const Tensor& t) {
  return t.to(kFloat64);
}

TEST_F(TrainingUi, RetrievalGradientsAgreeWithFiniteDifferences) {
  for (int i = 0; i < 20; ++i) frame();  // past the start, where the weights are still flat
  const Inputs in = scene.inputs();
  const Tensor values = f64(in.at("values")), answer = f64(in.at("answer"));
  const Tensor& valid_lens = in.at("valid_lens");
  const int64_t B = values.size(0), T = values.size(1);
  // From the weights [B, T] on: output = weights @ values, mean squared error.
  const auto loss_of_weights = [&](const Tensor& weights) {
    return mse_loss(bmm(reshape(weights, {B, 1, T}), values), answer).item();
  };
  // From the scores on: d2l's masked softmax first.
  const auto loss_of_scores = [&](const Tensor& scores) {
    return loss_of_weights(nn::masked_softmax(reshape(scores, {B, 1, T}), valid_lens));
  };
  for (const std::string model : {"additive", "general_scaled"}) {
    SCOPED_TRACE(model);
    const std::string shown = "shown." + model;
    EXPECT_TRUE(agree(in.at(shown + ".grad_weights"),
                      numeric_gradient(loss_of_weights, in.at(shown + ".weights"))));
    // The scores themselves are not kept: recompute them, by the formulas.
    const Tensor queries = f64(in.at("queries")), keys = f64(in.at("keys"));
    Tensor scores;
    if (model == "additive") {
      scores = additive_scores(linear(queries, f64(in.at("additive.W_q.weight"))),
                               linear(keys, f64(in.at("additive.W_k.weight"))),
                               reshape(f64(in.at("additive.w_v.weight")), {-1}));
    } else {  // q^T W_a k / sqrt(k)
      scores =
          bmm(queries, transpose(linear(keys, f64(in.at("general_scaled.W_a.weight"))), 1, 2)) /
          std::sqrt(static_cast<double>(keys.size(2)));
    }
    EXPECT_TRUE(agree(in.at(shown + ".grad_scores"),
                      numeric_gradient(loss_of_scores, reshape(scores, {B, T}))));
  }

  // The parameters' gradients equal one backward through the whole, uncut
  // graph: d2l's AdditiveAttention's own forward, and general_scaled's
  // score by hand from a leaf W_a.
  nn::AdditiveAttention additive(in.at("keys").size(2), in.at("queries").size(2),
                                 in.at("additive.W_q.weight").size(0));
  additive.load_state_dict({{"W_k.weight", in.at("additive.W_k.weight")},
                            {"W_q.weight", in.at("additive.W_q.weight")},
                            {"w_v.weight", in.at("additive.w_v.weight")}});
  Tensor W_a = in.at("general_scaled.W_a.weight").clone().requires_grad_();
  const Tensor& keys = in.at("keys");
  const Tensor general_scaled_weights = nn::masked_softmax(
      bmm(in.at("queries"), transpose(linear(keys, W_a), 1, 2)) / std::sqrt(double(keys.size(2))),
      valid_lens);
  const Tensor additive_loss =
      mse_loss(additive(in.at("queries"), keys, in.at("values"), valid_lens), in.at("answer"));
  const Tensor general_scaled_loss =
      mse_loss(bmm(general_scaled_weights, in.at("values")), in.at("answer"));
  (additive_loss + general_scaled_loss).backward();
  const std::pair<std::string, Tensor> parameters[] = {{"additive.W_k.weight", additive.W_k.weight},
                                                       {"additive.W_q.weight", additive.W_q.weight},
                                                       {"additive.w_v.weight", additive.w_v.weight},
                                                       {"general_scaled.W_a.weight", W_a}};
  for (const auto& [name, p] : parameters) {
    EXPECT_LT(max(abs(p.grad() - in.at("shown.grad." + name))).item(),
              1e-6 + 1e-4 * max(abs(p.grad())).item())
        << name;
  }
}

TEST_F(TrainingUi, NadarayaWatsonGradientsAgreeWithFiniteDifferences) {
  scene.set_task(Task::NadarayaWatson);
  for (int i = 0; i < 20; ++i) frame();
  const Inputs in = scene.inputs();
  const Tensor x = f64(in.at("x_train")), y = f64(in.at("y_train"));
  const int64_t n = x.size(0);
  const Tensor keep = logical_not(eq(unsqueeze(arange(n), 1), unsqueeze(arange(n), 0)));
  const auto loss_of_weights = [&](const Tensor& weights) {
    return mse_loss(matmul(weights, y), y).item();
  };
  const auto loss_of_scores = [&](const Tensor& scores) {
    return loss_of_weights(nn::masked_softmax_keep(scores, keep, nn::MaskedRows::Zero));
  };
  EXPECT_TRUE(agree(in.at("shown.grad_weights"),
                    numeric_gradient(loss_of_weights, in.at("shown.weights"))));
  // score(q, k) = -((q - k) w)^2 / 2, from the dumped w.
  const auto scores_of = [&](const Tensor& w) {
    const Tensor distance = (unsqueeze(x, 1) - unsqueeze(x, 0)) * w;
    return -0.5 * distance * distance;
  };
  const Tensor w = f64(in.at("w"));
  EXPECT_TRUE(agree(in.at("shown.grad_scores"), numeric_gradient(loss_of_scores, scores_of(w))));
  // dL/dw, through all three cuts, against the loss as a function of w.
  EXPECT_TRUE(
      agree(in.at("shown.grad.w"),
            numeric_gradient([&](const Tensor& v) { return loss_of_scores(scores_of(v)); }, w)));
  // The weights shown are the masked softmax of those scores: 0 on the diagonal.
  EXPECT_LT(max(abs(in.at("shown.weights").to(kFloat64) -
                    nn::masked_softmax_keep(scores_of(w), keep, nn::MaskedRows::Zero)))
                .item(),
            1e-6);
}

}  // namespace
}  // namespace ag::viewer
