// The pronounce scene on screen, checked against the library: every cell of
// the alignment the viewer draws for `knife` has the colour of the weight
// translate() gives for the shipped model (translate/models/g2p-cmudict.npz,
// loaded here from the source tree; the page serves the same file), and the
// answer it reports is the library's. In train mode the frames train (as
// the page always does), and --stats shows the loss falling.
#include <gtest/gtest.h>

#include "attograd/translate/predict.h"
#include "screen_check.h"
#include "test_util.h"

namespace ag::viewer_test {
namespace {

namespace tr = ag::translate;

TEST(ScreenPronounce, AlignmentCellsAndAnswerAreTheShippedModels) {
  const SceneRun run = run_scene(
      "pronounce", 6, {"--set", "pronounce.word=knife", "--set", "pronounce.beam=3", "--stats"});
  ASSERT_EQ(run.exit_code, 0);
  tr::Translator model =
      tr::load_translator(ag::testing::source_path("translate/models/g2p-cmudict.npz"));
  const tr::Translation expected = tr::translate(model, {"knife"})[0];
  // The answer, as --stats reports the shown word's.
  EXPECT_NE(run.output.find("pronounce_output " + expected.output + "\n"), std::string::npos)
      << run.output;
  EXPECT_EQ(expected.output, "N AY F");
  // The map: phonemes and <eos> down, k n i f e <eos> across.
  const LayoutEntry& map = find_map(run, "pronounce/alignment");
  EXPECT_EQ(map.rows, 4);
  EXPECT_EQ(map.cols, 6);
  EXPECT_TRUE(cells_match(run, "pronounce/alignment", expected.alignment));
  // The tensors the viewer fed the model: the word's letters and <eos>.
  ASSERT_EQ(run.inputs.count("src_valid_len"), 1u);
  EXPECT_EQ(run.inputs.at("src_valid_len").item(), 6);
}

TEST(ScreenPronounce, TrainModeLossFallsAndStatsReportTheDevWer) {
  const SceneRun run =
      run_scene("pronounce", 16,
                {"--set", "pronounce.mode=train", "--set", "pronounce.worker=no", "--set",
                 "pronounce.steps_per_frame=3", "--set", "pronounce.word=box", "--stats"});
  ASSERT_EQ(run.exit_code, 0);
  const std::map<std::string, double> stats = read_stats(run.output);
  for (const char* key : {"loss_first", "loss_last", "dev_wer_first", "dev_wer_last", "steps"}) {
    ASSERT_EQ(stats.count(key), 1u) << key << " missing in:\n" << run.output;
  }
  EXPECT_EQ(stats.at("steps"), 45);  // 3 a frame; the last frame waits (before_last_frame)
  EXPECT_LT(stats.at("loss_last"), 0.8 * stats.at("loss_first")) << run.output;
  EXPECT_GE(stats.at("dev_wer_last"), 0.0);
  EXPECT_LE(stats.at("dev_wer_last"), 1.0);
  EXPECT_NE(run.output.find("pronounce_output "), std::string::npos);
  // Both models' maps: b o x <eos> across.
  EXPECT_EQ(find_map(run, "pronounce/additive_alignment").cols, 4);
  EXPECT_EQ(find_map(run, "pronounce/dot_alignment").cols, 4);
}

TEST(ScreenPronounce, BadWordAndMissingModelAreMessagesNotCrashes) {
  SceneRun run = run_scene("pronounce", 4, {"--set", "pronounce.word=kn1fe!", "--stats"});
  EXPECT_EQ(run.exit_code, 0);
  run = run_scene("pronounce", 4,
                  {"--set", "pronounce.model=/nonexistent/g2p.npz", "--set",
                   "pronounce.dict=/nonexistent/cmudict.dict", "--stats"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.output.find("pronounce_output (none)"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace ag::viewer_test
