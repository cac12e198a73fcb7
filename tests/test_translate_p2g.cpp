// The p2g task (sounds to spelling): g2p's split read the other way round,
// homophones all right, its figures, input read as typed, a lexicon from a
// dictionary, and a small model that trains, saves, loads, decodes with beam
// search and draws its alignment.
#include <filesystem>
#include <fstream>
#include <set>

#include "attograd/translate/pronouncer.h"
#include "attograd/translate/report.h"
#include "attograd/translate/train.h"
#include "test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

std::string p2g_sample_path() {
  return ag::testing::source_path("tests/data/cmudict-sample.dict");
}

const testing::ScratchDir& p2g_scratch() {
  static const testing::ScratchDir dir("translate_p2g");
  return dir;
}

// A few homophones, in CMUdict's format: knight is a test word (crc32 % 20
// == 0), night, nite and knife training words.
std::string homophones_path() {
  const std::string path = p2g_scratch() / "homophones.dict";
  std::ofstream(path) << "night N AY T\nknight N AY T\nnite N AY T\nknife N AY F\n";
  return path;
}

TEST(P2g, TheSplitIsG2psByWord) {
  const Dataset p2g = make_dataset({"p2g", 0, 0, 0, p2g_sample_path()});
  const Dataset g2p = make_dataset({"g2p", 0, 0, 0, p2g_sample_path()});
  EXPECT_EQ(p2g.task().source, Tokenization::Phonemes);
  EXPECT_EQ(p2g.task().target, Tokenization::Characters);
  // Every word's status is the same in both tasks: the test words among the
  // test examples' spellings are exactly g2p's test words; each example's
  // first spelling is a word of its split.
  std::set<std::string> p2g_test, g2p_test;
  for (const Example& e : g2p.heldout()) g2p_test.insert(e.source);
  for (const Example& e : p2g.heldout()) {
    EXPECT_EQ(cmudict_split(e.target), Split::Test) << e.target;
    for (const std::string& answer : e.answers())
      if (cmudict_split(answer) == Split::Test) p2g_test.insert(answer);
  }
  EXPECT_EQ(p2g_test, g2p_test);
  for (const Example& e : p2g.dev()) EXPECT_EQ(cmudict_split(e.target), Split::Dev) << e.target;
  // No training pair reads a held-out pronunciation.
  std::set<std::string> held_out;
  for (const auto* split : {&p2g.dev(), &p2g.heldout()})
    for (const Example& e : *split) EXPECT_TRUE(held_out.insert(e.source).second) << e.source;
  for (const Example& e : p2g.train()) {
    EXPECT_EQ(held_out.count(e.source), 0u) << e.source;
    EXPECT_EQ(cmudict_split(e.target), Split::Train) << e.target;
  }
  EXPECT_TRUE(p2g.src_vocab().contains("AY"));
  EXPECT_TRUE(p2g.tgt_vocab().contains("k"));
  EXPECT_EQ(p2g.src_steps(), g2p.tgt_steps());  // the longest pronunciation + <eos>
  EXPECT_EQ(p2g.tgt_steps(), g2p.src_steps());  // the longest word + <eos>
  EXPECT_NE(p2g.description().find("pronunciations"), std::string::npos) << p2g.description();
}

// A held-out pronunciation is right spelled as any word that says it; a
// training homophone's pair is left out, so the model never reads it.
TEST(P2g, HomophonesAreAllRight) {
  const Dataset data = make_dataset({"p2g", 0, 0, 0, homophones_path()});
  ASSERT_EQ(data.heldout().size(), 1u);
  const Example& knight = data.heldout()[0];
  EXPECT_EQ(knight.source, "N AY T");
  EXPECT_EQ(knight.target, "knight");
  EXPECT_EQ(knight.alternatives, (std::vector<std::string>{"night", "nite"}));
  ASSERT_EQ(data.train().size(), 1u);  // knife: night's and nite's N AY T is held out
  EXPECT_EQ(data.train()[0].target, "knife");
  EXPECT_NE(data.description().find("2 left out"), std::string::npos) << data.description();

  const Evaluation e =
      evaluate_outputs(find_task("p2g"), {knight, knight, knight}, {"night", "nyte", ""});
  EXPECT_EQ(e.figure("pronunciations"), 3);
  EXPECT_NEAR(e.figure("word_accuracy"), 1.0 / 3, 1e-15);
  // night: right (5 letters); nyte: one edit from nite (4); "": 4 edits
  // from nite, the shortest.
  EXPECT_NEAR(e.figure("letter_error_rate"), (0.0 + 1 + 4) / (5 + 4 + 4), 1e-15);
  EXPECT_EQ(e.figures[1].text, "word accuracy 33.33%");
  EXPECT_EQ(e.figures[2].text, "letter error rate 38.46% (5 edits / 13 letters)");
}

TEST(P2g, InputsAreReadAsADictionaryWritesThem) {
  const Task& p2g = find_task("p2g");
  EXPECT_EQ(p2g.read_input(" n  ay1\tf\r"), "N AY F");
  EXPECT_EQ(p2g.read_input("K ER0 N AH0 L"), "K ER N AH L");
  EXPECT_EQ(p2g.read_input(""), "");
  // --evaluate's examples and --lexicon's answers: pronunciations to words.
  const Cmudict dict = read_cmudict(homophones_path());
  const std::vector<Example> examples = p2g.dictionary_examples(dict);
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].answers(), (std::vector<std::string>{"night", "knight", "nite"}));
  EXPECT_EQ(examples[1].answers(), (std::vector<std::string>{"knife"}));
  const Lexicon lexicon = p2g.lexicon(dict);
  EXPECT_EQ(lexicon.at("N AY T"), (std::vector<std::string>{"night", "knight", "nite"}));
}

// A small model on the sample: it trains with the g2p model kinds, saves,
// loads, answers with beam search and n-best posteriors, and its alignment
// has a row per letter and a column per phoneme.
TEST(P2g, ASmallModelTrainsSavesLoadsAndSpells) {
  manual_seed(0);
  const Dataset data = make_dataset({"p2g", 0, 0, 0, p2g_sample_path()});
  ModelConfig config = find_task("p2g").defaults("bahdanau").config;
  config.embed_size = 16;
  config.num_hiddens = 32;
  config.num_layers = 1;
  Translator translator = make_translator(config, data);
  TrainOptions train;
  train.steps = 100;
  train.batch_size = 32;
  train.lr = 0.01;
  std::vector<double> losses;
  train_seq2seq(translator, data, train, [&](const StepInfo& s) { losses.push_back(s.loss); });
  EXPECT_LT(losses.back(), 0.8 * losses.front()) << losses.front() << " -> " << losses.back();
  const std::string path = p2g_scratch() / "p2g.npz";
  save_translator(path, translator);
  Translator loaded = load_translator(path);
  EXPECT_EQ(loaded.task.name, "p2g");
  EXPECT_EQ(loaded.task.source, Tokenization::Phonemes);
  const std::vector<Translation> greedy = translate(translator, {"N AY F"});
  const std::vector<Translation> again = translate(loaded, {"N AY F"});
  EXPECT_EQ(again[0].output, greedy[0].output);
  EXPECT_EQ(again[0].source_tokens, (std::vector<std::string>{"N", "AY", "F", "<eos>"}));
  EXPECT_EQ(again[0].alignment.size(0), static_cast<int64_t>(again[0].output_tokens.size()));
  EXPECT_EQ(again[0].alignment.size(1), 4);
  const std::vector<Translation> beam = translate(loaded, {"N AY F"}, 1000, 3);
  EXPECT_EQ(beam[0].beam.size(), 3u);
  Pronouncer speller(std::move(loaded));
  const auto spelled = speller.pronounce({"n ay1 f"}, {.nbest = 3});
  EXPECT_EQ(spelled[0].word, "N AY F");
  ASSERT_EQ(spelled[0].variants.size(), 3u);
  double mass = 0;
  for (const auto& v : spelled[0].variants) mass += v.posterior;
  EXPECT_NEAR(mass, 1.0, 1e-12);
  const std::string picture = p2g_scratch() / "knife.svg";
  alignment_heatmap(again[0], picture);
  EXPECT_TRUE(std::filesystem::exists(picture));
  EXPECT_TRUE(throws_error([&] { translate(translator, {"N AY Q"}); }, {"unknown phoneme 'Q'"}));
  const Evaluation dev = evaluate(translator, data.dev());
  EXPECT_EQ(dev.figure("pronunciations"), static_cast<double>(data.dev().size()));
  EXPECT_EQ(dev.figure("word_accuracy"), dev.accuracy);
}

}  // namespace
}  // namespace ag::translate
