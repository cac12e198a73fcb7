// The g2p task: CMUdict's reader on the committed sample (counts, alternates,
// skips) and on broken files (each one ag::Error naming file and line), the
// split by word, WER and PER, and a short training run whose loss falls.
#include <filesystem>
#include <fstream>
#include <set>

#include "attograd/translate/train.h"
#include "test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

std::string sample_path() {
  return ag::testing::source_path("tests/data/cmudict-sample.dict");
}

// A file of `bytes` in a folder of this process's own.
std::string dictionary_file(const std::string& name, const std::string& bytes) {
  static const ag::testing::ScratchDir dir("translate_g2p");
  const std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

const CmudictEntry& entry(const Cmudict& dict, const std::string& word) {
  for (const CmudictEntry& e : dict.entries)
    if (e.word == word) return e;
  throw Error("no entry for " + word);
}

// The counts Python gives for the sample (re + zlib, the rules of cmudict.h).
TEST(G2pReader, SampleCounts) {
  const Cmudict dict = read_cmudict(sample_path());
  EXPECT_EQ(dict.stats.lines, 341);
  EXPECT_EQ(dict.stats.comments, 37);     // the licence
  EXPECT_EQ(dict.stats.skipped_word, 4);  // a.m., able-bodied, ex-girlfriend, pee-pee
  EXPECT_EQ(dict.stats.skipped_duplicate, 0);
  EXPECT_EQ(dict.entries.size(), 278u);
  EXPECT_EQ(dict.stats.pronunciations, 300);
  EXPECT_EQ(dict.stats.longest_word, 16);
  EXPECT_EQ(dict.stats.longest_pronunciation, 15);
  EXPECT_EQ(entry(dict, "knife").pronunciations, std::vector<std::string>{"N AY F"});
  EXPECT_EQ(entry(dict, "colonel").pronunciations, std::vector<std::string>{"K ER N AH L"});
  EXPECT_EQ(entry(dict, "read").pronunciations,
            (std::vector<std::string>{"R EH D", "R IY D"}));  // read, read(2)
  EXPECT_EQ(entry(dict, "tomato").pronunciations.size(), 2u);
}

TEST(G2pReader, ToleratesSpacingAndCrlfAndCountsSkips) {
  const std::string path =
      dictionary_file("spacing.dict",
                      ";;; a comment\r\n\r\n  knife \t N  AY\tF \r\n"
                      "box B AA K S\nbox(2) B AA K S\nKnife N AY F\nword(x) W ER D\n"
                      "o'neil OW N IY L\no'neil(3) AH N IY L");  // no newline at the end
  const Cmudict dict = read_cmudict(path);
  EXPECT_EQ(dict.stats.lines, 9);
  EXPECT_EQ(dict.stats.comments, 2);
  EXPECT_EQ(dict.stats.skipped_duplicate, 2);  // box(2) repeats box, Knife knife
  EXPECT_EQ(dict.stats.skipped_word, 1);       // word(x)
  ASSERT_EQ(dict.entries.size(), 3u);
  EXPECT_EQ(entry(dict, "knife").pronunciations, std::vector<std::string>{"N AY F"});
  EXPECT_EQ(entry(dict, "box").pronunciations, std::vector<std::string>{"B AA K S"});
  EXPECT_EQ(entry(dict, "o'neil").pronunciations,
            (std::vector<std::string>{"OW N IY L", "AH N IY L"}));
}

// Upstream's two formats read as Debian's: cmudict-0.7b's capitals and
// stress digits, cmudict.dict's stress digits and '#' notes.
TEST(G2pReader, ReadsUpstreamsFormatsAsDebians) {
  const std::string path = dictionary_file(
      "upstream.dict",
      ";;; cmudict-0.7b\nKNIFE  N AY1 F\nREAD(1)  R EH1 D\nd'artagnan D AH0 R T AE1 NG Y AH0 N "
      "# foreign french\nread(2) R IY1 D\n# a note alone\n");
  const Cmudict dict = read_cmudict(path);
  EXPECT_EQ(dict.stats.comments, 2);
  EXPECT_EQ(dict.stats.stress_marks, 6);
  EXPECT_EQ(dict.stats.skipped_word, 0);
  ASSERT_EQ(dict.entries.size(), 3u);
  EXPECT_EQ(entry(dict, "knife").pronunciations, std::vector<std::string>{"N AY F"});
  EXPECT_EQ(entry(dict, "read").pronunciations, (std::vector<std::string>{"R EH D", "R IY D"}));
  EXPECT_EQ(entry(dict, "d'artagnan").pronunciations,
            std::vector<std::string>{"D AH R T AE NG Y AH N"});
  EXPECT_NE(cmudict_summary(path, dict).find("dropped 6 stress digits"), std::string::npos);
}

TEST(G2pReader, BadDictionariesNameFileAndLine) {
  EXPECT_TRUE(throws_error([] { read_cmudict("/nonexistent/cmudict.dict"); },
                           {"/nonexistent/cmudict.dict", "apt-get install pocketsphinx-en-us"}));
  const std::string empty = dictionary_file("empty.dict", "");
  EXPECT_TRUE(throws_error([&] { read_cmudict(empty); }, {empty, "empty"}));
  const std::string unusable = dictionary_file("unusable.dict", ";;; hi\nA.M. EY EH M\n");
  EXPECT_TRUE(throws_error([&] { read_cmudict(unusable); }, {unusable, "no usable entry"}));
  const std::string binary = dictionary_file("binary.dict", std::string("knife N AY F\nab\0c", 17));
  EXPECT_TRUE(throws_error([&] { read_cmudict(binary); }, {binary + ":2:", "NUL byte"}));
  const std::string bare = dictionary_file("bare.dict", "knife N AY F\nbox\n");
  EXPECT_TRUE(throws_error([&] { read_cmudict(bare); }, {bare + ":2:", "'box' has no phonemes"}));
  const std::string latin1 =
      dictionary_file("latin1.dict", "knife N AY F\n;;; \n\xe9t\xe9 EY T EY\n");
  EXPECT_TRUE(throws_error([&] { read_cmudict(latin1); }, {latin1 + ":3:", "not UTF-8"}));
  const std::string huge =
      dictionary_file("huge.dict", "knife N AY F\nx " + std::string(1 << 20, 'A') + "\n");
  EXPECT_TRUE(throws_error([&] { read_cmudict(huge); }, {huge + ":2:", "more than 4096 bytes"}));
  const std::string stressed = dictionary_file("stressed.dict", "knife N AY3 F\n");
  EXPECT_TRUE(throws_error([&] { read_cmudict(stressed); }, {stressed + ":1:", "'AY3'"}));
  const std::string digit = dictionary_file("digit.dict", "knife N 1 F\n");
  EXPECT_TRUE(throws_error([&] { read_cmudict(digit); }, {digit + ":1:", "'1'"}));
  // UTF-8 is read (and its word skipped, not ^[a-z']+$).
  const std::string utf8 =
      dictionary_file("utf8.dict", "\xc3\xa9t\xc3\xa9 EY T EY\nbox B AA K S\n");
  EXPECT_EQ(read_cmudict(utf8).stats.skipped_word, 1);
}

// crc32 values from Python's zlib.crc32(b"knife") etc.
TEST(G2pSplit, ByCrc32OfTheWord) {
  EXPECT_EQ(cmudict_split("knife"), Split::Train);    // 3124795432 % 20 == 12
  EXPECT_EQ(cmudict_split("brings"), Split::Test);    // % 20 == 0
  EXPECT_EQ(cmudict_split("accretion"), Split::Dev);  // 3039287501 % 20 == 1
  EXPECT_EQ(cmudict_split("colonel"), Split::Train);  // 4291829035 % 20 == 15
}

TEST(G2pSplit, DatasetFromTheSample) {
  DatasetOptions options;
  options.task = "g2p";
  options.dict_path = sample_path();
  const Dataset data = make_dataset(options);
  EXPECT_EQ(data.train().size(), 263u);  // pairs of 244 words
  EXPECT_EQ(data.dev().size(), 24u);
  EXPECT_EQ(data.heldout().size(), 10u);
  EXPECT_EQ(data.src_steps(), 17);  // longest word + <eos>
  EXPECT_EQ(data.tgt_steps(), 16);  // longest pronunciation + <eos>
  EXPECT_NE(data.description().find("278 words with 300 pronunciations"), std::string::npos)
      << data.description();
  EXPECT_EQ(data.task().target, Tokenization::Phonemes);
  std::set<std::string> train_words, dev_words, test_words;
  for (const Example& e : data.train()) {
    train_words.insert(e.source);
    EXPECT_TRUE(e.alternatives.empty());
  }
  for (const Example& e : data.dev()) EXPECT_TRUE(dev_words.insert(e.source).second);
  for (const Example& e : data.heldout()) EXPECT_TRUE(test_words.insert(e.source).second);
  EXPECT_EQ(train_words.size(), 244u);
  for (const std::string& w : dev_words) EXPECT_EQ(train_words.count(w) + test_words.count(w), 0u);
  for (const std::string& w : test_words) EXPECT_EQ(train_words.count(w), 0u);
  // Both of read's pronunciations are training pairs.
  int reads = 0;
  for (const Example& e : data.train()) reads += e.source == "read";
  EXPECT_EQ(reads, 2);
  // The target vocabulary holds phonemes, the source vocabulary letters.
  EXPECT_TRUE(data.tgt_vocab().contains("AY"));
  EXPECT_FALSE(data.tgt_vocab().contains("A"));
  EXPECT_TRUE(data.src_vocab().contains("k"));
  const Example* knife = nullptr;
  for (const Example& e : data.train())
    if (e.source == "knife") knife = &e;
  ASSERT_NE(knife, nullptr);
  const Batch batch = make_batch({knife}, data.src_vocab(), data.tgt_vocab(), data.src_steps(),
                                 data.tgt_steps(), data.task());
  EXPECT_EQ(batch.tgt_valid_len.item(), 4);  // N AY F <eos>
  EXPECT_EQ(batch.src_valid_len.item(), 6);  // k n i f e <eos>
  EXPECT_EQ(data.tgt_vocab().token(static_cast<int64_t>(batch.tgt.to_vector()[1])), "AY");
}

// max_length keeps the short examples of every split and sizes the steps to
// them; words the whole dictionary has are left out, not cut.
TEST(G2pSplit, MaxLengthKeepsShortExamples) {
  DatasetOptions options;
  options.task = "g2p";
  options.dict_path = sample_path();
  options.max_length = 6;
  const Dataset data = make_dataset(options);
  EXPECT_LE(data.src_steps(), 7);
  EXPECT_LE(data.tgt_steps(), 7);
  const Dataset all = make_dataset([&] {
    DatasetOptions every = options;
    every.max_length = 0;
    return every;
  }());
  for (const auto* split : {&data.train(), &data.dev(), &data.heldout()}) {
    for (const Example& e : *split) {
      EXPECT_LE(e.source.size(), 6u) << e.source;
      for (const std::string& answer : e.answers()) {
        EXPECT_LE(tokenize(answer, Tokenization::Phonemes).size(), 6u) << e.source;
      }
    }
  }
  EXPECT_GT(data.train().size(), 0u);
  EXPECT_LT(data.train().size(), all.train().size());
  options.max_length = -1;
  EXPECT_THROW(make_dataset(options), Error);
}

TEST(G2pScore, EditDistance) {
  const auto d = [](const std::string& a, const std::string& b) {
    return edit_distance(tokenize(a, Tokenization::Phonemes), tokenize(b, Tokenization::Phonemes));
  };
  EXPECT_EQ(d("N AY F", "N AY F"), 0);
  EXPECT_EQ(d("", "N AY F"), 3);
  EXPECT_EQ(d("N AY F", ""), 3);
  EXPECT_EQ(d("K N AY F", "N AY F"), 1);  // a deletion
  EXPECT_EQ(d("N IY F", "N AY F"), 1);    // a substitution
  EXPECT_EQ(d("K AH L AH N EH L", "K ER N AH L"), 4);
  EXPECT_EQ(d("AY F N", "N AY F"), 2);
}

// WER counts a word right when the output is any pronunciation; PER counts the
// edits to the nearest one over that one's length.
TEST(G2pScore, WerAndPerWithAlternates) {
  Example read, knife, colonel;
  read.source = "read";
  read.target = "R EH D";
  read.alternatives = {"R IY D"};
  knife.source = "knife";
  knife.target = "N AY F";
  colonel.source = "colonel";
  colonel.target = "K ER N AH L";
  colonel.alternatives = {"K AH L AH N EH L"};
  const PronunciationScores s =
      score_pronunciations({"R IY D", "K N AY F", "K AH L AH N AH L"}, {read, knife, colonel});
  EXPECT_EQ(s.words, 3);
  EXPECT_EQ(s.wrong_words, 2);
  EXPECT_DOUBLE_EQ(s.wer, 2.0 / 3);
  ASSERT_EQ(s.per_word.size(), 3u);
  EXPECT_EQ(s.per_word[0].distance, 0);
  EXPECT_EQ(s.per_word[0].nearest, 1u);  // the alternate
  EXPECT_EQ(s.per_word[1].distance, 1);
  EXPECT_EQ(s.per_word[2].distance, 1);  // to K AH L AH N EH L (7), not K ER N AH L
  EXPECT_EQ(s.per_word[2].nearest, 1u);
  EXPECT_EQ(s.edits, 2);
  EXPECT_EQ(s.reference_phonemes, 3 + 3 + 7);
  EXPECT_DOUBLE_EQ(s.per, 2.0 / 13);
  EXPECT_TRUE(throws_error(
      [&] {
        score_pronunciations({"A"}, {read, knife});
      },
      {"1 outputs and 2 examples"}));
}

// A small model on the sample: the loss falls within a few seconds, the
// outputs are phonemes joined by spaces, and unknown letters are named.
TEST(G2pTraining, LossFallsOnTheSample) {
  manual_seed(0);
  DatasetOptions options;
  options.task = "g2p";
  options.dict_path = sample_path();
  const Dataset data = make_dataset(options);
  ModelConfig config;
  config.embed_size = 16;
  config.num_hiddens = 32;
  config.num_layers = 1;
  config.dropout = 0;
  Translator translator = make_translator(config, data);
  TrainOptions train;
  train.steps = 150;
  train.batch_size = 32;
  train.lr = 0.01;
  std::vector<double> losses;
  train_seq2seq(translator, data, train, [&](const StepInfo& s) { losses.push_back(s.loss); });
  const auto mean = [&](size_t begin) {
    double sum = 0;
    for (size_t i = begin; i < begin + 10; ++i) sum += losses[i];
    return sum / 10;
  };
  EXPECT_LT(mean(losses.size() - 10), 0.6 * mean(0))
      << mean(0) << " -> " << mean(losses.size() - 10);
  const std::vector<Translation> out = translate(translator, {"knife", "box"});
  for (const Translation& t : out) {
    for (const std::string& phoneme : tokenize(t.output, Tokenization::Phonemes))
      EXPECT_TRUE(translator.tgt_vocab.contains(phoneme)) << t.output;
    EXPECT_EQ(t.output.find("  "), std::string::npos) << t.output;
  }
  const Evaluation e = evaluate(translator, data.dev());
  EXPECT_EQ(e.figure("words"), 24);
  EXPECT_DOUBLE_EQ(e.accuracy, 1 - e.figure("wer"));
  EXPECT_TRUE(throws_error([&] { translate(translator, {"caf\xc3\xa9"}); },
                           {"unknown character '\xc3\xa9'", "\"caf\xc3\xa9\""}));
}

TEST(G2pTraining, BestParametersKeepsTheLowestScore) {
  manual_seed(0);
  nn::Linear layer(2, 2);
  BestParameters best(layer);
  EXPECT_TRUE(throws_error([&] { best.restore(); }, {"offer() never ran"}));
  EXPECT_TRUE(best.offer(0.5, 10));
  const std::vector<double> kept = layer.weight.to_vector();
  layer.load_state_dict({{"weight", zeros({2, 2})}}, /*strict=*/false);
  ASSERT_NE(layer.weight.to_vector(), kept);
  EXPECT_FALSE(best.offer(0.5, 20));  // a tie keeps the first
  EXPECT_FALSE(best.offer(0.7, 30));
  best.restore();
  EXPECT_EQ(layer.weight.to_vector(), kept);
  EXPECT_EQ(best.step(), 10);
  EXPECT_TRUE(best.offer(0.1, 40));
  EXPECT_EQ(best.step(), 40);
}

}  // namespace
}  // namespace ag::translate
