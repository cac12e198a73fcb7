// The translate scene under Dear ImGui's null backend (no display): it
// builds and trains both models; its knobs apply; a bad knob value is an
// ag::Error naming what is accepted; the outputs and alignments it records
// are the library's greedy prediction for the same model state.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <sstream>

#include "null_backend.h"
#include "scene_translate.h"
#include "test_util.h"

namespace ag::viewer {
namespace {

namespace tr = ag::translate;
using ag::testing::throws_error;

class TranslateUi : public NullBackend {
 protected:
  void frame() {
    NullBackend::frame([&] { scene.draw(); });
  }
  void set(const std::string& knob, const std::string& value) { set_knob(scene, knob, value); }

  TranslateScene scene{Stepping::InFrame};
};

TEST_F(TranslateUi, KnobsApplyAndTheRecordIsTheLibrarysPrediction) {
  set("task", "reverse");
  EXPECT_EQ(scene.trainer().task(), "reverse");
  set("steps_per_frame", "3");
  set("example", "5");
  EXPECT_EQ(scene.example(), 5);
  frame();
  frame();
  EXPECT_EQ(scene.session().steps(), 6);
  set("paused", "yes");
  frame();
  EXPECT_EQ(scene.session().steps(), 6);

  // The shown record against predict_seq2seq of the models as they are now.
  const auto inputs = scene.inputs();
  const tr::Dataset& data = scene.trainer().data_set();
  const int64_t tgt = data.tgt_steps(), src = data.src_steps();
  for (size_t m = 0; m < 2; ++m) {
    const std::string name = scene.trainer().model(m);
    const auto predictions = tr::predict_seq2seq(*scene.trainer().translator(m).model,
                                                 inputs.at("src"), inputs.at("src_valid_len"), tgt);
    const std::vector<double> output = inputs.at("shown." + name + ".output").to_vector();
    const std::vector<double> rows = inputs.at("shown." + name + ".rows").to_vector();
    const std::vector<double> alignment = inputs.at("shown." + name + ".alignment").to_vector();
    for (int64_t i = 0; i < TranslateTrainer::kShown; ++i) {
      const tr::Prediction& p = predictions[static_cast<size_t>(i)];
      ASSERT_EQ(rows[static_cast<size_t>(i)], static_cast<double>(p.alignment.shape()[0]));
      for (size_t t = 0; t < p.output.size(); ++t) {
        EXPECT_EQ(output[static_cast<size_t>(i * tgt) + t], static_cast<double>(p.output[t]));
      }
      const std::vector<double> weights = p.alignment.to_vector();
      const int64_t cols = p.alignment.shape()[1];
      for (int64_t r = 0; r < p.alignment.shape()[0]; ++r) {
        double sum = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const double shown = alignment[static_cast<size_t>((i * tgt + r) * src + c)];
          EXPECT_NEAR(shown, weights[static_cast<size_t>(r * cols + c)], 1e-6);  // float32
          sum += shown;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
  }
}

TEST_F(TranslateUi, TypedTextIsTranslatedAndBadTextIsAMessage) {
  // 1. A date the models can read: both records hold its translation, as
  //    the library's translate() gives it for the models as they are.
  scene.set_text("14.7.1989");
  EXPECT_TRUE(scene.shows_typed_text());
  EXPECT_EQ(scene.typed_error(), "");
  frame();
  scene.session().set_paused(true);
  frame();
  const auto inputs = scene.inputs();
  EXPECT_EQ(inputs.at("shown.example").item(), -1);
  EXPECT_EQ(inputs.at("shown.typed.length").item(), 10);  // 9 characters and <eos>
  for (size_t m = 0; m < 2; ++m) {
    const std::string name = scene.trainer().model(m);
    const tr::Translation t = tr::translate(scene.trainer().translator(m), {"14.7.1989"})[0];
    ASSERT_EQ(inputs.at("shown." + name + ".typed.rows").item(),
              static_cast<double>(t.output_tokens.size()));
    const Tensor shown = inputs.at("shown." + name + ".typed.alignment");
    const std::vector<double> expected = t.alignment.to_vector();
    const int64_t rows = t.alignment.size(0), cols = t.alignment.size(1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        EXPECT_NEAR(shown.to_vector()[static_cast<size_t>(r * shown.size(1) + c)],
                    expected[static_cast<size_t>(r * cols + c)], 1e-6);
      }
    }
  }
  // 2. Text the models cannot take: a message, frames go on, the maps keep
  //    the last good text.
  for (const std::string& bad : {std::string("14.7.1989!"), std::string(""), std::string(200, '1'),
                                 std::string("\xff\xfe")}) {
    scene.set_text(bad);
    EXPECT_NE(scene.typed_error(), "") << bad;
    frame();
    EXPECT_EQ(scene.inputs().at("shown.typed.length").item(), 10) << bad;
  }
  EXPECT_NE(scene.typed_error().find("translate: unknown character byte 255"), std::string::npos)
      << scene.typed_error();
  // 3. Back to a held-out input.
  scene.set_example(3);
  EXPECT_FALSE(scene.shows_typed_text());
  frame();
}

TEST_F(TranslateUi, BadKnobValuesAreErrorsNamingWhatIsAccepted) {
  auto scenes = make_scenes();
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "translate.task=french"); },
                           {"french", "dates | reverse | sort"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "translate.example=99"); }, {"99"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "translate.lr=-1"); }, {"-1"}));
  // The scoring functions: two of the table's, not one twice.
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "translate.scoring=additive,cosine"); },
                           {"cosine", "additive, dot, general, multihead"}));
  EXPECT_TRUE(
      throws_error([&] { apply_setting(scenes, "translate.scoring=dot,dot"); }, {"both 'dot'"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "translate.scoring=dot"); },
                           {"two scoring functions", "'dot'"}));
  EXPECT_TRUE(
      throws_error([&] { apply_setting(scenes, "pronounce.scoring=dot,cosine"); }, {"cosine"}));
}

TEST_F(TranslateUi, AnyTwoScoringFunctionsOfTheTableTrainSideBySide) {
  // The combos' choice, as the knob makes it: new models, named after their
  // scoring functions in the records, the plot and the saved files.
  set("scoring", "general,multihead");
  set("steps_per_frame", "2");
  EXPECT_EQ(scene.trainer().model(0), "general");
  EXPECT_EQ(scene.trainer().model(1), "multihead");
  frame();
  frame();
  EXPECT_EQ(scene.session().steps(), 4);
  const auto inputs = scene.inputs();
  for (size_t m = 0; m < 2; ++m) {
    const std::string name = scene.trainer().model(m);
    EXPECT_EQ(scene.trainer().translator(m).config.attention, name);
    ASSERT_EQ(inputs.count("shown." + name + ".loss"), 1u) << name;
    EXPECT_TRUE(std::isfinite(inputs.at("shown." + name + ".loss").item()));
  }
  std::ostringstream out;
  scene.print_stats(out);
  EXPECT_NE(out.str().find("accuracy "), std::string::npos) << out.str();
}

TEST_F(TranslateUi, StatsPrintTheAdditiveModelsHeldOutAccuracy) {
  frame();
  std::ostringstream out;
  scene.print_stats(out);
  EXPECT_NE(out.str().find("loss_first "), std::string::npos);
  EXPECT_NE(out.str().find("accuracy "), std::string::npos);
  EXPECT_TRUE(std::isfinite(scene.session().last_loss()));
  EXPECT_LT(scene.session().last_loss(), scene.session().first_loss() * 1.5);
}

}  // namespace
}  // namespace ag::viewer
