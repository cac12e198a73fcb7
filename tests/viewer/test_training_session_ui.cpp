// The training session (training_session.h) with a trainer that is not one
// of the training scene's tasks: the piece a new training scene reuses. Two
// "models" with a loss each and a held-out accuracy, a map per step; the
// session keeps the history, the curves and the statistics, and draws the
// plot with a second axis for the accuracy.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <sstream>

#include "null_backend.h"
#include "plot.h"
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
    return {{"a.loss", "a", kAdditiveColor},
            {"b.loss", "b", kDotColor},
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
