// The pronounce scene on screen, checked against the library and the
// program: ask mode shows every shipped model (kShippedG2pModels, loaded here
// from the source tree; the page preloads the same files) side by side, each
// one's answer is what attograd-translate --load of its file says for the
// same word, and every cell of each alignment drawn has the colour of the
// weight translate() gives. In train mode the frames train (as the page
// always does), and --stats shows the loss falling.
#include <gtest/gtest.h>

#include "attograd/translate/ensemble.h"
#include "attograd/translate/model.h"
#include "attograd/translate/predict.h"
#include "attograd/translate/pronouncer.h"
#include "dumped_source.h"
#include "screen_check.h"
#include "test_util.h"

namespace ag::viewer_test {
namespace {

namespace tr = ag::translate;

// The "output" field of attograd-translate's --json line.
std::string json_output(const std::string& json) {
  const std::string key = "\"output\":\"";
  const size_t begin = json.find(key);
  AG_CHECK(begin != std::string::npos, "json_output", "no output in " + json);
  return json.substr(begin + key.size(), json.find('"', begin + key.size()) - begin - key.size());
}

TEST(ScreenPronounce, EveryShippedModelAnswersAsTheProgramWithItsAlignment) {
  ag::testing::ScratchDir dir("screen_pronounce");  // the program's answers
  for (const std::string word : {"knife", "xylophone"}) {
    SCOPED_TRACE(word);
    const SceneRun run =
        run_scene("pronounce", 6,
                  {"--set", "pronounce.word=" + word, "--set", "pronounce.beam=3", "--stats"});
    ASSERT_EQ(run.exit_code, 0);
    std::string names;
    for (const char* file : tr::kShippedG2pModels) {
      const std::string path = ag::testing::source_path(file);
      tr::Translator model = tr::load_translator(path);
      const std::string name =
          model.config.model == "transformer" ? "transformer" : model.config.attention;
      names += (names.empty() ? "" : ",") + name;
      const tr::Translation expected = tr::translate(model, {word})[0];
      // The answer, as --stats reports it, is the program's for the file.
      EXPECT_EQ(expected.output,
                json_output(program_json(path, word, dir / (name + "-" + word + ".json"))));
      EXPECT_NE(run.output.find("pronounce_output_" + name + " " + expected.output + "\n"),
                std::string::npos)
          << run.output;
      // Its confidence, as the scene shows it, is the Pronouncer's.
      const std::map<std::string, double> stats = read_stats(run.output);
      ASSERT_EQ(stats.count("pronounce_confidence_" + name), 1u) << run.output;
      EXPECT_NEAR(stats.at("pronounce_confidence_" + name),
                  tr::Pronouncer(path).pronounce({word})[0].variants[0].confidence, 1e-5);
      // The map: phonemes and <eos> down, the letters and <eos> across.
      const LayoutEntry& map = find_map(run, "pronounce/" + name + "/alignment");
      EXPECT_EQ(map.rows, expected.alignment.size(0));
      EXPECT_EQ(map.cols, static_cast<int64_t>(word.size()) + 1);
      EXPECT_TRUE(cells_match(run, "pronounce/" + name + "/alignment", expected.alignment));
      // The tensors the viewer fed the model: the word's letters and <eos>.
      ASSERT_EQ(run.inputs.count(name + ".src_valid_len"), 1u);
      EXPECT_EQ(run.inputs.at(name + ".src_valid_len").item(),
                static_cast<double>(word.size()) + 1);
    }
    EXPECT_NE(run.output.find("pronounce_models " + names + "\n"), std::string::npos) << run.output;
  }
}

// An ensemble column (the models knob's a+b+c: kShippedG2pEnsemble's three
// files) answers as attograd-translate --load a --load b --load c, and its
// map's cells have the colours of the ensemble's alignment, the members'
// mean (docs/g2p.md's screenshot, on adage). Desktop only: the page
// preloads just the two models its scene shows (viz/viewer/CMakeLists.txt).
TEST(ScreenPronounce, AnEnsembleColumnAnswersAsTheProgram) {
#ifdef ATTOGRAD_WEB_SCREEN
  GTEST_SKIP() << "the page preloads only kShippedG2pModels, not the ensemble's other files";
#endif
  ag::testing::ScratchDir dir("screen_pronounce_ensemble");
  std::vector<std::string> paths;
  std::string ensemble;
  for (const char* file : tr::kShippedG2pEnsemble) {
    paths.push_back(ag::testing::source_path(file));
    ensemble += (ensemble.empty() ? "" : "+") + paths.back();
  }
  const std::string word = "adage";
  const SceneRun run = run_scene("pronounce", 6,
                                 {"--set", "pronounce.models=" + ensemble + "," + paths[0], "--set",
                                  "pronounce.word=" + word, "--stats"});
  ASSERT_EQ(run.exit_code, 0);
  tr::Translator model = tr::load_ensemble(paths);
  const tr::Translation expected = tr::translate(model, {word})[0];
  EXPECT_EQ(expected.output, "AE D IH JH");
  EXPECT_EQ(expected.output, json_output(program_json(ensemble, word, dir / "ensemble.json")));
  EXPECT_NE(run.output.find("pronounce_output_ensemble " + expected.output + "\n"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("pronounce_models ensemble,additive\n"), std::string::npos)
      << run.output;
  const LayoutEntry& map = find_map(run, "pronounce/ensemble/alignment");
  EXPECT_EQ(map.rows, expected.alignment.size(0));
  EXPECT_EQ(map.cols, static_cast<int64_t>(word.size()) + 1);
  EXPECT_TRUE(cells_match(run, "pronounce/ensemble/alignment", expected.alignment));
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
                  {"--set", "pronounce.models=/nonexistent/g2p.npz", "--set",
                   "pronounce.dict=/nonexistent/cmudict.dict", "--stats"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.output.find("pronounce_output (none)"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace ag::viewer_test
