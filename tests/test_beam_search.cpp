// Beam search (translate/predict.h) against a plain Python beam search over
// PyTorch twins' log probabilities (scripts/make_beam_fixtures.py): the
// bidirectional seq2seq and d2l's Transformer, K = 1, 3, 10: every
// candidate's tokens, whether it finished, log P and length-normalised score.
// Then K = 1 against greedy prediction, beam search against exhaustive
// search over every sequence of a tiny model, how often the source is
// copied, and bad input.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "attograd/translate/predict.h"
#include "attograd/translate/train.h"
#include "test_util.h"

namespace ag {
namespace {

using testing::fixture;
using testing::fixture_tensor;
using testing::throws_error;
using translate::beam_search;
using translate::BeamCandidate;

constexpr const char* kFile = "beam_search.npz";
constexpr int64_t kSteps = 6;

std::unique_ptr<nn::EncoderDecoder> fixture_model(const std::string& name) {
  std::unique_ptr<nn::EncoderDecoder> model;
  if (name == "bidirectional")
    model = nn::make_bahdanau_seq2seq(11, 12, 8, 8, 2, 0.0, "additive",
                                      /*bidirectional=*/true);
  else
    model = nn::make_transformer(11, 12, 8, 16, 2, 2, 0.0);
  model->to(kFloat64);
  const std::string prefix = name + ".param.";
  std::map<std::string, Tensor> state;
  for (const auto& [key, value] : fixture(kFile))
    if (key.rfind(prefix, 0) == 0) state[key.substr(prefix.size() + 3)] = value;
  model->load_state_dict(state, /*strict=*/true);
  return model;
}

TEST(BeamSearchTest, MatchesAPlainPythonBeamSearchOverTheTorchTwins) {
  for (const std::string name : {"bidirectional", "transformer"}) {
    auto model = fixture_model(name);
    const Tensor& src = fixture_tensor(kFile, name + ".src");
    const Tensor& valid = fixture_tensor(kFile, name + ".src_valid_len");
    for (const int64_t K : {1, 3, 10}) {
      SCOPED_TRACE(name + " K=" + std::to_string(K));
      const std::string k = name + ".k" + std::to_string(K) + ".";
      const std::vector<double> tokens = fixture_tensor(kFile, k + "tokens").to_vector(),
                                finished = fixture_tensor(kFile, k + "finished").to_vector(),
                                log_prob = fixture_tensor(kFile, k + "log_prob").to_vector(),
                                score = fixture_tensor(kFile, k + "score").to_vector();
      const auto result = beam_search(*model, src, valid, kSteps, {K, 0.75});
      ASSERT_EQ(result.size(), 3u);
      int64_t compared = 0, finished_count = 0;
      for (size_t b = 0; b < result.size(); ++b) {
        for (int64_t j = 0; j < K; ++j) {
          const size_t at = b * static_cast<size_t>(K) + static_cast<size_t>(j);
          if (std::isnan(score[at])) {  // Python had no candidate j
            EXPECT_LE(static_cast<int64_t>(result[b].size()), j);
            continue;
          }
          ASSERT_LT(j, static_cast<int64_t>(result[b].size())) << "input " << b;
          const BeamCandidate& c = result[b][static_cast<size_t>(j)];
          std::vector<int64_t> expected;
          for (int64_t s = 0; s < kSteps; ++s)
            if (const double t = tokens[at * kSteps + static_cast<size_t>(s)]; t >= 0)
              expected.push_back(static_cast<int64_t>(t));
          EXPECT_EQ(c.output, expected) << "input " << b << " candidate " << j;
          EXPECT_EQ(c.finished, finished[at] == 1) << "input " << b << " candidate " << j;
          EXPECT_NEAR(c.log_prob, log_prob[at], 1e-10);
          EXPECT_NEAR(c.score, score[at], 1e-10);
          const int64_t L = static_cast<int64_t>(c.output.size()) + c.finished;
          EXPECT_EQ(c.alignment.shape(), (Shape{L, static_cast<int64_t>(valid.to_vector()[b])}));
          ++compared;
          finished_count += c.finished;
        }
      }
      EXPECT_EQ(compared, 3 * K);  // every input has K candidates here
      std::cout << "  OK " << name << " K=" << K << ": " << compared << " candidates ("
                << finished_count << " finished) equal Python's\n";
    }
  }
}

// K = 1 is greedy search: the same outputs and alignments as predict_seq2seq.
TEST(BeamSearchTest, BeamOfOneIsGreedy) {
  for (const std::string name : {"bidirectional", "transformer"}) {
    auto model = fixture_model(name);
    const Tensor& src = fixture_tensor(kFile, name + ".src");
    const Tensor& valid = fixture_tensor(kFile, name + ".src_valid_len");
    const auto greedy = translate::predict_seq2seq(*model, src, valid, kSteps);
    const auto beam = beam_search(*model, src, valid, kSteps, {1, 0.75});
    for (size_t b = 0; b < greedy.size(); ++b) {
      ASSERT_EQ(beam[b].size(), 1u);
      EXPECT_EQ(beam[b][0].output, greedy[b].output) << name << " input " << b;
      EXPECT_EQ(beam[b][0].finished, greedy[b].finished);
      EXPECT_TRUE(testing::all_close(beam[b][0].alignment, greedy[b].alignment, 1e-12, 0));
    }
  }
}

// With K at least every sequence's count, beam search keeps every sequence:
// its best candidate is the best of an exhaustive search over all sequences
// of at most kShortSteps tokens, scored the same way.
TEST(BeamSearchTest, LargeBeamEqualsExhaustiveSearch) {
  manual_seed(4);
  // Tokens 0..5: <pad> 0, <bos> 1, <eos> 2 and <unk> 3, which a beam never
  // says, and two others.
  const int64_t V = 6, steps = 3;
  auto model = nn::make_bahdanau_seq2seq(6, V, 4, 4, 1, 0.0, "additive", true);
  model->to(kFloat64);
  model->eval();
  const Tensor src = tensor({3, 4, 2}, {1, 3}, kInt64), valid = testing::lens({3});
  // log P of one next token after `prefix`, by running the whole prefix.
  const auto next_log_probs = [&](const std::vector<int64_t>& prefix) {
    std::vector<double> in{1};
    for (int64_t t : prefix) in.push_back(static_cast<double>(t));
    const Tensor logits =
        (*model)(src, tensor(in, {1, static_cast<int64_t>(in.size())}, kInt64), valid);
    return log_softmax(narrow(logits, 1, static_cast<int64_t>(in.size()) - 1, 1), 2).to_vector();
  };
  double best = -INFINITY;
  std::vector<int64_t> best_output;
  std::function<void(std::vector<int64_t>&, double)> visit = [&](std::vector<int64_t>& prefix,
                                                                 double log_p) {
    const std::vector<double> lp = next_log_probs(prefix);
    for (int64_t v = 0; v < V; ++v) {
      if (v == translate::Vocab::kPad || v == translate::Vocab::kBos || v == translate::Vocab::kUnk)
        continue;
      const double total = log_p + lp[static_cast<size_t>(v)];
      if (v == translate::Vocab::kEos) {  // a finished sequence
        const double score = total / std::pow(static_cast<double>(prefix.size() + 1), 0.75);
        if (score > best) best = score, best_output = prefix;
      } else if (static_cast<int64_t>(prefix.size()) + 1 < steps) {
        prefix.push_back(v);
        visit(prefix, total);
        prefix.pop_back();
      }
    }
  };
  std::vector<int64_t> empty;
  visit(empty, 0.0);
  // 3 + 3^2 + 3^3 speakable sequences at most: K = 39 keeps them all.
  const auto result = beam_search(*model, src, valid, steps, {39, 0.75});
  ASSERT_FALSE(result[0].empty());
  ASSERT_TRUE(result[0][0].finished);
  EXPECT_EQ(result[0][0].output, best_output);
  EXPECT_NEAR(result[0][0].score, best, 1e-12);
}

// The model's own decoder, watched: for each select_state call, whether it
// replaced the source (enc_outputs, the keys' memory), a copy of every row's.
class SourceCopyCounter : public nn::Decoder {
 public:
  explicit SourceCopyCounter(nn::Decoder& inner) : Decoder("SourceCopyCounter"), inner_(inner) {}
  nn::DecoderState init_state(const std::vector<Tensor>& enc_outputs, const Tensor& lens) override {
    return inner_.init_state(enc_outputs, lens);
  }
  Tensor forward(const Tensor& tgt, nn::DecoderState& state) override {
    return inner_.forward(tgt, state);
  }
  Tensor alignment() const override { return inner_.alignment(); }
  void select_state(nn::DecoderState& state, const Tensor& rows) const override {
    const TensorImpl* source = state.tensors[0].impl();
    inner_.select_state(state, rows);
    copied.push_back(state.tensors[0].impl() != source);
  }
  mutable std::vector<bool> copied;  // one a call

 private:
  nn::Decoder& inner_;
};

// The model's own encoder, for a model built around the watched decoder.
class ForwardEncoder : public nn::Encoder {
 public:
  explicit ForwardEncoder(nn::Encoder& inner) : Encoder("ForwardEncoder"), inner_(inner) {}
  std::vector<Tensor> forward(const Tensor& src, const Tensor& lens) override {
    return inner_.forward(src, lens);
  }

 private:
  nn::Encoder& inner_;
};

// Each input keeps its rows while its hypotheses end (the spare ones idle),
// so the decoder copies the source when the beam first widens and when the
// idle rows pass a quarter, not whenever a hypothesis ends (predict.cpp's
// next_rows): on the fixture's 3 inputs hypotheses end at every one of the 6
// steps, and the source is copied twice (3 and 4 times at K = 3 and 10 when
// the batch was compacted whenever a hypothesis ended).
TEST(BeamSearchTest, CopiesTheSourceOnlyWhenTheRowsAreCompacted) {
  auto trained = fixture_model("bidirectional");
  auto watched = std::make_unique<SourceCopyCounter>(trained->decoder());
  SourceCopyCounter* counter = watched.get();
  nn::EncoderDecoder model(std::make_unique<ForwardEncoder>(trained->encoder()),
                           std::move(watched));
  const Tensor& src = fixture_tensor(kFile, "bidirectional.src");
  const Tensor& valid = fixture_tensor(kFile, "bidirectional.src_valid_len");
  for (const int64_t K : {3, 10}) {
    SCOPED_TRACE("K=" + std::to_string(K));
    counter->copied.clear();
    const auto result = beam_search(model, src, valid, kSteps, {K, 0.75});
    // A candidate that finished with L tokens ended at step L + 1.
    std::set<size_t> ending_steps;
    for (const auto& candidates : result)
      for (const BeamCandidate& c : candidates)
        if (c.finished) ending_steps.insert(c.output.size() + 1);
    EXPECT_EQ(ending_steps.size(), static_cast<size_t>(kSteps));
    ASSERT_EQ(counter->copied.size(), static_cast<size_t>(kSteps));
    EXPECT_TRUE(counter->copied[0]);  // 1 row an input -> its hypotheses
    EXPECT_EQ(std::count(counter->copied.begin(), counter->copied.end(), true), 2);
  }
}

TEST(BeamSearchTest, RestoresTrainingModeAndRejectsBadInput) {
  auto model = fixture_model("bidirectional");
  const Tensor& src = fixture_tensor(kFile, "bidirectional.src");
  const Tensor& valid = fixture_tensor(kFile, "bidirectional.src_valid_len");
  model->train();
  beam_search(*model, src, valid, 2, {2, 0.75});
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE(throws_error(
      [&] {
        beam_search(*model, src, valid, 2, {0, 0.75});
      },
      {"beam_search", "beam size 0"}));
  EXPECT_TRUE(throws_error(
      [&] {
        beam_search(*model, src, valid, 2, {2, -1});
      },
      {"beam_search", "alpha"}));
  EXPECT_TRUE(throws_error(
      [&] {
        beam_search(*model, src, valid, 0, {2, 0.75});
      },
      {"beam_search", "num_steps 0"}));
  EXPECT_TRUE(throws_error([&] { beam_search(*model, reshape(src, {-1}), valid, 2); },
                           {"beam_search", "[B, T]", "[18]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        beam_search(*model, src, testing::lens({1, 2}), 2);
      },
      {"beam_search", "src_valid_len", "[3, 6]"}));
}

}  // namespace
}  // namespace ag
