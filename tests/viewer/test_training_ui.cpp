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
  EXPECT_TRUE(same(scene.inputs().at("dot.W_q.weight"), before.at("dot.W_q.weight")));
  scene.session().set_paused(false);
  frame();
  EXPECT_EQ(scene.session().steps(), 2);
  EXPECT_FALSE(same(scene.inputs().at("dot.W_q.weight"), before.at("dot.W_q.weight")));
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
  EXPECT_TRUE(same(scene.inputs().at("shown.dot.weights"), live[5].at("shown.dot.weights")));

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
  EXPECT_EQ(drawn_ids(), (std::vector<std::string>{
                             "training/additive_weights", "training/dot_weights",
                             "training/additive_grad_weights", "training/dot_grad_weights",
                             "training/additive_grad_scores", "training/dot_grad_scores"}));
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
  // At the defaults, dot product gets every example right; additive does not, yet.
  const std::vector<bool> dot = on_target(in, "dot"), additive = on_target(in, "additive");
  EXPECT_EQ(std::count(dot.begin(), dot.end(), false), 0);
  EXPECT_GT(std::count(additive.begin(), additive.end(), false), 0);
  EXPECT_LT(in.at("shown.dot.loss").item(), in.at("shown.additive.loss").item());
  // No gradient passes a masked score: dL/dscores is exactly 0 at the padding.
  const Tensor padding = logical_not(sequence_mask(in.at("valid_lens"), in.at("keys").size(1)));
  for (const char* model : {"shown.additive.grad_scores", "shown.dot.grad_scores"}) {
    EXPECT_EQ(sum(abs(where(padding, in.at(model), 0.0))).item(), 0.0) << model;
  }
  // At learning rate 0.1 dot product's softmax saturates: an example sits on a
  // wrong key with (almost) no gradient left on its scores. (Which model then
  // ends lower depends on rounding: it differs between -O2 and -O3 builds.)
  scene.session().set_learning_rate(0.1);
  scene.session().reset();
  for (int i = 0; i < 10; ++i) frame();
  in = scene.inputs();
  const std::vector<bool> right = on_target(in, "dot");
  const std::vector<double> grad_scores = in.at("shown.dot.grad_scores").to_vector();
  const int64_t keys = in.at("keys").size(1);
  int stuck = 0;
  for (size_t b = 0; b < right.size(); ++b) {
    double largest = 0;
    for (int64_t j = 0; j < keys; ++j) {
      largest = std::max(largest, std::abs(grad_scores[b * static_cast<size_t>(keys) + j]));
    }
    if (!right[b] && largest < 1e-6) ++stuck;
  }
  EXPECT_GE(stuck, 1);
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
    return loss_of_weights(masked_softmax(reshape(scores, {B, 1, T}), valid_lens));
  };
  for (const std::string model : {"additive", "dot"}) {
    SCOPED_TRACE(model);
    const std::string shown = "shown." + model;
    EXPECT_TRUE(agree(in.at(shown + ".grad_weights"),
                      numeric_gradient(loss_of_weights, in.at(shown + ".weights"))));
    // The scores themselves are not kept: recompute them, as the modules do.
    const Tensor queries = f64(in.at("queries")), keys = f64(in.at("keys"));
    Tensor scores;
    if (model == "additive") {
      scores = additive_scores(linear(queries, f64(in.at("additive.W_q.weight"))),
                               linear(keys, f64(in.at("additive.W_k.weight"))),
                               reshape(f64(in.at("additive.w_v.weight")), {-1}));
    } else {
      scores = bmm(linear(queries, f64(in.at("dot.W_q.weight"))),
                   transpose(linear(keys, f64(in.at("dot.W_k.weight"))), 1, 2)) /
               std::sqrt(static_cast<double>(queries.size(2)));
    }
    EXPECT_TRUE(agree(in.at(shown + ".grad_scores"),
                      numeric_gradient(loss_of_scores, reshape(scores, {B, T}))));
  }

  // The parameters' gradients equal one backward through the whole, uncut
  // graph of the modules' own forward.
  nn::AdditiveAttention additive(in.at("keys").size(2), in.at("queries").size(2),
                                 in.at("additive.W_q.weight").size(0));
  additive.load_state_dict({{"W_k.weight", in.at("additive.W_k.weight")},
                            {"W_q.weight", in.at("additive.W_q.weight")},
                            {"w_v.weight", in.at("additive.w_v.weight")}});
  nn::Linear W_q(in.at("queries").size(2), in.at("queries").size(2), /*bias=*/false);
  nn::Linear W_k(in.at("keys").size(2), in.at("keys").size(2), /*bias=*/false);
  W_q.load_state_dict({{"weight", in.at("dot.W_q.weight")}});
  W_k.load_state_dict({{"weight", in.at("dot.W_k.weight")}});
  nn::DotProductAttention dot;
  const Tensor additive_loss = mse_loss(
      additive(in.at("queries"), in.at("keys"), in.at("values"), valid_lens), in.at("answer"));
  const Tensor dot_loss = mse_loss(
      dot(W_q(in.at("queries")), W_k(in.at("keys")), in.at("values"), valid_lens), in.at("answer"));
  (additive_loss + dot_loss).backward();
  const std::pair<std::string, Tensor> parameters[] = {{"additive.W_k.weight", additive.W_k.weight},
                                                       {"additive.W_q.weight", additive.W_q.weight},
                                                       {"additive.w_v.weight", additive.w_v.weight},
                                                       {"dot.W_q.weight", W_q.weight},
                                                       {"dot.W_k.weight", W_k.weight}};
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
    return loss_of_weights(masked_softmax_keep(scores, keep, MaskedRows::Zero));
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
                    masked_softmax_keep(scores_of(w), keep, MaskedRows::Zero)))
                .item(),
            1e-6);
}

}  // namespace
}  // namespace ag::viewer
