// The translate scene on screen, checked against the program: the viewer
// trains (on a worker, or in the page's frames), saves both models before
// its last frame (translate.save_prefix), and every cell of each model's
// alignment heatmap must have the colour of the weight that
//   attograd-translate --load SAVED.npz --predict TEXT --json
// prints for the same model state and input: for a held-out input and for
// typed text. The page (web_screen_translate) runs the same checks on the .npz
// files it wrote into its own file system.
#include <gtest/gtest.h>

#include <sstream>

#include "attograd/translate/model.h"
#include "dumped_source.h"
#include "screen_check.h"
#include "test_util.h"

namespace ag::viewer_test {
namespace {

const char* const kModels[2] = {"additive", "dot"};

// What --json printed for one text: its weights [output tokens, source tokens].
struct Printed {
  Tensor weights;
  int64_t rows = 0, cols = 0;
};

// Parses the "weights" array of attograd-translate's one-line JSON.
Printed parse_weights(const std::string& json) {
  const std::string key = "\"weights\":[";
  const size_t at = json.find(key);
  AG_CHECK(at != std::string::npos, "parse_weights", "no weights in: " + json);
  std::vector<double> values;
  Printed p;
  size_t i = at + key.size();
  int64_t in_row = 0;
  while (i < json.size() && json[i] != ']') {
    if (json[i] == '[') {
      ++p.rows;
      in_row = 0;
      ++i;
    } else if (json[i] == ',' || json[i] == ' ') {
      ++i;
    } else if (json[i] == ']') {
      ++i;
    } else {
      size_t used = 0;
      values.push_back(std::stod(json.substr(i), &used));
      i += used;
      if (++in_row > p.cols) p.cols = in_row;
      if (i < json.size() && json[i] == ']') {
        ++i;  // the row's end
      }
    }
  }
  AG_CHECK(p.rows > 0 && static_cast<int64_t>(values.size()) == p.rows * p.cols, "parse_weights",
           "ragged weights in: " + json);
  p.weights = tensor(values, {p.rows, p.cols});
  return p;
}

// attograd-translate --load MODEL --predict TEXT --json, its weights.
Printed program_weights(const std::string& model, const std::string& text) {
  return parse_weights(program_json(model, text));
}

// Both models' maps in `run` against the program's weights for `text`.
void expect_cells_are_the_programs(const SceneRun& run, const std::string& text) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    const std::string id = std::string("translate/") + model + "_alignment";
    const Printed p = program_weights(run.dir + "/saved-" + model + ".npz", text);
    const LayoutEntry& map = find_map(run, id);
    EXPECT_EQ(map.rows, p.rows);
    EXPECT_EQ(map.cols, static_cast<int64_t>(text.size()) + 1);  // the characters and <eos>
    EXPECT_TRUE(cells_match(run, id, p.weights));
  }
}

const std::vector<std::string> kSaved = {"saved-additive.npz", "saved-dot.npz"};

TEST(ScreenTranslate, HeldOutAlignmentCellsAreTheProgramsWeightsForTheSavedModels) {
  const SceneRun run =
      run_scene_writing("translate", 30,
                        {"--set", "translate.task=reverse", "--set", "translate.example=2", "--set",
                         "translate.save_prefix={out}/saved"},
                        kSaved);
  ASSERT_EQ(run.exit_code, 0);
  ASSERT_EQ(run.inputs.count("shown.example"), 1u) << "the viewer did not draw the translate scene";
  ASSERT_EQ(run.inputs.at("shown.example").item(), 2);
  // The shown input: held-out example 2 of the scene's data.
  expect_cells_are_the_programs(run, dumped_source(run, run.dir + "/saved-additive.npz", 2));
}

TEST(ScreenTranslate, TypedTextAlignmentCellsAreTheProgramsWeights) {
  const SceneRun run = run_scene_writing(
      "translate", 30,
      {"--set", "translate.text=14.7.1989", "--set", "translate.save_prefix={out}/saved"}, kSaved);
  ASSERT_EQ(run.exit_code, 0);
  ASSERT_EQ(run.inputs.at("shown.example").item(), -1);  // the typed text
  expect_cells_are_the_programs(run, "14.7.1989");
}

// Trained by the frames (worker=no, as the page always is), so that the
// step count is the frames': --stats shows the loss falling, the held-out
// accuracy as a fraction and the frame times.
TEST(ScreenTranslate, StatsShowTheLossFallingAndTheFrameTimes) {
  const SceneRun run = run_scene("translate", 21,
                                 {"--set", "translate.worker=no", "--set", "translate.task=reverse",
                                  "--set", "translate.steps_per_frame=2", "--stats"});
  ASSERT_EQ(run.exit_code, 0);
  const std::map<std::string, double> stats = read_stats(run.output);
  for (const char* key :
       {"loss_first", "loss_last", "accuracy", "steps", "frame_ms_median", "frame_ms_p95"}) {
    ASSERT_EQ(stats.count(key), 1u) << key << " missing in:\n" << run.output;
  }
  EXPECT_EQ(stats.at("steps"), 40);  // 2 a frame; the last frame waits (before_last_frame)
  EXPECT_LT(stats.at("loss_last"), 0.9 * stats.at("loss_first")) << run.output;
  EXPECT_GE(stats.at("accuracy"), 0.0);
  EXPECT_LE(stats.at("accuracy"), 1.0);
}

// The resident set after 2,000 frames with the worker training is within
// 2 MiB of the one after the first 100: the history (300 steps of both
// models' records) is allocated once, the curves are bounded.
TEST(ScreenTranslate, NoMemoryGrowthWhileTraining) {
  if (!kMemoryIsMeasurable) GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory";
  const SceneRun run = run_checking_memory("translate", 2000);
  ASSERT_EQ(run.exit_code, 0);
}

}  // namespace
}  // namespace ag::viewer_test
