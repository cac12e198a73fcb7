// The letters-to-sounds model shipped in the repository
// (translate/models/g2p-cmudict.npz, trained by the command in docs/g2p.md):
// it loads, says what it is, and pronounces the words of docs/g2p.md as
// written here, greedy and with a beam of 5. The files' figures (test WER
// and PER) are docs/g2p.md's; CI does not train.
#include <string>
#include <vector>

#include "attograd/translate/model.h"
#include "attograd/translate/predict.h"
#include "test_util.h"

namespace ag {
namespace {

using translate::load_translator;
using translate::Task;
using translate::Translation;
using translate::Translator;

const Translator& shipped() {
  static Translator t = load_translator(testing::source_path("translate/models/g2p-cmudict.npz"));
  return t;
}

TEST(G2pModel, LoadsAsTheBidirectionalG2pModel) {
  const Translator& t = shipped();
  EXPECT_EQ(t.task, Task::G2p);
  EXPECT_EQ(t.config.model, "bahdanau");
  EXPECT_EQ(t.config.encoder, "bidirectional");
  EXPECT_EQ(t.config.attention, "additive");
  EXPECT_EQ(t.src_steps, 29);
  EXPECT_EQ(t.tgt_vocab.size(), 4 + 39);  // the reserved tokens and ARPAbet's 39 phonemes
  int64_t parameters = 0;
  for (const Tensor& p : t.model->parameters()) parameters += p.numel();
  EXPECT_LE(parameters, 4'000'000);  // the bound: at most 16 MB of float32
  EXPECT_FALSE(t.model->is_training());
}

TEST(G2pModel, PronouncesTheTrickyWords) {
  Translator& t = const_cast<Translator&>(shipped());
  const std::vector<std::pair<std::string, std::string>> words = {
      {"knife", "N AY F"},
      {"box", "B AA K S"},
      {"thought", "TH AO T"},
      {"queue", "K Y UW"},
      {"xylophone", "Z AY L AH F OW N"},
      {"psychology", "S AY K AA L AH JH IY"}};
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
    // The alignment: one row per output phoneme and <eos>, one column per
    // letter and <eos>, each row a distribution.
    const Tensor& a = greedy[i].alignment;
    EXPECT_EQ(a.shape(), (Shape{static_cast<int64_t>(greedy[i].output_tokens.size()),
                                static_cast<int64_t>(words[i].first.size()) + 1}));
    EXPECT_TRUE(testing::all_close(a.sum(1), ones({a.size(0)}, kFloat64), 1e-5));
  }
  // A character the model cannot read is an error naming it.
  EXPECT_TRUE(
      testing::throws_error([&] { translate::translate(t, {"caf\xc3\xa9"}); }, {"'\xc3\xa9'"}));
}

}  // namespace
}  // namespace ag
