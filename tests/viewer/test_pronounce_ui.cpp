// The pronounce scene under Dear ImGui's null backend (no display): ask mode
// answers as the library's Pronouncer (attograd-translate --load) does for
// each shipped model, its beam candidates and their alignments are the
// library's, bad words and missing
// files are messages, never crashes; train mode trains both models in the
// frames and answers the typed word as the library does for them.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <sstream>

#include "attograd/translate/ensemble.h"
#include "null_backend.h"
#include "scene_pronounce.h"
#include "test_util.h"

namespace ag::viewer {
namespace {

namespace tr = ag::translate;

class PronounceUi : public NullBackend {
 protected:
  void frame() {
    NullBackend::frame([&] { scene.draw(); });
  }
  void set(const std::string& knob, const std::string& value) { set_knob(scene, knob, value); }
  const DrawnHeatmap* drawn(const std::string& id) const {
    for (const DrawnHeatmap& map : drawn_heatmaps()) {
      if (map.id == id) return &map;
    }
    return nullptr;
  }
  std::string stats() const {
    std::ostringstream out;
    scene.print_stats(out);
    return out.str();
  }

  PronounceScene scene{Stepping::InFrame};
};

TEST_F(PronounceUi, AskShowsEveryShippedModelAnsweringAsTheLibrary) {
  set("word", "knife");
  set("beam", "3");
  frame();
  ASSERT_EQ(scene.load_error(), "");
  ASSERT_EQ(scene.dict_error(), "");
  ASSERT_EQ(scene.models().size(), std::size(tr::kShippedG2pModels));
  std::string names;
  for (size_t m = 0; m < scene.models().size(); ++m) {
    const AskedModel& model = scene.models()[m];
    SCOPED_TRACE(model.name);
    ASSERT_EQ(model.load_error, "");
    ASSERT_NE(scene.answer(m), nullptr);
    names += (names.empty() ? "" : ",") + model.name;
    // The greedy answer: the program's (translate()) and a Pronouncer's of
    // the same file.
    const tr::Translation greedy = tr::translate(scene.pronouncer(m).translator(), {"knife"})[0];
    EXPECT_EQ(scene.answer(m)->phonemes, greedy.output);
    tr::Pronouncer own(model.path);
    EXPECT_EQ(own.pronounce({"knife"})[0].variants[0].phonemes, greedy.output);
    EXPECT_NEAR(scene.answer(m)->confidence, std::exp(greedy.log_prob()), 1e-12);
    EXPECT_NE(stats().find("pronounce_output_" + model.name + " " + greedy.output + "\n"),
              std::string::npos)
        << stats();
    // The map: a row per phoneme and <eos>, a column per letter and <eos>,
    // the greedy answer's weights.
    const std::string id = "pronounce/" + model.name + "/alignment";
    const DrawnHeatmap* map = drawn(id);
    ASSERT_NE(map, nullptr);
    EXPECT_EQ(map->rows, greedy.alignment.size(0));
    EXPECT_EQ(map->cols, 6);
    const std::vector<double> shown = scene.inputs().at(model.name + ".alignment").to_vector();
    const std::vector<double> expected = greedy.alignment.to_vector();
    ASSERT_EQ(shown.size(), expected.size());
    for (size_t i = 0; i < shown.size(); ++i) EXPECT_NEAR(shown[i], expected[i], 1e-12);
    // The beam's 3, most probable first, with posteriors over the 3, as
    // --nbest 3 gives them; a clicked candidate's alignment is drawn in
    // place of the greedy one.
    const tr::Pronunciation nbest = own.pronounce({"knife"}, {.nbest = 3})[0];
    ASSERT_EQ(scene.beam(m).size(), nbest.variants.size());
    for (size_t i = 0; i < nbest.variants.size(); ++i) {
      EXPECT_EQ(scene.beam(m)[i].phonemes, nbest.variants[i].phonemes);
      EXPECT_NEAR(scene.beam(m)[i].posterior, nbest.variants[i].posterior, 1e-12);
      EXPECT_NEAR(scene.beam(m)[i].score, nbest.variants[i].score, 1e-12);
    }
    const size_t last = nbest.variants.size() - 1;
    scene.set_shown_candidate(m, static_cast<int>(last));
    frame();
    EXPECT_EQ(drawn(id)->rows, nbest.variants[last].alignment.size(0));
  }
  EXPECT_EQ(scene.answer(0)->phonemes, "N AY F");  // the default model
  EXPECT_NE(stats().find("pronounce_models " + names + "\n"), std::string::npos) << stats();
  EXPECT_NE(stats().find("pronounce_output N AY F\n"), std::string::npos) << stats();
  set("beam", "1");
  frame();
  for (size_t m = 0; m < scene.models().size(); ++m) {
    EXPECT_TRUE(scene.beam(m).empty());
    EXPECT_EQ(drawn("pronounce/" + scene.models()[m].name + "/alignment")->rows,
              scene.answer(m)->alignment.size(0));
  }
}

TEST_F(PronounceUi, AModelThatDoesNotLoadIsItsColumnsMessage) {
  set("models", ag::testing::source_path(tr::kShippedG2pModels[0]) + ",/nonexistent/g2p.npz");
  set("word", "box");
  frame();
  ASSERT_EQ(scene.models().size(), 2u);
  EXPECT_EQ(scene.load_error(), "");  // one model answers
  EXPECT_NE(scene.answer(0), nullptr);
  EXPECT_EQ(scene.answer(1), nullptr);
  EXPECT_NE(scene.models()[1].load_error.find("/nonexistent/g2p.npz"), std::string::npos);
  EXPECT_NE(stats().find("pronounce_output_g2p (none)\n"), std::string::npos) << stats();
  // Two files of one scoring function are told apart.
  const std::string shipped = ag::testing::source_path(tr::kShippedG2pModels[0]);
  set("models", shipped + "," + shipped);
  frame();
  ASSERT_EQ(scene.models().size(), 2u);
  EXPECT_NE(scene.models()[0].name, scene.models()[1].name);
  EXPECT_EQ(scene.answer(0)->phonemes, scene.answer(1)->phonemes);
  EXPECT_NE(stats().find("pronounce_models additive,additive_2\n"), std::string::npos) << stats();
}

// "a+b+c" in the models knob is one column: the files decoded as an ensemble
// (translate/ensemble.h), answering as the library's Pronouncer of the same
// files (attograd-translate --load a --load b --load c); a file of it that
// does not load is that column's message.
TEST_F(PronounceUi, AnEnsembleIsOneColumn) {
  std::vector<std::string> paths;
  std::string ensemble;
  for (const char* path : tr::kShippedG2pEnsemble) {
    paths.push_back(ag::testing::source_path(path));
    ensemble += (ensemble.empty() ? "" : "+") + paths.back();
  }
  set("models", ensemble + "," + paths[0]);
  set("word", "colonel");
  set("beam", "3");
  frame();
  ASSERT_EQ(scene.models().size(), 2u);
  ASSERT_EQ(scene.models()[0].load_error, "");
  EXPECT_EQ(scene.models()[0].name, "ensemble");
  EXPECT_EQ(scene.models()[1].name, "additive");
  EXPECT_EQ(scene.pronouncer(0).translator().members.size(), 3u);
  tr::Pronouncer own(paths);
  const tr::Translation greedy = tr::translate(own.translator(), {"colonel"})[0];
  ASSERT_NE(scene.answer(0), nullptr);
  EXPECT_EQ(scene.answer(0)->phonemes, greedy.output);
  EXPECT_EQ(greedy.output, "K AA L AH N EH L");  // docs/g2p.md's tricky word
  EXPECT_NEAR(scene.answer(0)->confidence, std::exp(greedy.log_prob()), 1e-12);
  const tr::Pronunciation nbest = own.pronounce({"colonel"}, {.nbest = 3})[0];
  ASSERT_EQ(scene.beam(0).size(), nbest.variants.size());
  for (size_t i = 0; i < nbest.variants.size(); ++i) {
    EXPECT_EQ(scene.beam(0)[i].phonemes, nbest.variants[i].phonemes);
    EXPECT_NEAR(scene.beam(0)[i].posterior, nbest.variants[i].posterior, 1e-12);
  }
  const std::vector<double> shown = scene.inputs().at("ensemble.alignment").to_vector();
  const std::vector<double> expected = greedy.alignment.to_vector();
  ASSERT_EQ(shown.size(), expected.size());
  for (size_t i = 0; i < shown.size(); ++i) EXPECT_NEAR(shown[i], expected[i], 1e-12);
  EXPECT_NE(stats().find("pronounce_models ensemble,additive\n"), std::string::npos) << stats();

  set("models", paths[0] + "+/nonexistent/g2p.npz," + paths[0]);
  frame();
  ASSERT_EQ(scene.models().size(), 2u);
  EXPECT_EQ(scene.answer(0), nullptr);
  EXPECT_NE(scene.models()[0].load_error.find("/nonexistent/g2p.npz"), std::string::npos);
  EXPECT_NE(scene.answer(1), nullptr);
}

TEST_F(PronounceUi, TypingAnswersAtOnceAndTheBeamFollowsWhenItPauses) {
  frame();
  ASSERT_NE(scene.answer(), nullptr);
  ASSERT_FALSE(scene.beam().empty());  // the default K = 5, for "knife"
  // Each keystroke answers greedily in its frame; the candidates wait.
  for (const std::string typed : {"b", "bo", "box"}) {
    SCOPED_TRACE(typed);
    scene.type_word(typed);
    frame();
    for (size_t m = 0; m < scene.models().size(); ++m) {
      EXPECT_EQ(scene.answer(m)->phonemes,
                tr::translate(scene.pronouncer(m).translator(), {typed})[0].output);
      EXPECT_TRUE(scene.beam(m).empty());
    }
    EXPECT_TRUE(scene.beam_pending());
  }
  // The first frame without one searches: the library's beam for "box".
  frame();
  EXPECT_FALSE(scene.beam_pending());
  for (size_t m = 0; m < scene.models().size(); ++m) {
    const tr::Pronunciation nbest =
        tr::Pronouncer(scene.models()[m].path).pronounce({"box"}, {.nbest = 5})[0];
    ASSERT_EQ(scene.beam(m).size(), nbest.variants.size());
    for (size_t i = 0; i < nbest.variants.size(); ++i) {
      EXPECT_EQ(scene.beam(m)[i].phonemes, nbest.variants[i].phonemes);
      EXPECT_NEAR(scene.beam(m)[i].posterior, nbest.variants[i].posterior, 1e-12);
    }
  }
}

TEST_F(PronounceUi, AWordTypedInTrainModeHasItsBeamInTheFirstAskFrame) {
  frame();
  set("mode", "train");
  scene.type_word("box");
  frame();
  set("mode", "ask");
  frame();  // no keystroke in this frame: the candidates are searched
  EXPECT_FALSE(scene.beam_pending());
  ASSERT_NE(scene.answer(), nullptr);
  EXPECT_EQ(scene.beam().size(),
            tr::translate(scene.pronouncer().translator(), {"box"}, 1, 5)[0].beam.size());
}

TEST_F(PronounceUi, BadWordsAreMessagesAndTheFieldKeepsThem) {
  set("word", "Knife");  // capitals read as letters
  frame();
  EXPECT_EQ(scene.word_error(), "");
  EXPECT_EQ(scene.word(), "knife");
  for (const std::string& bad : {std::string("kn1fe"), std::string("knife!"), std::string(""),
                                 std::string(200, 'a'), std::string("caf\xc3\xa9")}) {
    SCOPED_TRACE(bad);
    scene.set_word(bad);
    frame();
    EXPECT_NE(scene.word_error(), "");
    EXPECT_EQ(std::string(scene.field()), bad);
    EXPECT_EQ(scene.word(), "knife");  // the maps keep the last good word
    ASSERT_NE(drawn("pronounce/additive/alignment"), nullptr);
  }
  scene.set_word("don't");  // an apostrophe is part of a word
  frame();
  EXPECT_EQ(scene.word_error(), "");
  EXPECT_EQ(scene.word(), "don't");
}

TEST_F(PronounceUi, MissingFilesAreMessages) {
  set("dict", "/nonexistent/cmudict.dict");
  set("word", "knife");
  frame();
  EXPECT_NE(scene.dict_error().find("/nonexistent/cmudict.dict"), std::string::npos)
      << scene.dict_error();
  EXPECT_EQ(scene.answer()->phonemes, "N AY F");  // the model answers without it
  set("models", "/nonexistent/g2p.npz");
  frame();
  EXPECT_NE(scene.load_error().find("/nonexistent/g2p.npz"), std::string::npos)
      << scene.load_error();
  EXPECT_EQ(scene.answer(), nullptr);
  scene.set_word("box");
  frame();
  EXPECT_NE(stats().find("pronounce_output (none)"), std::string::npos) << stats();
}

TEST_F(PronounceUi, RandomTestWordsAreTestWordsAndCounted) {
  frame();
  for (int i = 0; i < 3; ++i) {
    scene.ask_random_test_word();
    frame();
    EXPECT_EQ(tr::cmudict_split(scene.word()), tr::Split::Test) << scene.word();
  }
  EXPECT_EQ(scene.random_asked(), 3);
  for (size_t m = 0; m < scene.models().size(); ++m) {
    EXPECT_GE(scene.random_right(m), 0);
    EXPECT_LE(scene.random_right(m), 3);
  }
}

TEST(PronounceWords, IpaAndDiffs) {
  EXPECT_EQ(arpabet_to_ipa({"N", "AY", "F"}), "naɪf");
  EXPECT_EQ(arpabet_to_ipa({"TH", "AO", "T"}), "θɔt");
  EXPECT_EQ(arpabet_to_ipa({"XX"}), "[XX]");
  // A substitution marks the token on both sides; an insertion on one.
  const PhonemeDiff substituted = diff_phonemes({"N", "IH", "F"}, {"N", "AY", "F"});
  EXPECT_EQ(substituted.a_differs, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(substituted.b_differs, (std::vector<bool>{false, true, false}));
  const PhonemeDiff inserted = diff_phonemes({"B", "AA", "K", "S"}, {"B", "AA", "K"});
  EXPECT_EQ(inserted.a_differs, (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(inserted.b_differs, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(diff_phonemes({"A"}, {"A"}).a_differs, std::vector<bool>{false});
  EXPECT_THROW(checked_word("a-b", 10), Error);
  EXPECT_THROW(checked_word("abcdefghijk", 10), Error);
  EXPECT_EQ(checked_word("AbC", 10), "abc");
}

TEST_F(PronounceUi, TrainModeTrainsInTheFramesAndAnswersAsTheLibrary) {
  set("word", "box");
  set("mode", "train");
  set("steps_per_frame", "2");
  ASSERT_NE(scene.session(), nullptr);
  frame();
  frame();
  EXPECT_EQ(scene.session()->steps(), 4);
  set("paused", "yes");
  frame();
  const auto inputs = scene.inputs();
  for (size_t m = 0; m < 2; ++m) {
    const std::string name = scene.trainer()->model(m);
    const tr::Translation t = tr::translate(scene.trainer()->translator(m), {"box"})[0];
    EXPECT_EQ(inputs.at("shown." + name + ".typed.rows").item(),
              static_cast<double>(t.alignment.size(0)));
    ASSERT_NE(drawn("pronounce/" + name + "_alignment"), nullptr);
    EXPECT_EQ(drawn("pronounce/" + name + "_alignment")->cols, 4);  // b o x <eos>
  }
  EXPECT_EQ(inputs.at("shown.typed.length").item(), 4);
  const std::string out = stats();
  EXPECT_NE(out.find("dev_wer_first "), std::string::npos) << out;
  EXPECT_NE(out.find("dev_wer_last "), std::string::npos) << out;
  // A word longer than the live models read is a message.
  scene.set_word("xylophonesque");
  frame();
  EXPECT_NE(scene.word_error(), "");
  // Back to asking: training waits.
  set("paused", "no");
  set("mode", "ask");
  EXPECT_TRUE(scene.session()->paused());
}

}  // namespace
}  // namespace ag::viewer
