// The letters-to-sounds models shipped in the repository
// (translate::kShippedG2pModels: g2p-cmudict.npz, additive, and
// g2p-cmudict-multihead.npz, both trained by the commands in docs/g2p.md;
// translate::kShippedG2pEnsemble, three additive files as one):
// each loads, says what it is, and pronounces the words of docs/g2p.md as
// written here, greedy and with a beam of 5. The files' figures (test WER
// and PER) are docs/g2p.md's; CI does not train.
#include <string>
#include <vector>

#include "attograd/translate/ensemble.h"
#include "attograd/translate/model.h"
#include "attograd/translate/predict.h"
#include "test_util.h"

namespace ag {
namespace {

using translate::load_translator;
using translate::Translation;
using translate::Translator;

// Shipped model `index` (0: the default), loaded once.
Translator& shipped(size_t index = 0) {
  static std::vector<Translator> models = [] {
    std::vector<Translator> loaded;
    for (const char* path : translate::kShippedG2pModels)
      loaded.push_back(load_translator(testing::source_path(path)));
    return loaded;
  }();
  return models.at(index);
}

TEST(G2pModel, LoadAsTheBidirectionalG2pModels) {
  ASSERT_EQ(std::size(translate::kShippedG2pModels), 2u);
  const char* const scoring[] = {"additive", "multihead"};
  for (size_t m = 0; m < 2; ++m) {
    const Translator& t = shipped(m);
    EXPECT_EQ(t.task.name, "g2p");
    EXPECT_EQ(t.config.model, "bahdanau");
    EXPECT_EQ(t.config.encoder, "bidirectional");
    EXPECT_EQ(t.config.attention, scoring[m]);
    EXPECT_EQ(t.src_steps, 29);
    EXPECT_EQ(t.tgt_vocab.size(), 4 + 39);  // the reserved tokens and ARPAbet's 39 phonemes
    int64_t parameters = 0;
    for (const Tensor& p : t.model->parameters()) parameters += p.numel();
    EXPECT_LE(parameters, 4'000'000);  // the bound: at most 16 MB of float32
    EXPECT_FALSE(t.model->is_training());
  }
  EXPECT_EQ(shipped(1).config.num_heads, 4);
}

using WordsAndAnswers = std::vector<std::pair<std::string, std::string>>;

// `t` says each word's answer, greedy and with a beam of 5: the beam's 5
// candidates best first, and one alignment row per output phoneme and
// <eos>, one column per letter and <eos>, each row a distribution.
void expect_pronounces(Translator& t, const WordsAndAnswers& words) {
  std::vector<std::string> inputs;
  for (const auto& [word, _] : words) inputs.push_back(word);
  const std::vector<Translation> greedy = translate::translate(t, inputs);
  const std::vector<Translation> beam = translate::translate(t, inputs, 1000, 5);
  for (size_t i = 0; i < words.size(); ++i) {
    EXPECT_EQ(greedy[i].output, words[i].second) << words[i].first;
    EXPECT_EQ(beam[i].output, words[i].second) << words[i].first << " (beam 5)";
    ASSERT_EQ(beam[i].beam.size(), 5u) << words[i].first;
    for (size_t k = 1; k < beam[i].beam.size(); ++k)  // finished candidates, best first
      if (beam[i].beam[k].finished) {
        EXPECT_LE(beam[i].beam[k].score, beam[i].beam[k - 1].score);
      }
    const Tensor& a = greedy[i].alignment;
    EXPECT_EQ(a.shape(), (Shape{static_cast<int64_t>(greedy[i].output_tokens.size()),
                                static_cast<int64_t>(words[i].first.size()) + 1}));
    EXPECT_TRUE(testing::all_close(a.sum(1), ones({a.size(0)}, kFloat64), 1e-5));
  }
}

TEST(G2pModel, PronounceTheTrickyWords) {
  for (size_t m = 0; m < std::size(translate::kShippedG2pModels); ++m) {
    SCOPED_TRACE(translate::kShippedG2pModels[m]);
    Translator& t = shipped(m);
    expect_pronounces(t, {{"knife", "N AY F"},
                          {"box", "B AA K S"},
                          {"thought", "TH AO T"},
                          {"queue", "K Y UW"},
                          {"xylophone", "Z AY L AH F OW N"},
                          {"psychology", "S AY K AA L AH JH IY"}});
    // A character the model cannot read is an error naming it.
    EXPECT_TRUE(
        testing::throws_error([&] { translate::translate(t, {"caf\xc3\xa9"}); }, {"'\xc3\xa9'"}));
  }
}

// The best shipped model: the three files of translate::kShippedG2pEnsemble
// (each the shipped recipe: seed 0, seed 1, seed 0 without dropout) load as
// one ensemble and pronounce the tricky words as docs/g2p.md shows, greedy
// and with a beam of 5. Its test WER and PER are docs/g2p.md's.
TEST(G2pModel, TheShippedEnsemblePronouncesTheTrickyWords) {
  std::vector<std::string> paths;
  for (const char* path : translate::kShippedG2pEnsemble)
    paths.push_back(testing::source_path(path));
  ASSERT_EQ(paths.size(), 3u);
  Translator t = translate::load_ensemble(paths);
  ASSERT_EQ(t.members.size(), 3u);
  for (const translate::ModelConfig& member : t.members) {
    EXPECT_EQ(member.attention, "additive");
    EXPECT_EQ(member.encoder, "bidirectional");
    EXPECT_EQ(member.num_hiddens, 256);
  }
  EXPECT_EQ(t.members[2].dropout, 0.0);
  // The alignment is the members' mean: its rows are still distributions.
  expect_pronounces(t, {{"knife", "N AY F"},
                        {"box", "B AA K S"},
                        {"thought", "TH AO T"},
                        {"queue", "K Y UW"},
                        {"xylophone", "Z AY L AH F OW N"},
                        {"psychology", "S AY K AA L AH JH IY"},
                        {"colonel", "K AA L AH N EH L"}});
}

TEST(G2pModel, AWideBeamNeverSaysASpecialToken) {
  // 60 candidates, more than the 39 phonemes and <eos>: once the likely
  // sequences are taken the beam reaches the unlikely tokens, and <pad>,
  // <bos> and <unk> must not be among them (translate() would print them).
  Translator& t = shipped();
  const std::vector<std::string> words = {"knife",   "box",      "thought", "queue",
                                          "colonel", "attograd", "softmax", "xylophone"};
  const std::vector<Translation> beam = translate::translate(t, words, 1000, 60);
  for (size_t i = 0; i < words.size(); ++i) {
    EXPECT_EQ(beam[i].beam.size(), 60u) << words[i];
    for (const Translation::Candidate& c : beam[i].beam)
      for (const std::string& token : c.output_tokens)
        EXPECT_TRUE(token != "<pad>" && token != "<bos>" && token != "<unk>")
            << words[i] << ": " << c.output;
  }
}

}  // namespace
}  // namespace ag
