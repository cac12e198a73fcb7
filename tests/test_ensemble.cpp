// translate/: an ensemble of models (ensemble.h). Its decoder's output is
// log((1/N) sum_k softmax(member k's logits)), checked against the members
// run one by one, for a seq2seq and a Transformer together (their states
// differ in shape and kind); a float64 gradcheck through both; greedy and
// beam search over it, step by step, give what the whole sequence scores;
// the two shipped g2p models load as one, pronounce alike on one and two
// threads; and bad input is an ag::Error.
#include "attograd/translate/ensemble.h"

#include <cmath>
#include <string>
#include <vector>

#include "attograd/nn/seq2seq.h"
#include "attograd/nn/transformer.h"
#include "attograd/translate/predict.h"
#include "attograd/translate/pronouncer.h"
#include "test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

constexpr int64_t kSrcVocab = 7, kTgtVocab = 6;

// A bidirectional additive seq2seq and a Transformer, float64, no dropout.
std::vector<std::unique_ptr<nn::EncoderDecoder>> two_members(uint64_t seed) {
  manual_seed(seed);
  std::vector<std::unique_ptr<nn::EncoderDecoder>> members;
  members.push_back(
      nn::make_bahdanau_seq2seq(kSrcVocab, kTgtVocab, 3, 4, 2, 0.0, "additive", true));
  members.push_back(nn::make_transformer(kSrcVocab, kTgtVocab, 4, 6, 2, 1, 0.0));
  for (auto& m : members) {
    m->to(kFloat64);
    m->eval();
  }
  return members;
}

const Tensor kSrc = tensor({3, 4, 5, 2, 6, 3, 2, 0}, {2, 4}, kInt64);
const Tensor kSrcValid = testing::lens({4, 3});
const Tensor kTgt = tensor({1, 4, 3, 1, 5, 5}, {2, 3}, kInt64);

// log((1/N) sum_k softmax(logits_k)) from each member's own forward.
Tensor reference_log_probs(std::vector<nn::EncoderDecoder*> members, const Tensor& tgt) {
  Tensor total;
  for (nn::EncoderDecoder* m : members) {
    const Tensor p = softmax(m->forward(kSrc, tgt, kSrcValid), 2);
    total = total.defined() ? total + p : p;
  }
  return log(total * (1.0 / static_cast<double>(members.size())));
}

TEST(EnsembleTest, ForwardIsTheLogOfTheMembersMeanProbability) {
  auto members = two_members(5);
  std::vector<nn::EncoderDecoder*> raw{members[0].get(), members[1].get()};
  auto ensemble = make_ensemble(std::move(members));
  ensemble->eval();
  NoGradGuard no_grad;
  const Tensor expected = reference_log_probs(raw, kTgt);
  const Tensor got = ensemble->forward(kSrc, kTgt, kSrcValid);  // [2, 3, 6]
  ASSERT_EQ(got.shape(), (Shape{2, 3, kTgtVocab}));
  EXPECT_LT(testing::max_abs_diff(got, expected), 1e-12);
  // Each row a distribution already: its log_softmax is itself.
  EXPECT_LT(testing::max_abs_diff(log_softmax(got, 2), got), 1e-12);
  // The alignment: the members' mean.
  Tensor align = raw[0]->decoder().alignment() + raw[1]->decoder().alignment();
  ensemble->forward(kSrc, kTgt, kSrcValid);
  EXPECT_LT(testing::max_abs_diff(ensemble->decoder().alignment(), align * 0.5), 1e-12);

  // One step at a time through the state (the seq2seq's hidden state, the
  // Transformer's key_values) gives the whole sequence's rows.
  nn::DecoderState state =
      ensemble->decoder().init_state(ensemble->encoder().forward(kSrc, kSrcValid), kSrcValid);
  for (int64_t t = 0; t < kTgt.size(1); ++t) {
    const Tensor step = ensemble->decoder().forward(kTgt.narrow(1, t, 1), state);  // [2, 1, 6]
    EXPECT_LT(testing::max_abs_diff(step, expected.narrow(1, t, 1)), 1e-12) << "step " << t;
  }
}

TEST(EnsembleTest, Gradcheck) {
  auto members = two_members(6);
  auto& seq2seq = *members[0];
  auto& transformer = *members[1];
  std::vector<Tensor*> slots{&seq2seq.parameter("encoder.embedding.weight"),
                             &seq2seq.parameter("decoder.dense.weight"),
                             &transformer.parameter("decoder.dense.weight"),
                             &transformer.parameter("encoder.embedding.weight")};
  auto ensemble = make_ensemble(std::move(members));
  std::vector<Tensor> inputs;
  for (Tensor* slot : slots) inputs.push_back(*slot);
  const Tensor labels = tensor({4, 3, 2, 5, 5, 2}, {2, 3}, kInt64);
  const Tensor tgt_valid = testing::lens({3, 2});
  auto fn = [&](const std::vector<Tensor>& in) {
    for (size_t i = 0; i < slots.size(); ++i) *slots[i] = in[i];
    return nn::masked_softmax_ce_loss(ensemble->forward(kSrc, kTgt, kSrcValid), labels, tgt_valid);
  };
  EXPECT_TRUE(testing::grad_ok(fn, inputs));
}

// Each token's log P from greedy and beam search (the state carried and
// reordered step by step) is what the ensemble gives the whole output at
// once; beam K = 1 is greedy.
TEST(EnsembleTest, GreedyAndBeamScoreWhatTheWholeSequenceScores) {
  auto ensemble = make_ensemble(two_members(7));
  const int64_t steps = 5;
  const auto greedy = predict_seq2seq(*ensemble, kSrc, kSrcValid, steps);
  const auto beams = beam_search(*ensemble, kSrc, kSrcValid, steps, {3, 0.75});
  const auto beam1 = beam_search(*ensemble, kSrc, kSrcValid, steps, {1, 0.75});
  NoGradGuard no_grad;
  const auto check = [&](int64_t b, const std::vector<int64_t>& output,
                         const std::vector<double>& token_log_probs, const std::string& what) {
    std::vector<double> in{static_cast<double>(Vocab::kBos)};
    for (size_t i = 0; i + 1 < token_log_probs.size(); ++i)
      in.push_back(static_cast<double>(output.at(i)));
    const auto L = static_cast<int64_t>(in.size());
    const Tensor log_probs = ensemble->forward(kSrc.narrow(0, b, 1), tensor(in, {1, L}, kInt64),
                                               kSrcValid.narrow(0, b, 1));
    const std::vector<double> values = log_probs.to_vector();  // [1, L, V]
    for (size_t t = 0; t < static_cast<size_t>(L); ++t) {
      const int64_t token = t < output.size() ? output[t] : Vocab::kEos;
      EXPECT_NEAR(token_log_probs[t], values[t * kTgtVocab + static_cast<size_t>(token)], 1e-9)
          << what << " input " << b << " step " << t;
    }
  };
  for (int64_t b = 0; b < 2; ++b) {
    check(b, greedy[b].output, greedy[b].token_log_probs, "greedy");
    ASSERT_GE(beams[b].size(), 2u);
    for (const BeamCandidate& c : beams[b]) check(b, c.output, c.token_log_probs, "beam");
    EXPECT_EQ(beam1[b][0].output, greedy[b].output);
  }
}

// The two shipped g2p models (additive and multihead) as one: their
// translator, its answers on two threads (each a replica of the ensemble)
// as on one, and one file through load_ensemble as load_translator.
TEST(EnsembleTest, TheShippedModelsPronounceTogether) {
  const std::string additive = testing::source_path(kShippedG2pModels[0]);
  const std::string multihead = testing::source_path(kShippedG2pModels[1]);
  Translator both = load_ensemble({additive, multihead});
  EXPECT_EQ(both.members.size(), 2u);
  EXPECT_EQ(both.members[1].attention, "multihead");
  const std::vector<std::string> words{"knife",      "box",      "thought",  "queue",   "xylophone",
                                       "psychology", "attograd", "ensemble", "average", "pony",
                                       "window",     "river",    "castle",   "knight"};
  Pronouncer pronouncer(std::move(both));
  const PronounceOptions options{.nbest = 2, .beam = 3, .batch_size = 4};
  std::vector<Pronunciation> one_thread, two_threads;
  {
    set_num_threads(1);
    one_thread = pronouncer.pronounce(words, options);
    set_num_threads(2);
    two_threads = pronouncer.pronounce(words, options);
    set_num_threads(1);
  }
  ASSERT_EQ(one_thread.size(), words.size());
  for (size_t i = 0; i < words.size(); ++i) {
    ASSERT_EQ(one_thread[i].variants.size(), two_threads[i].variants.size()) << words[i];
    for (size_t v = 0; v < one_thread[i].variants.size(); ++v) {
      EXPECT_EQ(one_thread[i].variants[v].phonemes, two_threads[i].variants[v].phonemes);
      EXPECT_NEAR(one_thread[i].variants[v].log_prob, two_threads[i].variants[v].log_prob, 1e-9);
    }
  }
  EXPECT_EQ(one_thread[0].variants[0].phonemes, "N AY F");

  Translator alone = load_ensemble({additive});
  Translator direct = load_translator(additive);
  EXPECT_TRUE(alone.members.empty());
  const auto a = translate(alone, words);
  const auto d = translate(direct, words);
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(a[i].output, d[i].output) << words[i];
}

TEST(EnsembleTest, BadInputIsAClearError) {
  EXPECT_TRUE(throws_error([] { make_ensemble({}); }, {"make_ensemble", "at least one"}));
  EXPECT_TRUE(throws_error([] { load_ensemble({}); }, {"load_ensemble", "no model"}));

  const testing::ScratchDir dir("ensemble");
  const std::string g2p = testing::source_path(kShippedG2pModels[0]);
  // A dates model: another task, other vocabularies.
  const Dataset dates = make_dataset({"dates", 50, 10, 1});
  ModelConfig config;
  config.embed_size = config.num_hiddens = 4;
  const std::string dates_file = dir / "dates.npz";
  save_translator(dates_file, make_translator(config, dates));
  EXPECT_TRUE(throws_error(
      [&] {
        load_ensemble({g2p, dates_file});
      },
      {"load_ensemble", g2p, dates_file, "differ in task", "'g2p'", "'dates'"}));
  // A file that is not a model: load_translator's error, naming it.
  const std::string missing = dir / "missing.npz";
  EXPECT_TRUE(throws_error([&] { load_ensemble({g2p, missing}); }, {missing}));
  // An ensemble is not one file.
  const Translator both = load_ensemble({dates_file, dates_file});
  EXPECT_TRUE(throws_error([&] { save_translator(dir / "both.npz", both); },
                           {"save_translator", "ensemble of 2 models"}));
}

}  // namespace
}  // namespace ag::translate
