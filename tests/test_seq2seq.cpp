// d2l's seq2seq with attention (nn/seq2seq.h) against d2l's own PyTorch code
// (scripts/make_seq2seq_fixtures.py): state-dict names and order, logits,
// hidden state, each step's attention weights, MaskedSoftmaxCELoss, every
// parameter's gradient (float64 to 1e-10, float32 to 1e-5), and 20 steps of
// d2l's train_seq2seq loop (Adam + clipping) in float32; for additive and
// dot-product attention. Then a float64 gradcheck of a tiny model, one-step
// decoding against teacher forcing, d2l's xavier init, and bad input.
#include <cmath>
#include <iostream>
#include <map>
#include <string>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::fixture;
using testing::fixture_tensor;
using testing::grad_ok;
using testing::throws_error;

// The fixture model: d2l's vocabularies of 11 source and 12 target tokens,
// embed 8, hidden 8, 2 layers, dropout 0.
constexpr int64_t kSrcVocab = 11, kTgtVocab = 12, kEmbed = 8, kHiddens = 8, kLayers = 2;

struct Kind {
  std::string scoring;  // a name of the scoring-function table (nn/scoring.h)
  std::string file, name;
  bool bidirectional = false;   // Bahdanau et al.'s encoder (scripts/bahdanau_torch.py)
  int64_t heads = 1;            // multihead's
  int64_t encoder_hiddens = 0;  // the encoder's per direction (0: kHiddens)
};
// Every scoring function of the library: additive and dot with d2l's encoder
// (d2l's own code), and additive, general, multihead (2 heads) and
// general_scaled with the bidirectional one (scripts/bahdanau_torch.py);
// dot with the bidirectional one at half width (4 a direction: keys of 8).
const Kind kKinds[] = {
    {"additive", "seq2seq_additive.npz", "additive"},
    {"dot", "seq2seq_dot.npz", "dot"},
    {"additive", "seq2seq_bidirectional.npz", "bidirectional", true},
    {"general", "seq2seq_general.npz", "general", true},
    {"multihead", "seq2seq_multihead.npz", "multihead", true, 2},
    {"general_scaled", "seq2seq_general_scaled.npz", "general_scaled", true},
    {"dot", "seq2seq_dot_bidirectional.npz", "dot_bidirectional", true, 1, kHiddens / 2}};

std::unique_ptr<nn::EncoderDecoder> make_kind(const Kind& kind, double dropout = 0.0) {
  return nn::make_bahdanau_seq2seq(kSrcVocab, kTgtVocab, kEmbed, kHiddens, kLayers, dropout,
                                   kind.scoring, kind.bidirectional, kind.heads,
                                   kind.encoder_hiddens);
}

using testing::kTolerances;
using testing::Tolerance;

// The fixture's state dict, in state_dict() order: entries "param.NN.<name>".
std::vector<std::pair<std::string, Tensor>> fixture_state(const std::string& file) {
  std::vector<std::pair<std::string, Tensor>> state;
  for (const auto& [key, value] : fixture(file))  // std::map: sorted, so NN orders them
    if (key.rfind("param.", 0) == 0) state.emplace_back(key.substr(9), value);
  return state;
}

std::unique_ptr<nn::EncoderDecoder> fixture_model(const Kind& kind, DType dtype) {
  auto net = make_kind(kind);
  net->to(dtype);
  std::map<std::string, Tensor> state;
  for (const auto& [name, value] : fixture_state(kind.file)) state[name] = value;
  net->load_state_dict(state, /*strict=*/true);
  return net;
}

const Tensor& entry(const Kind& kind, const std::string& name) {
  return fixture_tensor(kind.file, name);
}

// Worst differences seen per model, dtype and quantity ("additive float64
// gradients"), printed like llm.c's test_gpt2.c.
std::map<std::string, double> worst;

::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, const Tolerance& tol,
                                 const std::string& what) {
  if (actual.defined() && actual.shape() == expected.shape()) {
    double& w = worst[what + " " + dtype_name(tol.dtype)];
    w = std::max(w, testing::max_abs_diff(actual, expected));
  }
  return all_close(actual, expected, tol.atol, tol.rtol);
}

class Seq2SeqParityTest : public ::testing::Test {
 protected:
  void SetUp() override { worst.clear(); }
  void TearDown() override {
    for (const auto& [what, w] : worst)
      std::cout << "  " << (HasFailure() ? "NOT OK " : "OK ") << what << ": max abs diff " << w
                << "\n";
  }
};

nn::Seq2SeqAttentionDecoder& decoder_of(nn::EncoderDecoder& net) {
  return dynamic_cast<nn::Seq2SeqAttentionDecoder&>(net.decoder());
}
nn::Seq2SeqEncoder& encoder_of(nn::EncoderDecoder& net) {
  return dynamic_cast<nn::Seq2SeqEncoder&>(net.encoder());
}

// ---- parity with d2l's PyTorch code ---------------------------------------------------------

TEST_F(Seq2SeqParityTest, StateDictNamesAndOrder) {
  for (const Kind& kind : kKinds) {
    const auto expected = fixture_state(kind.file);
    auto net = make_kind(kind);
    const nn::StateDict state = net->state_dict();
    ASSERT_EQ(state.size(), expected.size()) << kind.file;
    size_t i = 0;
    for (const auto& [name, value] : state) {
      EXPECT_EQ(name, expected[i].first) << kind.file << " entry " << i;
      EXPECT_EQ(value.shape(), expected[i].second.shape()) << name;
      ++i;
    }
  }
  // The additive model's attention parameters sit where d2l registers them.
  auto net = nn::make_bahdanau_seq2seq(kSrcVocab, kTgtVocab, kEmbed, kHiddens, kLayers);
  const auto named = net->named_parameters();
  EXPECT_EQ(named[9].first, "decoder.attention.W_k.weight");
  EXPECT_EQ(named.back().first, "decoder.dense.bias");
}

TEST_F(Seq2SeqParityTest, LogitsLossGradientsAndAttentionWeights) {
  for (const Kind& kind : kKinds) {
    for (const Tolerance& tol : kTolerances) {
      SCOPED_TRACE(kind.file + " " + dtype_name(tol.dtype));
      auto net = fixture_model(kind, tol.dtype);
      const Tensor &src = entry(kind, "src"), &src_valid = entry(kind, "src_valid_len");
      nn::DecoderState state =
          net->decoder().init_state(net->encoder().forward(src, src_valid), src_valid);
      const Tensor logits = net->decoder().forward(entry(kind, "dec_input"), state);
      EXPECT_TRUE(close(logits, entry(kind, "logits"), tol, kind.name + " logits"));
      EXPECT_TRUE(close(state.tensors[1], entry(kind, "hidden"), tol, kind.name + " hidden"));
      EXPECT_TRUE(close(net->decoder().alignment(), entry(kind, "attention_weights"), tol,
                        kind.name + " attention weights"));

      const Tensor loss_per_seq =
          nn::masked_softmax_ce_loss(logits, entry(kind, "labels"), entry(kind, "tgt_valid_len"));
      EXPECT_TRUE(close(loss_per_seq, entry(kind, "loss_per_seq"), tol, kind.name + " loss"));
      const Tensor loss = sum(loss_per_seq);
      EXPECT_TRUE(close(loss, entry(kind, "loss"), tol, kind.name + " loss"));
      loss.backward();
      for (const auto& [name, parameter] : net->named_parameters()) {
        ASSERT_TRUE(parameter.grad().defined()) << name;
        EXPECT_TRUE(
            close(parameter.grad(), entry(kind, "grad." + name), tol, kind.name + " gradients"))
            << name;
      }
      // The same through EncoderDecoder::forward.
      EXPECT_TRUE(close((*net)(src, entry(kind, "dec_input"), src_valid), entry(kind, "logits"),
                        tol, kind.name + " logits"));
    }
  }
}

// d2l's train_seq2seq on the fixture batch: Adam (lr 0.005), the summed loss,
// clipping to norm 1, 20 steps in float32.
TEST_F(Seq2SeqParityTest, TwentyAdamSteps) {
  for (const Kind& kind : kKinds) {
    SCOPED_TRACE(kind.file);
    auto net = fixture_model(kind, kFloat32);
    net->train();
    const std::vector<Tensor> params = net->parameters();
    optim::Adam optimizer(params, 0.005);
    const std::vector<double> expected = entry(kind, "adam_losses").to_vector();
    std::vector<double> losses;
    for (size_t step = 0; step < expected.size(); ++step) {
      optimizer.zero_grad();
      const Tensor logits =
          (*net)(entry(kind, "src"), entry(kind, "dec_input"), entry(kind, "src_valid_len"));
      const Tensor loss = sum(
          nn::masked_softmax_ce_loss(logits, entry(kind, "labels"), entry(kind, "tgt_valid_len")));
      loss.backward();
      nn::clip_grad_norm_(params, 1.0);
      optimizer.step();
      losses.push_back(loss.item());
    }
    const Tensor actual = tensor(losses, {static_cast<int64_t>(losses.size())});
    EXPECT_TRUE(close(actual, entry(kind, "adam_losses").to(kFloat32), {kFloat32, 1e-5, 0},
                      kind.name + " 20 Adam-step losses"));
    EXPECT_LT(losses.back(), losses.front() - 1.0);  // it learns
  }
}

// ---- the model on its own ---------------------------------------------------------------

// Feeding the target one step at a time with the same state (greedy
// prediction's calls) gives the teacher-forced logits, hidden state and
// alignment, step by step.
TEST(Seq2SeqTest, OneStepAtATimeEqualsTeacherForcing) {
  for (const Kind& kind : kKinds) {
    auto net = fixture_model(kind, kFloat64);
    const Tensor &src = entry(kind, "src"), &src_valid = entry(kind, "src_valid_len");
    const Tensor& tgt = entry(kind, "dec_input");
    nn::DecoderState whole =
        net->decoder().init_state(net->encoder().forward(src, src_valid), src_valid);
    const Tensor logits = net->decoder().forward(tgt, whole);
    const Tensor alignment = net->decoder().alignment();
    nn::DecoderState state =
        net->decoder().init_state(net->encoder().forward(src, src_valid), src_valid);
    for (int64_t t = 0; t < tgt.size(1); ++t) {
      const Tensor step = net->decoder().forward(narrow(tgt, 1, t, 1), state);
      EXPECT_EQ(step.shape(), (Shape{3, 1, kTgtVocab}));
      EXPECT_TRUE(all_close(step, narrow(logits, 1, t, 1), 1e-12, 0)) << kind.file << " step " << t;
      EXPECT_EQ(net->decoder().alignment().shape(), (Shape{3, 1, 6}));
      EXPECT_TRUE(all_close(net->decoder().alignment(), narrow(alignment, 1, t, 1), 1e-12, 0));
    }
    EXPECT_TRUE(all_close(state.tensors[1], whole.tensors[1], 1e-12, 0));
  }
}

// select_state keeps rows of the state (beam search): after keeping rows
// {2, 0, 0}, two decoding steps give rows 2, 0, 0 of the whole batch's logits.
TEST(Seq2SeqTest, SelectStateKeepsRows) {
  for (const Kind& kind : kKinds) {
    auto net = fixture_model(kind, kFloat64);
    const Tensor &src = entry(kind, "src"), &src_valid = entry(kind, "src_valid_len");
    const Tensor tgt = narrow(entry(kind, "dec_input"), 1, 0, 2);
    nn::DecoderState whole =
        net->decoder().init_state(net->encoder().forward(src, src_valid), src_valid);
    const Tensor logits = net->decoder().forward(tgt, whole);  // [3, 2, V]
    const Tensor rows = tensor({2, 0, 0}, {3}, kInt64);
    nn::DecoderState state =
        net->decoder().init_state(net->encoder().forward(src, src_valid), src_valid);
    net->decoder().select_state(state, rows);
    const Tensor picked = index_select(tgt, 0, rows);
    std::vector<Tensor> steps;
    for (int64_t t = 0; t < 2; ++t)
      steps.push_back(net->decoder().forward(narrow(picked, 1, t, 1), state));
    EXPECT_TRUE(all_close(cat(steps, 1), index_select(logits, 0, rows), 1e-12, 0)) << kind.file;
  }
}

// Dropout (in the GRUs between layers, and on the attention weights) acts in
// training mode only: in eval mode a model with dropout computes d2l's
// dropout-free logits from the same state dict.
TEST(Seq2SeqTest, DropoutOnlyInTraining) {
  for (const Kind& kind : kKinds) {
    auto net = make_kind(kind, 0.3);
    net->to(kFloat64);
    std::map<std::string, Tensor> state;
    for (const auto& [name, value] : fixture_state(kind.file)) state[name] = value;
    net->load_state_dict(state);
    const auto run = [&] {
      return (*net)(entry(kind, "src"), entry(kind, "dec_input"), entry(kind, "src_valid_len"));
    };
    net->eval();
    EXPECT_TRUE(all_close(run(), entry(kind, "logits"), 1e-10, 1e-10)) << kind.file;
    net->train();
    manual_seed(1);
    EXPECT_GT(testing::max_abs_diff(run(), entry(kind, "logits")), 1e-3) << kind.file;
  }
}

// Padded source steps get no attention, whatever the model's numbers.
TEST(Seq2SeqTest, AlignmentIgnoresPaddingAndSumsToOne) {
  for (const Kind& kind : kKinds) {
    auto net = make_kind(kind);
    EXPECT_FALSE(net->decoder().alignment().defined());
    const Tensor src_valid = testing::lens({6, 4, 2});
    (*net)(entry(kind, "src"), entry(kind, "dec_input"), src_valid);
    const Tensor a = net->decoder().alignment();
    ASSERT_EQ(a.shape(), (Shape{3, 5, 6}));
    EXPECT_FALSE(a.requires_grad());
    const std::vector<double> v = a.to_vector();
    const int64_t lens[] = {6, 4, 2};
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t t = 0; t < 5; ++t) {
        double total = 0;
        for (int64_t j = 0; j < 6; ++j) {
          const double w = v[static_cast<size_t>((b * 5 + t) * 6 + j)];
          if (j >= lens[b]) {
            EXPECT_EQ(w, 0.0);
          }
          total += w;
        }
        EXPECT_NEAR(total, 1.0, 1e-6);
      }
  }
}

// float64 gradcheck of the whole model (encoder, attention, decoder, loss)
// through a parameter of every part, on a tiny model and batch.
TEST(Seq2SeqTest, Gradcheck) {
  for (const Kind& kind : kKinds) {
    manual_seed(21);
    // Hidden 4: multihead's 2 heads split it evenly; dot's halves are 2 wide.
    auto net = nn::make_bahdanau_seq2seq(5, 6, 3, 4, 2, 0.0, kind.scoring, kind.bidirectional,
                                         kind.heads, kind.encoder_hiddens > 0 ? 2 : 0);
    net->to(kFloat64);
    nn::Seq2SeqEncoder& enc = encoder_of(*net);
    nn::Seq2SeqAttentionDecoder& dec = decoder_of(*net);
    std::vector<Tensor*> slots{&enc.embedding.weight, &enc.rnn.weight_ih[0], &enc.rnn.weight_hh[1],
                               &dec.embedding.weight, &dec.rnn.weight_ih[0], &dec.rnn.bias_hh[1],
                               &dec.dense.weight};
    // Every parameter of the scoring function (dot has none).
    for (const auto& [name, parameter] : dec.attention->named_parameters())
      slots.push_back(&dec.attention->parameter(name));
    if (kind.bidirectional) {
      slots.push_back(&enc.rnn.weight_ih[1]);  // layer 0, backward direction
      slots.push_back(&enc.rnn.bias_hh[3]);    // layer 1, backward direction
      slots.push_back(&dec.W_s->weight);
    }
    std::vector<Tensor> inputs;
    for (Tensor* slot : slots) inputs.push_back(*slot);
    const Tensor src = tensor({1, 2, 3, 4, 2, 0}, {2, 3}, kInt64);
    const Tensor src_valid = testing::lens({3, 2});
    const Tensor tgt = tensor({0, 5, 1, 3}, {2, 2}, kInt64);
    const Tensor labels = tensor({5, 1, 3, 2}, {2, 2}, kInt64);
    const Tensor tgt_valid = testing::lens({2, 1});
    auto fn = [&](const std::vector<Tensor>& in) {
      for (size_t i = 0; i < slots.size(); ++i) *slots[i] = in[i];
      return nn::masked_softmax_ce_loss((*net)(src, tgt, src_valid), labels, tgt_valid);
    };
    EXPECT_TRUE(grad_ok(fn, inputs)) << kind.file;
  }
}

// d2l's init: U(-a, a), a = sqrt(6 / (fan_in + fan_out)), on every Linear
// weight and GRU weight_*; biases and embeddings untouched.
TEST(Seq2SeqTest, InitSeq2SeqIsXavierUniform) {
  manual_seed(3);
  auto net = nn::make_bahdanau_seq2seq(7, 9, 16, 32, 2);
  std::map<std::string, std::vector<double>> before;
  for (const auto& [name, p] : net->named_parameters()) before[name] = p.to_vector();
  const std::vector<Tensor> params = net->parameters();
  nn::init_seq2seq(*net);
  const auto named = net->named_parameters();
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& [name, p] = named[i];
    EXPECT_TRUE(p.is_same(params[i])) << name << " replaced instead of written in place";
    const bool xavier =
        name.find("embedding") == std::string::npos && name.find("bias") == std::string::npos;
    const std::vector<double> v = p.to_vector();
    if (!xavier) {
      EXPECT_EQ(v, before[name]) << name;
      continue;
    }
    EXPECT_NE(v, before[name]) << name;
    const double a = std::sqrt(6.0 / static_cast<double>(p.size(0) + p.size(1)));
    double largest = 0;
    for (double x : v) largest = std::max(largest, std::abs(x));
    EXPECT_LE(largest, a) << name;
    EXPECT_GT(largest, 0.8 * a) << name;  // the range is used, not a smaller one
  }
  Tensor not_2d = zeros({3});
  EXPECT_TRUE(throws_error([&] { nn::xavier_uniform_(not_2d); }, {"xavier_uniform_", "[3]"}));
}

TEST(Seq2SeqTest, BadInputThrows) {
  auto net = nn::make_bahdanau_seq2seq(kSrcVocab, kTgtVocab, kEmbed, kHiddens, kLayers);
  const Tensor src = tensor({5, 6, 7, 3, 1, 1}, {2, 3}, kInt64);
  const Tensor src_valid = testing::lens({3, 1});
  const Tensor tgt = tensor({2, 4, 2, 5}, {2, 2}, kInt64);
  EXPECT_NO_THROW((*net)(src, tgt, src_valid));
  // token ids out of range
  EXPECT_TRUE(throws_error(
      [&] {
        (*net)(tensor({5, 6, 11, 3, 1, 1}, {2, 3}, kInt64), tgt, src_valid);
      },
      {"Embedding", "11"}));
  EXPECT_TRUE(throws_error(
      [&] {
        (*net)(src, tensor({2, 4, 2, 12}, {2, 2}, kInt64), src_valid);
      },
      {"Embedding", "12"}));
  EXPECT_TRUE(throws_error(
      [&] {
        (*net)(tensor({5, -1, 7, 3, 1, 1}, {2, 3}, kInt64), tgt, src_valid);
      },
      {"Embedding"}));
  // mismatched batch sizes
  EXPECT_TRUE(throws_error(
      [&] {
        (*net)(src, tensor({2, 4}, {1, 2}, kInt64), src_valid);
      },
      {"Seq2SeqAttentionDecoder", "batch sizes differ", "[1, 2]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        (*net)(src, tgt, testing::lens({3, 1, 2}));
      },
      {"Seq2SeqAttentionDecoder.init_state", "src_valid_lens", "[3]"}));
  // wrong dtypes and ranks
  EXPECT_TRUE(throws_error([&] { (*net)(src.to(kFloat32), tgt, src_valid); },
                           {"Seq2SeqEncoder", "int64", "float32"}));
  EXPECT_TRUE(throws_error([&] { (*net)(src, tgt.to(kFloat64), src_valid); },
                           {"Seq2SeqAttentionDecoder", "tgt", "float64"}));
  EXPECT_TRUE(throws_error([&] { (*net)(src, tgt, src_valid.to(kFloat32)); },
                           {"src_valid_lens", "float32"}));
  EXPECT_TRUE(
      throws_error([&] { (*net)(reshape(src, {6}), tgt, src_valid); }, {"Seq2SeqEncoder", "[6]"}));
  // a state not made by init_state, or of another model's sizes
  nn::DecoderState empty;
  EXPECT_TRUE(throws_error([&] { net->decoder().forward(tgt, empty); },
                           {"Seq2SeqAttentionDecoder", "init_state"}));
  EXPECT_TRUE(throws_error(
      [&] {
        net->decoder().init_state({zeros({3, 2, 5}), zeros({2, 2, 5})}, src_valid);
      },
      {"init_state", "[3, 2, 5]"}));
  // a float64 model on a float32 state
  auto net64 = nn::make_bahdanau_seq2seq(kSrcVocab, kTgtVocab, kEmbed, kHiddens, kLayers);
  net64->to(kFloat64);
  nn::DecoderState state32 =
      net->decoder().init_state(net->encoder().forward(src, src_valid), src_valid);
  EXPECT_TRUE(throws_error([&] { net64->decoder().forward(tgt, state32); }, {"float32"}));
  // a one-way encoder's state for a decoder that expects a bidirectional one
  auto bi = nn::make_bahdanau_seq2seq(kSrcVocab, kTgtVocab, kEmbed, kHiddens, kLayers, 0.0,
                                      "additive", /*bidirectional=*/true);
  EXPECT_TRUE(throws_error(
      [&] { bi->decoder().init_state(net->encoder().forward(src, src_valid), src_valid); },
      {"init_state", "[T, B, 16]", "[4, B, 8]", "bidirectional", "got [3, 2, 8]"}));
  // dot-product scores need keys of the queries' width: refused, naming both
  // and suggesting general
  EXPECT_TRUE(throws_error([&] { nn::make_bahdanau_seq2seq(5, 5, 4, 4, 1, 0.0, "dot", true); },
                           {"DotScoring", "4 features", "keys 8", "general"}));
  // the one-way encoder's hidden size is the decoder's: d2l's decoder starts
  // from its final states as they are
  EXPECT_TRUE(
      throws_error([&] { nn::make_bahdanau_seq2seq(5, 5, 4, 4, 1, 0.0, "dot", false, 1, 2); },
                   {"Seq2SeqAttentionDecoder", "encoder_hiddens 2", "hidden size 4", "one-way"}));
  // an unknown scoring function names the table's
  EXPECT_TRUE(
      throws_error([&] { nn::make_bahdanau_seq2seq(5, 5, 4, 4, 1, 0.0, "cosine"); },
                   {"unknown scoring function 'cosine'", "additive, dot, general, multihead"}));
  // multihead's heads must split the hidden units
  EXPECT_TRUE(
      throws_error([&] { nn::make_bahdanau_seq2seq(5, 5, 4, 6, 1, 0.0, "multihead", true, 4); },
                   {"MultiHeadScoring", "num_hiddens 6", "num_heads 4"}));
  // bad sizes
  EXPECT_THROW(nn::make_bahdanau_seq2seq(0, 5, 4, 4, 1), Error);
  EXPECT_THROW(nn::make_bahdanau_seq2seq(5, 5, 4, 4, 0), Error);
}

}  // namespace
}  // namespace ag
