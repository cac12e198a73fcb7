// The Pronouncer (translate/pronouncer.h) with the shipped default g2p model:
// each variant's probabilities are the model's own (checked against one
// teacher-forced pass over the variant's phonemes, not against the decoding
// that found it), the n best are the beam's with posteriors summing to 1,
// --pmass keeps the fewest, the lexicon answers first, words are read as
// typed, and the answers do not depend on how the words are batched.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "attograd/translate/data.h"
#include "attograd/translate/predict.h"
#include "attograd/translate/pronouncer.h"
#include "test_util.h"

namespace ag {
namespace {

using translate::Pronouncer;
using translate::PronunciationSource;
using translate::PronunciationVariant;

// In a folder of this process's own (ctest runs each TEST as its own process).
Pronouncer& shipped() {
  static Pronouncer pronouncer(testing::source_path(translate::kShippedG2pModels[0]));
  return pronouncer;
}

// log P(phonemes <eos> | word) by one teacher-forced pass: the decoder reads
// <bos> and the phonemes, and the log softmax of each step's logits is read
// at the next phoneme (then <eos>).
double teacher_forced_log_prob(Pronouncer& p, const std::string& word,
                               const std::string& phonemes) {
  translate::Translator& t = p.translator();
  auto [src, valid] = translate::encode_sources({word}, t.src_vocab, t.src_steps);
  src = translate::cut_padding(src, valid);
  std::vector<int64_t> targets;
  for (size_t start = 0; start < phonemes.size();) {
    const size_t end = std::min(phonemes.find(' ', start), phonemes.size());
    targets.push_back(t.tgt_vocab.index(phonemes.substr(start, end - start)));
    start = end + 1;
  }
  targets.push_back(translate::Vocab::kEos);
  std::vector<double> inputs = {static_cast<double>(translate::Vocab::kBos)};
  for (size_t i = 0; i + 1 < targets.size(); ++i) inputs.push_back(static_cast<double>(targets[i]));
  NoGradGuard no_grad;
  const auto L = static_cast<int64_t>(targets.size());
  const std::vector<double> log_probs =
      log_softmax(t.model->forward(src, tensor(inputs, {1, L}, kInt64), valid).to(kFloat64), 2)
          .to_vector();
  const int64_t V = t.tgt_vocab.size();
  double total = 0;
  for (int64_t i = 0; i < L; ++i)
    total += log_probs[static_cast<size_t>(i * V + targets[static_cast<size_t>(i)])];
  return total;
}

void expect_consistent(const PronunciationVariant& v) {
  double product = v.end_prob;
  for (double x : v.phoneme_probs) product *= x;
  EXPECT_NEAR(v.confidence, product, 1e-12 * std::max(1.0, product));
  EXPECT_NEAR(v.confidence, std::exp(v.log_prob), 1e-12);
  EXPECT_GT(v.confidence, 0.0);
  EXPECT_LE(v.confidence, 1.0);
  EXPECT_EQ(static_cast<int64_t>(v.phoneme_probs.size()) + 1, v.alignment.size(0));
}

TEST(Pronouncer, GreedyAnswersCarryTheModelsOwnProbabilities) {
  const std::vector<std::string> words = {"knife", "xylophone", "attograd", "queue"};
  const auto answers = shipped().pronounce(words);
  const auto greedy = translate::translate(shipped().translator(), words);
  ASSERT_EQ(answers.size(), words.size());
  for (size_t k = 0; k < words.size(); ++k) {
    SCOPED_TRACE(words[k]);
    ASSERT_EQ(answers[k].variants.size(), 1u);
    const PronunciationVariant& v = answers[k].variants[0];
    EXPECT_EQ(answers[k].source, PronunciationSource::Model);
    EXPECT_EQ(v.phonemes, greedy[k].output);
    EXPECT_EQ(v.posterior, 1.0);
    EXPECT_NEAR(v.log_prob, teacher_forced_log_prob(shipped(), words[k], v.phonemes), 1e-4);
    expect_consistent(v);
  }
  // knife: the word the model is surest of. Trained with label smoothing
  // 0.1, the model gives a phoneme it is sure of about 0.92, not nearly 1, so
  // a sure answer of three phonemes and <eos> has a confidence near 0.7.
  EXPECT_EQ(answers[0].variants[0].phonemes, "N AY F");
  EXPECT_GT(answers[0].variants[0].confidence, 0.6);
  for (size_t k = 1; k < words.size(); ++k)
    EXPECT_GT(answers[0].variants[0].confidence, answers[k].variants[0].confidence) << words[k];
}

TEST(Pronouncer, TheNBestAreTheBeamsWithPosteriorsOverThem) {
  const std::vector<std::string> words = {"queue", "psychology", "tomato"};
  const auto answers = shipped().pronounce(words, {.nbest = 4});  // beam 4
  const auto beams = translate::translate(shipped().translator(), words, 1000, 4);
  for (size_t k = 0; k < words.size(); ++k) {
    SCOPED_TRACE(words[k]);
    const auto& variants = answers[k].variants;
    ASSERT_EQ(variants.size(), 4u);
    // The beam's four candidates, most probable first.
    std::vector<translate::Translation::Candidate> by_probability = beams[k].beam;
    std::stable_sort(by_probability.begin(), by_probability.end(),
                     [](const auto& a, const auto& b) { return a.log_prob > b.log_prob; });
    double total = 0, denominator = 0;
    for (const auto& c : beams[k].beam) denominator += std::exp(c.log_prob);
    for (size_t r = 0; r < variants.size(); ++r) {
      EXPECT_EQ(variants[r].phonemes, by_probability[r].output);
      EXPECT_DOUBLE_EQ(variants[r].score, by_probability[r].score);
      EXPECT_NEAR(variants[r].posterior, std::exp(by_probability[r].log_prob) / denominator, 1e-12);
      if (r > 0) {
        EXPECT_LE(variants[r].posterior, variants[r - 1].posterior);
      }
      EXPECT_GT(variants[r].posterior, 0.0);
      EXPECT_NEAR(variants[r].log_prob,
                  teacher_forced_log_prob(shipped(), words[k], variants[r].phonemes), 1e-4);
      expect_consistent(variants[r]);
      total += variants[r].posterior;
    }
    EXPECT_NEAR(total, 1.0, 1e-12);
  }
  // A wider beam with fewer variants: the N most probable of its K; one
  // variant is the beam's best by score, as --beam answers.
  const auto two_of_eight = shipped().pronounce({"queue"}, {.nbest = 2, .beam = 8});
  auto eight = translate::translate(shipped().translator(), {"queue"}, 1000, 8)[0].beam;
  const auto one_of_eight = shipped().pronounce({"tomato"}, {.nbest = 1, .beam = 8});
  EXPECT_EQ(one_of_eight[0].variants[0].phonemes,
            translate::translate(shipped().translator(), {"tomato"}, 1000, 8)[0].output);
  std::stable_sort(eight.begin(), eight.end(),
                   [](const auto& a, const auto& b) { return a.log_prob > b.log_prob; });
  ASSERT_EQ(two_of_eight[0].variants.size(), 2u);
  EXPECT_EQ(two_of_eight[0].variants[1].phonemes, eight[1].output);
}

TEST(Pronouncer, PmassKeepsTheFewestVariantsThatReachIt) {
  const std::vector<std::string> words = {"queue", "tomato", "either", "live"};
  const auto all = shipped().pronounce(words, {.nbest = 5});
  for (double q : {0.5, 0.9, 0.999, 1.0}) {
    const auto kept = shipped().pronounce(words, {.nbest = 5, .pmass = q});
    for (size_t k = 0; k < words.size(); ++k) {
      SCOPED_TRACE(words[k] + " pmass " + std::to_string(q));
      const auto& v = kept[k].variants;
      double mass = 0;
      for (const auto& x : v) mass += x.posterior;
      EXPECT_TRUE(mass >= q - 1e-12 || v.size() == 5u) << mass;
      EXPECT_LT(mass - v.back().posterior, q);  // one fewer would not reach it
      for (size_t r = 0; r < v.size(); ++r)     // a prefix, posteriors as over the five
        EXPECT_EQ(v[r].posterior, all[k].variants[r].posterior);
    }
  }
}

TEST(Pronouncer, TheLexiconAnswersFirstAndLaterFilesOverride) {
  Pronouncer p(testing::source_path(translate::kShippedG2pModels[0]));
  const std::string first = testing::scratch_file("pronouncer", "first.dict"),
                    second = testing::scratch_file("pronouncer", "second.dict");
  std::ofstream(first)
      << "knife N AY F IH\nread R IY D\nread(2) R EH D\nattograd AE T AH G R AE D\n";
  std::ofstream(second) << "knife K N AY F\n";
  p.add_lexicon(first);
  p.add_lexicon(second);
  EXPECT_EQ(p.lexicon_size(), 3u);
  const auto answers = p.pronounce({"Knife", "read", "box"}, {.nbest = 3});
  EXPECT_EQ(answers[0].source, PronunciationSource::Lexicon);
  ASSERT_EQ(answers[0].variants.size(), 1u);
  EXPECT_EQ(answers[0].variants[0].phonemes, "K N AY F");
  EXPECT_EQ(answers[0].variants[0].confidence, 1.0);
  EXPECT_FALSE(answers[0].variants[0].alignment.defined());
  ASSERT_EQ(answers[1].variants.size(), 2u);  // every listed pronunciation, in order
  EXPECT_EQ(answers[1].variants[0].phonemes, "R IY D");
  EXPECT_EQ(answers[1].variants[1].phonemes, "R EH D");
  EXPECT_EQ(answers[1].variants[1].posterior, 0.5);
  EXPECT_EQ(answers[2].source, PronunciationSource::Model);
  EXPECT_EQ(answers[2].variants[0].phonemes, "B AA K S");
}

TEST(Pronouncer, WordsAreReadAsTypedAndBadOnesAreNamed) {
  EXPECT_EQ(Pronouncer::normalize("  KNife\r"), "knife");
  EXPECT_EQ(Pronouncer::normalize(" \t\r"), "");
  Pronouncer& p = shipped();
  EXPECT_FALSE(p.problem("knife"));
  EXPECT_NE(p.problem("caf\xc3\xa9").value_or("").find("unknown character '\xc3\xa9'"),
            std::string::npos);
  const std::string long_word(40, 'a');
  EXPECT_NE(p.problem(long_word).value_or("").find("has 40 characters; the model reads at most 28"),
            std::string::npos)
      << p.problem(long_word).value_or("");
  EXPECT_NE(p.problem("").value_or("").find("empty"), std::string::npos);
  EXPECT_TRUE(testing::throws_error(
      [&] {
        p.pronounce({"knife", "x-ray"});
      },
      {"unknown character '-' in \"x-ray\""}));
  EXPECT_TRUE(testing::throws_error([&] { p.pronounce({"knife"}, {.nbest = 3, .beam = 2}); },
                                    {"nbest 3 must be in [1, beam 2]"}));
  EXPECT_TRUE(testing::throws_error([&] { p.pronounce({"knife"}, {.nbest = 2, .pmass = 0}); },
                                    {"pmass 0 must be in (0, 1]"}));
  const auto answers = p.pronounce({"KNIFE", "Knife\r"});
  EXPECT_EQ(answers[0].word, "knife");
  EXPECT_EQ(answers[1].variants[0].phonemes, "N AY F");
}

TEST(Pronouncer, AnswersDoNotDependOnTheBatches) {
  const std::vector<std::string> words = {"psychology", "a",     "knife",     "onomatopoeia",
                                          "box",        "queue", "xylophone", "it's"};
  for (int64_t beam : {1, 3}) {
    const auto together = shipped().pronounce(words, {.beam = beam, .batch_size = 500});
    const auto one_by_one = shipped().pronounce(words, {.beam = beam, .batch_size = 1});
    for (size_t k = 0; k < words.size(); ++k) {
      SCOPED_TRACE(words[k]);
      EXPECT_EQ(together[k].word, words[k]);  // the words' order, not the batches'
      EXPECT_EQ(together[k].variants[0].phonemes, one_by_one[k].variants[0].phonemes);
      EXPECT_NEAR(together[k].variants[0].log_prob, one_by_one[k].variants[0].log_prob, 1e-4);
    }
  }
}

// With two kernel threads the batches are decoded side by side, each thread
// with a model of its own: the same answers as one thread, in the words' order.
TEST(Pronouncer, TwoThreadsGiveTheAnswersOfOne) {
  std::vector<std::string> words;
  for (const char* w : {"knife", "xylophone", "queue", "box", "thought", "psychology", "a", "it's",
                        "onomatopoeia", "rhythm", "colonel", "yacht"})
    for (int k = 0; k < 3; ++k) words.push_back(w);
  for (int64_t beam : {1, 3}) {
    set_num_threads(1);
    const auto one = shipped().pronounce(words, {.beam = beam, .batch_size = 4});
    set_num_threads(2);
    const auto two = shipped().pronounce(words, {.beam = beam, .batch_size = 4});
    set_num_threads(1);
    for (size_t k = 0; k < words.size(); ++k) {
      EXPECT_EQ(two[k].word, words[k]);
      EXPECT_EQ(two[k].variants[0].phonemes, one[k].variants[0].phonemes) << words[k];
      EXPECT_EQ(two[k].variants[0].log_prob, one[k].variants[0].log_prob) << words[k];
    }
  }
}

// A model of any task answers its inputs as translate() does, with
// posteriors over its n best; only a task that reads a dictionary takes a
// lexicon.
TEST(Pronouncer, AnswersAnyTasksInputsAndLexiconsOnlyForDictionaries) {
  translate::DatasetOptions options;
  options.task = "reverse";
  options.num_train = 50;
  options.num_heldout = 5;
  const translate::Dataset data = translate::make_dataset(options);
  translate::ModelConfig config;
  config.embed_size = config.num_hiddens = 4;
  translate::Translator model = translate::make_translator(config, data);
  const std::string greedy = translate::translate(model, {"123"})[0].output;
  Pronouncer p(std::move(model));
  const auto answers = p.pronounce({"123"}, {.nbest = 2});
  ASSERT_EQ(answers[0].variants.size(), 2u);
  EXPECT_NEAR(answers[0].variants[0].posterior + answers[0].variants[1].posterior, 1.0, 1e-12);
  EXPECT_EQ(p.pronounce({"123"})[0].variants[0].phonemes, greedy);
  EXPECT_EQ(p.read(" 12 "), " 12 ");  // reverse reads its texts as they are
  EXPECT_TRUE(testing::throws_error([&] { p.add_lexicon(translate::Cmudict{}); },
                                    {"'reverse' reads no dictionary", "g2p"}));
}

}  // namespace
}  // namespace ag
