// The training session (training_session.h) with a trainer that is not one
// of the training scene's tasks: the piece a new training scene reuses. Two
// "models" with a loss each and a held-out accuracy, a map per step; the
// session keeps the history, the curves and the statistics, and draws the
// plot with a second axis for the accuracy.
#include <gtest/gtest.h>
#include <imgui.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include "null_backend.h"
#include "plot.h"
#include "scoring_choice.h"
#include "test_util.h"
#include "training_session.h"

namespace ag::viewer {
namespace {

// Nothing to learn: at step s model a's loss is 1 / (s + 1), model b's is
// 2 / (s + 1), the accuracy is min(s / 10, 1), and the map [2, 3] holds s
// plus the seed's first random number (so a reset is seen to reseed).
class CountingTrainer : public Trainer {
 public:
  const char* title() const override { return "counting"; }
  std::vector<RecordField> fields() const override {
    return {{"a.loss", {1}}, {"b.loss", {1}}, {"accuracy", {1}}, {"map", {2, 3}}};
  }
  std::vector<Series> series() const override {
    return {{"a.loss", "a", kScoringColors[0]},
            {"b.loss", "b", kScoringColors[1]},
            {"accuracy", "held-out accuracy", kFitColor, Axis::Fraction}};
  }
  double default_learning_rate() const override { return 0.5; }
  std::map<std::string, Tensor> start(double lr) override {
    lr_ = lr;
    step_ = 0;
    offset_ = rand({1}).item();
    return record();
  }
  std::map<std::string, Tensor> step() override {
    ++step_;
    return record();
  }
  void set_learning_rate(double lr) override { lr_ = lr; }
  std::map<std::string, Tensor> data() const override { return {{"offset", full({1}, offset_)}}; }
  double lr_ = 0;
  bool diverge = false;  // from the next step on, a's loss is NaN

 private:
  std::map<std::string, Tensor> record() const {
    const double s = static_cast<double>(step_);
    return {{"a.loss", full({1}, diverge ? NAN : 1 / (s + 1))},
            {"b.loss", full({1}, 2 / (s + 1))},
            {"accuracy", full({1}, std::min(s / 10, 1.0))},
            {"map", full({2, 3}, s + offset_)}};
  }
  int64_t step_ = 0;
  double offset_ = 0;
};

std::map<std::string, double> stats_of(const TrainingSession& session) {
  std::ostringstream out;
  session.print_stats(out);
  std::istringstream lines(out.str());
  std::map<std::string, double> stats;
  std::string key;
  double value = 0;
  while (lines >> key >> value) stats[key] = value;
  return stats;
}

class SessionUi : public NullBackend {
 protected:
  void frame() {
    NullBackend::frame([&] {
      session.frame();
      session.draw_controls();
      session.draw_curves(ImVec2(500, 300));
    });
  }
  CountingTrainer trainer;
  TrainingSession session{trainer, /*history=*/8};
};

TEST_F(SessionUi, StepsHistoryAndStatisticsFollowTheTrainer) {
  EXPECT_DOUBLE_EQ(trainer.lr_, 0.5);  // started at the trainer's default
  session.set_steps_per_frame(3);
  for (int i = 0; i < 4; ++i) frame();
  ASSERT_EQ(session.steps(), 12);
  EXPECT_EQ(session.oldest_step(), 12 - 8 + 1);  // a ring of 8
  const double offset = trainer.data().at("offset").item();
  session.show_step(6);
  EXPECT_TRUE(session.paused());
  EXPECT_FLOAT_EQ(static_cast<float>(session.shown_record().at("map").to_vector()[5]),
                  static_cast<float>(6 + offset));
  const std::map<std::string, double> stats = stats_of(session);
  EXPECT_DOUBLE_EQ(stats.at("loss_first"), 1.5);       // mean of a and b at step 0
  EXPECT_NEAR(stats.at("loss_last"), 1.5 / 13, 1e-5);  // printed to 6 digits
  // Each loss series' own, under its label; none for the accuracy.
  EXPECT_DOUBLE_EQ(stats.at("loss_first_a"), 1.0);
  EXPECT_NEAR(stats.at("loss_last_a"), 1.0 / 13, 1e-6);
  EXPECT_DOUBLE_EQ(stats.at("loss_first_b"), 2.0);
  EXPECT_NEAR(stats.at("loss_last_b"), 2.0 / 13, 1e-6);
  EXPECT_EQ(stats.size(), 7u);
  EXPECT_DOUBLE_EQ(stats.at("accuracy"), 1.0);
  session.set_learning_rate(0.1);
  EXPECT_DOUBLE_EQ(trainer.lr_, 0.1);
  session.reset();
  EXPECT_EQ(session.steps(), 0);
  EXPECT_EQ(trainer.data().at("offset").item(), offset);  // the same seed
  session.set_seed(5);
  EXPECT_NE(trainer.data().at("offset").item(), offset);
}

TEST_F(SessionUi, ALossThatIsNotFinitePausesWithAMessage) {
  frame();
  trainer.diverge = true;
  frame();
  EXPECT_TRUE(session.paused());
  EXPECT_NE(session.error().find("counting: the a curve is no longer finite"), std::string::npos)
      << session.error();
  EXPECT_EQ(session.steps(), 1);  // the bad step is not recorded
}

// With a worker: it steps only while frames come, the controls are commands
// it runs between steps, and what the frame reads is always a whole record.
TEST_F(SessionUi, AWorkerStepsWhileFramesComeAndRunsTheControlsAsCommands) {
  CountingTrainer counting;
  TrainingSession background{counting, /*history=*/8, Stepping::Background};
#if ATTOGRAD_HAS_THREADS
  ASSERT_TRUE(background.background());
#endif
  EXPECT_EQ(background.steps(), 0);
  // 1. No frames yet: no steps.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(background.steps(), 0);
  // 2. Frames: the worker steps; every record it publishes is whole.
  const double offset = counting.data().at("offset").item();
  for (int i = 0; i < 2000 && background.steps() < 30; ++i) {
    background.frame();
    const auto record = background.shown_record();
    const double step = record.at("map").to_vector()[0] - offset;
    EXPECT_NEAR(record.at("b.loss").item(), 2 / (step + 1), 1e-6);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(background.steps(), 30);
  // 3. Pause: after the step under way, no more.
  background.set_paused(true);
  background.sync();
  const int64_t steps = background.steps();
  background.frame();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(background.steps(), steps);
  // 4. Step, the learning rate and reset are commands, in order.
  background.single_step();
  background.sync();
  EXPECT_EQ(background.steps(), steps + 1);
  background.set_learning_rate(0.25);
  background.sync();
  EXPECT_DOUBLE_EQ(counting.lr_, 0.25);
  background.reset();
  background.sync();
  EXPECT_EQ(background.steps(), 0);
  EXPECT_EQ(background.oldest_step(), 0);
  EXPECT_EQ(counting.data().at("offset").item(), offset);
  // 5. call() runs on the trainer and returns when it has; a diverging step
  //    pauses with the message.
  background.call([](Trainer& trainer) { static_cast<CountingTrainer&>(trainer).diverge = true; });
  background.single_step();
  background.sync();
  EXPECT_TRUE(background.paused());
  EXPECT_NE(background.error().find("no longer finite"), std::string::npos);
  EXPECT_EQ(background.steps(), 0);
}

TEST_F(SessionUi, AFrameBudgetStopsInFrameSteppingEarly) {
  session.set_steps_per_frame(20);
  session.set_frame_budget(1e-9);  // spent by the first step
  frame();
  EXPECT_EQ(session.steps(), 1);
  session.set_frame_budget(0);
  frame();
  EXPECT_EQ(session.steps(), 21);
}

TEST(StepHistory, RefusesARecordOfOtherShapes) {
  StepHistory history({{"map", {2, 3}}}, 4);
  EXPECT_TRUE(testing::throws_error(
      [&] {
        history.push({{"map", zeros({3, 2})}});
      },
      {"StepHistory::push", "[3, 2]", "[2, 3]"}));
  EXPECT_TRUE(testing::throws_error([&] { history.push({}); }, {"no map"}));
  EXPECT_TRUE(testing::throws_error([&] { history.at(0); }, {"step 0 is not held"}));
}

TEST(StepCurve, KeepsAtMostItsPointsByMergingNeighbours) {
  StepCurve curve;
  for (int s = 0; s < 1000; ++s) curve.add(s);
  EXPECT_LE(curve.points().size(), StepCurve::kMaxPoints);
  EXPECT_EQ(curve.steps_per_point(), 4);
  // Each point is the mean of the steps it stands for: 0..3, 4..7, ...
  EXPECT_FLOAT_EQ(curve.points()[0], 1.5f);
  EXPECT_FLOAT_EQ(curve.points()[1], 5.5f);
}

}  // namespace
}  // namespace ag::viewer
