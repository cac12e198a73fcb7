// How a letters-to-sounds model attends (translate/attention_measures.h):
// entropy and monotonicity of hand-made alignments; g2p_align.py's TSV read
// and refused; the alignment agreement of a model whose attention is uniform
// (worked by hand: every peak is the first letter), and of a random model
// against the decoder's own one-step-at-a-time rows.
#include <algorithm>
#include <cmath>
#include <fstream>

#include "attograd/translate/attention_measures.h"
#include "test_util.h"
#include "translate_test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

Translation aligned(const std::string& input, std::vector<std::string> outputs,
                    std::vector<double> weights) {
  Translation t;
  t.input = input;
  t.output_tokens = std::move(outputs);
  const auto rows = static_cast<int64_t>(t.output_tokens.size());
  t.alignment =
      tensor(std::move(weights), {rows, static_cast<int64_t>(input.size()) + 1}, kFloat64);
  return t;
}

double plogp(double p) {
  return p * std::log(p);
}

TEST(AttentionMeasures, EntropyAndMonotonicityByHand) {
  // "ab": rows A (0.5, 0.5, 0) and B (0, 1, 0); the <eos> row is no phoneme's.
  // Peaks 0 (the first of equals) then 1: forward.
  // "kn", no <eos> (ran out of steps): rows (0.1, 0.8, 0.1), (0.9, 0.05, 0.05).
  // Peaks 1 then 0: backward.
  const std::vector<Translation> translations{
      aligned("ab", {"A", "B", "<eos>"}, {0.5, 0.5, 0, 0, 1, 0, 0.2, 0.3, 0.5}),
      aligned("kn", {"N", "A"}, {0.1, 0.8, 0.1, 0.9, 0.05, 0.05})};
  const AttentionMeasures m = attention_measures(translations);
  EXPECT_EQ(m.rows, 4);
  EXPECT_EQ(m.pairs, 2);
  const double entropy =
      (std::log(2.0) + 0 - (2 * plogp(0.1) + plogp(0.8)) - (plogp(0.9) + 2 * plogp(0.05))) / 4;
  EXPECT_NEAR(m.entropy, entropy, 1e-15);
  EXPECT_EQ(m.monotonic, 0.5);
  const AttentionMeasures none = attention_measures({});
  EXPECT_EQ(none.rows, 0);
  EXPECT_TRUE(std::isnan(none.entropy) && std::isnan(none.monotonic));
  Translation wrong = translations[0];
  wrong.output_tokens.pop_back();
  EXPECT_TRUE(throws_error([&] { attention_measures({wrong}); },
                           {"attention_measures", "'ab'", "[3, 3]", "2 output tokens"}));
}

std::string tsv_file(const ag::testing::ScratchDir& dir, const std::string& name,
                     const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

// The model's words: ab, ba, kn (and bb, whose phoneme Q the model lacks);
// aaaaa has no alignment (an empty third column); zz is no word of ours.
const char* const kReference =
    "ab\tA B\t0 1\nkn\tN\t0+1\r\nba\tB A\t1 0\naaaaa\tA A A A A A A A A A A\t\n"
    "bb\tQ\t0+1\nzz\tA\t0\n";

TEST(AttentionMeasures, ReadsTheAlignerTsvAndRefusesOtherFiles) {
  const ag::testing::ScratchDir dir("attention_measures_tsv");
  const AlignmentReference ref = read_alignment_reference(tsv_file(dir, "ok.tsv", kReference));
  ASSERT_EQ(ref.pronunciations.size(), 5u);
  EXPECT_EQ(ref.unaligned, 1);
  EXPECT_EQ(ref.pronunciations[1].word, "kn");
  EXPECT_EQ(ref.pronunciations[1].phonemes, std::vector<std::string>{"N"});
  EXPECT_EQ(ref.pronunciations[1].letters, (std::vector<std::vector<int64_t>>{{0, 1}}));
  EXPECT_EQ(ref.pronunciations[2].letters, (std::vector<std::vector<int64_t>>{{1}, {0}}));
  const auto refused = [&](const std::string& text, const std::vector<std::string>& fragments) {
    const std::string path = tsv_file(dir, "bad.tsv", text);
    std::vector<std::string> expected{"read_alignment_reference", path};
    expected.insert(expected.end(), fragments.begin(), fragments.end());
    return throws_error([&] { read_alignment_reference(path); }, expected);
  };
  EXPECT_TRUE(refused("ab\tA B\t0 1\nab A B 0 1\n", {":2:", "got 1 columns"}));
  EXPECT_TRUE(refused("ab\tA B\t0\n", {":1:", "2 phonemes and 1 letter groups"}));
  EXPECT_TRUE(refused("ab\tA  B\t0 1 1\n", {":1:"}));
  EXPECT_TRUE(refused("ab\tA B\t0 2\n", {":1:", "'2' is not letters of 'ab'"}));
  EXPECT_TRUE(refused("ab\tA B\t0 x+1\n", {"'x+1'"}));
  EXPECT_TRUE(refused("aaaaa\tA A A A A A A A A A A\t\n", {"no aligned pronunciation"}));
  EXPECT_TRUE(throws_error([&] { read_alignment_reference(dir / "missing.tsv"); },
                           {"read_alignment_reference", "missing.tsv", "g2p_align.py"}));
}

// A g2p translator of letters a, b, k, n and phonemes A, B, N, made by hand.
Translator letters_model(const std::string& attention) {
  Translator t;
  t.config = one_layer_config(4);
  t.config.attention = attention;
  t.config.dropout = 0;
  t.task = find_task("g2p").format;
  const auto& reserved = Vocab::reserved_tokens();
  std::vector<std::string> letters = reserved, phonemes = reserved;
  for (const char* c : {"a", "b", "k", "n"}) letters.emplace_back(c);
  for (const char* p : {"A", "B", "N"}) phonemes.emplace_back(p);
  t.src_vocab = Vocab::from_tokens(letters);
  t.tgt_vocab = Vocab::from_tokens(phonemes);
  t.src_steps = 6;
  t.tgt_steps = 5;
  manual_seed(3);
  t.model = make_model(t.config, t.src_vocab.size(), t.tgt_vocab.size());
  return t;
}

// An encoder whose GRU is all zeros outputs zeros (h = z h + (1 - z) tanh(0)
// from h = 0): dot's scores are all 0 and every row is uniform over the
// word's letters and <eos>, its peak the first letter. So a phoneme agrees
// exactly when letter 0 spells it: ab's A (0) yes, B (1) no; kn's N (0+1)
// yes; ba's B (1) no, A (0) yes: 3 of 5. bb's Q is no phoneme of the model
// (skipped); zz is not asked for.
TEST(AttentionMeasures, AgreementOfUniformAttentionByHand) {
  const ag::testing::ScratchDir dir("attention_measures_uniform");
  const AlignmentReference ref = read_alignment_reference(tsv_file(dir, "r.tsv", kReference));
  Translator t = letters_model("dot");
  std::map<std::string, Tensor> zero;
  for (const auto& [name, value] : t.model->state_dict())
    if (name.starts_with("encoder.rnn.")) zero[name] = zeros_like(value);
  t.model->load_state_dict(zero, /*strict=*/false);
  t.model->train();
  for (const int64_t batch : {1000, 2}) {
    const AlignmentAgreement a = alignment_agreement(t, ref, {"ab", "kn", "ba", "bb"}, batch);
    EXPECT_EQ(a.pronunciations, 3);
    EXPECT_EQ(a.phonemes, 5);
    EXPECT_EQ(a.agreeing, 3);
    EXPECT_EQ(a.agreement, 0.6);
    EXPECT_EQ(a.skipped, 1);
  }
  EXPECT_TRUE(t.model->is_training());  // as it was
}

// A random model's rows, whole-sequence and batched, are the decoder's own
// rows fed one reference phoneme at a time, word by word.
TEST(AttentionMeasures, AgreementRowsAreTheDecodersOwn) {
  const ag::testing::ScratchDir dir("attention_measures_random");
  const AlignmentReference ref = read_alignment_reference(tsv_file(dir, "r.tsv", kReference));
  for (const char* attention : {"additive", "general_scaled"}) {
    SCOPED_TRACE(attention);
    Translator t = letters_model(attention);
    int64_t agreeing = 0;
    for (const AlignedPronunciation& p : ref.pronunciations) {
      if (p.word == "bb" || p.word == "zz") continue;
      NoGradGuard no_grad;
      t.model->eval();
      auto [src, lens] = encode_sources({p.word}, t.src_vocab, t.src_steps);
      nn::DecoderState state =
          t.model->decoder().init_state(t.model->encoder().forward(src, lens), lens);
      int64_t token = Vocab::kBos;
      for (size_t i = 0; i < p.phonemes.size(); ++i) {
        t.model->decoder().forward(tensor({static_cast<double>(token)}, {1, 1}, kInt64), state);
        const Tensor row = narrow(t.model->decoder().alignment().reshape({-1}), 0, 0,
                                  static_cast<int64_t>(p.word.size()) + 1);
        const auto letter = static_cast<int64_t>(argmax(row, 0).item());
        agreeing += std::count(p.letters[i].begin(), p.letters[i].end(), letter);
        token = t.tgt_vocab.index(p.phonemes[i]);
      }
    }
    EXPECT_EQ(alignment_agreement(t, ref, {"ab", "kn", "ba", "bb", "zz"}).agreeing, agreeing);
  }
  Translator dates;
  dates.task = find_task("dates").format;
  dates.model = letters_model("dot").model;
  EXPECT_TRUE(throws_error([&] { alignment_agreement(dates, ref, {"ab"}); },
                           {"alignment_agreement", "g2p model", "dates"}));
}

}  // namespace
}  // namespace ag::translate
