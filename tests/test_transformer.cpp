// d2l's Transformer (nn/transformer.h) and its pre-LN option (norm_first):
// parity with the PyTorch models (logits, loss, every gradient, every
// attention map, Adam steps, greedy decoding with the cache), the key/value
// cache against the full-sequence decoder, both masks doing their job,
// state-dict names, a float64 gradcheck through a tiny model, bad input. The
// parts (LayerNorm, AddNorm, ...) are tests/test_transformer_blocks.cpp's.
// References: scripts/make_transformer_fixtures.py (d2l's PyTorch code, and
// for pre-LN torch.nn.TransformerEncoderLayer/DecoderLayer(norm_first=True)).
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::fixture_tensor;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

using testing::kTolerances;
using testing::Tolerance;

// ---- the Transformer ---------------------------------------------------------------------

// The PyTorch models of scripts/make_transformer_fixtures.py (src vocab 12,
// tgt vocab 11, d 8, FFN 16, 2 heads, 2 blocks, dropout 0): d2l's, and its
// pre-LN twin (norm_first), whose blocks the script checks against
// torch.nn.TransformerEncoderLayer / TransformerDecoderLayer(norm_first=True).
struct TorchModel {
  std::string file;
  bool norm_first = false;
};
const TorchModel kTorchModels[] = {{"transformer_model.npz", false},
                                   {"transformer_pre_ln.npz", true}};
const std::string kModel = kTorchModels[0].file;
void PrintTo(const TorchModel& model, std::ostream* out) {
  *out << model.file;
}

// The fixture's state dict in torch's order: entries "param.NN.<name>".
std::vector<std::pair<std::string, Tensor>> torch_state_dict(const std::string& file) {
  std::vector<std::pair<std::string, Tensor>> state;
  for (const auto& [key, t] : testing::fixture(file)) {
    if (key.rfind("param.", 0) != 0) continue;
    const size_t index = std::stoul(key.substr(6, 2));
    if (state.size() <= index) state.resize(index + 1);
    state[index] = {key.substr(9), t};
  }
  return state;
}

// The fixture's model in `dtype` with torch's weights.
std::unique_ptr<nn::Transformer> fixture_model(DType dtype,
                                               const TorchModel& torch = kTorchModels[0]) {
  auto model = nn::make_transformer(12, 11, 8, 16, 2, 2, 0.0, torch.norm_first);
  model->to(dtype);
  std::map<std::string, Tensor> state;
  for (const auto& [name, t] : torch_state_dict(torch.file)) state[name] = t;
  model->load_state_dict(state, /*strict=*/true);
  return model;
}

class TransformerParity : public ::testing::TestWithParam<TorchModel> {
 protected:
  const std::string& file() const { return GetParam().file; }
  Tensor fx(const std::string& name) const { return fixture_tensor(file(), name); }
};

TEST_P(TransformerParity, StateDictNamesAndOrderAreTorchs) {
  auto model = nn::make_transformer(12, 11, 8, 16, 2, 2, 0.0, GetParam().norm_first);
  const auto ours = model->named_parameters();
  const auto torch = torch_state_dict(file());
  ASSERT_EQ(ours.size(), torch.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i].first, torch[i].first) << i;
    EXPECT_EQ(ours[i].second.shape(), torch[i].second.shape()) << torch[i].first;
  }
  // A few names spelled out, as the issue gives them; pre-LN's final norms
  // as torch.nn.Transformer names them.
  const auto has = [&](const std::string& name) { return model->state_dict().contains(name); };
  for (const char* name :
       {"encoder.embedding.weight", "encoder.blks.block0.attention.W_q.weight",
        "encoder.blks.block1.addnorm1.ln.weight", "encoder.blks.block0.ffn.dense1.weight",
        "decoder.blks.block1.attention2.W_o.weight", "decoder.blks.block0.addnorm3.ln.bias",
        "decoder.dense.weight", "decoder.dense.bias"})
    EXPECT_TRUE(has(name)) << name;
  for (const char* name : {"encoder.norm.weight", "decoder.norm.bias"})
    EXPECT_EQ(has(name), GetParam().norm_first) << name;
}

TEST_P(TransformerParity, LogitsLossGradientsAndAttention) {
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype, GetParam());
    model->train();  // dropout 0: training mode only switches the look-ahead mask on in d2l
    const Tensor logits = (*model)(fx("src"), fx("tgt_in"), fx("src_valid_lens"));
    EXPECT_TRUE(all_close(logits, fx("logits"), tol.atol, tol.rtol));
    // d2l's MaskedSoftmaxCELoss, summed over the batch as its training loop does
    const Tensor loss = sum(nn::masked_softmax_ce_loss(logits, fx("labels"), fx("tgt_valid_lens")));
    EXPECT_TRUE(all_close(loss, fx("loss"), tol.atol, tol.rtol));
    loss.backward();
    for (const auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      EXPECT_TRUE(all_close(p.grad(), fx("grad." + name), tol.atol, tol.rtol)) << name;
    }
    const auto enc = model->transformer_encoder().attention_weights();
    const auto self = model->transformer_decoder().self_attention_weights();
    const auto cross = model->transformer_decoder().cross_attention_weights();
    ASSERT_EQ(enc.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const std::string b = std::to_string(i);
      EXPECT_EQ(enc[i].shape(), (Shape{3, 2, 5, 5}));
      EXPECT_TRUE(all_close(enc[i], fx("enc_weights." + b), tol.atol, tol.rtol));
      EXPECT_TRUE(all_close(self[i], fx("dec_self_weights." + b), tol.atol, tol.rtol));
      EXPECT_TRUE(all_close(cross[i], fx("dec_cross_weights." + b), tol.atol, tol.rtol));
    }
    // alignment(): the last block's cross-attention averaged over heads, [B, Tout, T]
    const Tensor alignment = model->decoder().alignment();
    EXPECT_EQ(alignment.shape(), (Shape{3, 4, 5}));
    EXPECT_TRUE(all_close(alignment, mean(cross[1], 1), 1e-12, 0));
  }
}

TEST_P(TransformerParity, TwentyAdamSteps) {
  // The loss before each of 20 Adam(lr = 0.01) steps on the fixture's batch.
  const std::vector<double> torch_losses = fx("adam_losses").to_vector();
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype, GetParam());
    optim::Adam adam(model->parameters(), 0.01);
    std::vector<double> losses;
    for (int step = 0; step < 20; ++step) {
      adam.zero_grad();
      const Tensor loss =
          sum(nn::masked_softmax_ce_loss((*model)(fx("src"), fx("tgt_in"), fx("src_valid_lens")),
                                         fx("labels"), fx("tgt_valid_lens")));
      loss.backward();
      adam.step();
      losses.push_back(loss.item());
    }
    // float32: Adam divides by sqrt(v), so rounding in a small gradient moves
    // a step by more than the rounding; 20 steps stay well within 1e-4.
    const double rtol = tol.dtype == kFloat64 ? 1e-9 : 1e-4;
    EXPECT_TRUE(all_close(tensor(losses, {20}, kFloat64), torch_losses, rtol, rtol));
  }
}

TEST_P(TransformerParity, WithoutTheLookAheadMask) {
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype, GetParam());
    model->transformer_decoder().causal = false;
    const Tensor logits = (*model)(fx("src"), fx("tgt_in"), fx("src_valid_lens"));
    EXPECT_TRUE(all_close(logits, fx("logits_no_causal"), tol.atol, tol.rtol));
    EXPECT_FALSE(all_close(logits, fx("logits"), 1e-3, 0));
  }
}

// Greedy prediction one step at a time in eval mode (the key/value cache),
// from <bos> = 1: the logits of every step [B, S, V] and the tokens [B, S].
std::pair<Tensor, Tensor> greedy(nn::Transformer& model, const Tensor& src, const Tensor& lens,
                                 int64_t steps) {
  NoGradGuard no_grad;
  model.eval();
  nn::DecoderState state = model.decoder().init_state(model.encoder().forward(src, lens), lens);
  Tensor token = full({src.size(0), 1}, 1, kInt64);
  std::vector<Tensor> logits, tokens;
  for (int64_t s = 0; s < steps; ++s) {
    const Tensor step = model.decoder().forward(token, state);  // [B, 1, V]
    token = argmax(step, 2);                                    // [B, 1]
    logits.push_back(step);
    tokens.push_back(token);
  }
  return {cat(logits, 1), cat(tokens, 1)};
}

TEST_P(TransformerParity, GreedyDecodingWithTheCache) {
  for (const Tolerance& tol : kTolerances) {
    SCOPED_TRACE(dtype_name(tol.dtype));
    auto model = fixture_model(tol.dtype, GetParam());
    const auto [logits, tokens] = greedy(*model, fx("src"), fx("src_valid_lens"), 5);
    EXPECT_TRUE(all_close(logits, fx("greedy_logits"), tol.atol, tol.rtol));
    EXPECT_TRUE(all_close(tokens, fx("greedy_tokens"), 0, 0));
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TransformerParity, ::testing::ValuesIn(kTorchModels),
                         [](const ::testing::TestParamInfo<TorchModel>& info) {
                           return std::string(info.param.norm_first ? "PreLn" : "D2l");
                         });

// Step by step with the cache, and the whole decoded sequence at once with
// the look-ahead mask: the same logits at every step (eval and training
// mode); post-LN (the cache holds the blocks' inputs) and pre-LN (their
// LayerNorms).
class TransformerCache : public ::testing::TestWithParam<bool> {};

TEST_P(TransformerCache, CachedDecodingEqualsTheFullSequence) {
  manual_seed(6);
  auto model = nn::make_transformer(9, 10, 8, 12, 2, 3, 0.0, /*norm_first=*/GetParam());
  model->to(kFloat64);
  const Tensor src = tensor({4, 5, 6, 2, 7, 2, 0, 0}, {2, 4}, kInt64), lens = testing::lens({4, 2});
  const auto [step_logits, tokens] = greedy(*model, src, lens, 6);
  // decoder input: <bos>, then the first 5 decoded tokens
  const Tensor tgt_in = cat({full({2, 1}, 1, kInt64), narrow(tokens, 1, 0, 5)}, 1);
  for (const bool training : {false, true}) {
    model->train(training);
    EXPECT_TRUE(all_close((*model)(src, tgt_in, lens), step_logits, 1e-12, 1e-12)) << training;
  }
  // Two steps at once after a cached first step: positions and mask follow the offset.
  model->eval();
  nn::DecoderState state = model->decoder().init_state(model->encoder().forward(src, lens), lens);
  const Tensor first = model->decoder().forward(narrow(tgt_in, 1, 0, 1), state);
  EXPECT_EQ(state.key_values[2].shape(), (Shape{2, 1, 8}));
  const Tensor rest = model->decoder().forward(narrow(tgt_in, 1, 1, 5), state);
  EXPECT_EQ(state.key_values[0].shape(), (Shape{2, 6, 8}));
  EXPECT_TRUE(all_close(cat({first, rest}, 1), step_logits, 1e-12, 1e-12));
  // select_state after the first step (beam search): rows {1, 1, 0} of the
  // encoder's outputs and of every block's cache; the next steps give those
  // rows of the whole batch's logits.
  nn::DecoderState picked = model->decoder().init_state(model->encoder().forward(src, lens), lens);
  const Tensor rows = tensor({1, 1, 0}, {3}, kInt64);
  model->decoder().forward(narrow(tgt_in, 1, 0, 1), picked);
  model->decoder().select_state(picked, rows);
  EXPECT_EQ(picked.key_values[1].shape(), (Shape{3, 1, 8}));
  const Tensor next =
      model->decoder().forward(index_select(narrow(tgt_in, 1, 1, 2), 0, rows), picked);
  EXPECT_TRUE(all_close(next, index_select(narrow(step_logits, 1, 1, 2), 0, rows), 1e-12, 1e-12));
}

INSTANTIATE_TEST_SUITE_P(PostAndPreLn, TransformerCache, ::testing::Bool());

TEST(TransformerTest, BothMasksDoTheirJob) {
  for (const bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-LN" : "post-LN");
    manual_seed(7);
    auto model = nn::make_transformer(9, 10, 8, 12, 2, 2, 0.0, norm_first);
    model->to(kFloat64);
    const Tensor lens = testing::lens({3, 2});
    const Tensor src = tensor({4, 5, 2, 6, 2, 0}, {2, 3}, kInt64);
    const Tensor tgt = tensor({1, 3, 4, 5, 1, 6, 7, 8}, {2, 4}, kInt64);
    const Tensor logits = (*model)(src, tgt, lens);
    // Padding mask: another token at the padded source position changes nothing.
    const Tensor other_pad = tensor({4, 5, 2, 6, 2, 8}, {2, 3}, kInt64);
    EXPECT_TRUE(all_close((*model)(other_pad, tgt, lens), logits, 1e-13, 0));
    // Look-ahead mask: changing the last target token leaves the earlier steps alone...
    const Tensor other_last = tensor({1, 3, 4, 7, 1, 6, 7, 2}, {2, 4}, kInt64);
    const Tensor changed = (*model)(src, other_last, lens);
    EXPECT_TRUE(all_close(narrow(changed, 1, 0, 3), narrow(logits, 1, 0, 3), 1e-13, 0));
    EXPECT_FALSE(all_close(narrow(changed, 1, 3, 1), narrow(logits, 1, 3, 1), 1e-6, 0));
    // ... and without it, the earlier steps see the future.
    model->transformer_decoder().causal = false;
    EXPECT_FALSE(all_close(narrow((*model)(src, other_last, lens), 1, 0, 3),
                           narrow((*model)(src, tgt, lens), 1, 0, 3), 1e-6, 0));
  }
}

TEST(TransformerTest, StreamingAttentionWithoutWeightsGivesTheSameModel) {
  for (const bool training : {false, true}) {
    SCOPED_TRACE(training ? "train" : "eval");
    auto a = fixture_model(kFloat64), b = fixture_model(kFloat64);
    a->train(training);
    b->train(training);
    b->set_need_weights(false);
    const Tensor src = fixture_tensor(kModel, "src"), tgt = fixture_tensor(kModel, "tgt_in");
    const Tensor lens = fixture_tensor(kModel, "src_valid_lens");
    const Tensor la = (*a)(src, tgt, lens), lb = (*b)(src, tgt, lens);
    EXPECT_TRUE(all_close(lb, la, 1e-12, 1e-12));
    sum(la * la).backward();
    sum(lb * lb).backward();
    const auto pa = a->named_parameters(), pb = b->named_parameters();
    for (size_t i = 0; i < pa.size(); ++i)
      EXPECT_TRUE(all_close(pb[i].second.grad(), pa[i].second.grad(), 1e-11, 1e-10)) << pa[i].first;
    for (const Tensor& w : b->transformer_encoder().attention_weights()) EXPECT_FALSE(w.defined());
    for (const Tensor& w : b->transformer_decoder().cross_attention_weights())
      EXPECT_FALSE(w.defined());
    EXPECT_FALSE(b->decoder().alignment().defined());
  }
}

TEST(TransformerTest, GradcheckThroughATinyModel) {
  for (const bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-LN" : "post-LN");
    manual_seed(8);
    auto model = nn::make_transformer(5, 6, 4, 6, 2, 1, 0.0, norm_first);
    model->to(kFloat64);
    nn::TransformerEncoder& enc = model->transformer_encoder();
    nn::TransformerDecoder& dec = model->transformer_decoder();
    const Tensor src = tensor({2, 3, 4, 1, 0, 0}, {2, 3}, kInt64), lens = testing::lens({3, 1});
    const Tensor tgt = tensor({1, 2, 3, 1, 5, 4}, {2, 3}, kInt64);
    // One parameter of every kind on the path, swapped in from the inputs
    // (pre-LN: the two stacks' final norms too).
    const auto fn = [&](const std::vector<Tensor>& in) {
      enc.embedding.weight = in[0];
      enc.blks[0].attention.W_q.weight = in[1];
      enc.blks[0].addnorm2.ln.weight = in[2];
      dec.embedding.weight = in[3];
      dec.blks[0].attention1.W_v.weight = in[4];
      dec.blks[0].attention2.W_k.weight = in[5];
      dec.blks[0].ffn.dense1.bias = in[6];
      dec.blks[0].addnorm3.ln.bias = in[7];
      dec.dense.weight = in[8];
      if (norm_first) {
        enc.norm->weight = in[9];
        dec.norm->bias = in[10];
      }
      return (*model)(src, tgt, lens);
    };
    std::vector<Tensor> inputs{leaf64({5, 4}), leaf64({4, 4}), leaf64({4}, 0.5, 1.5),
                               leaf64({6, 4}), leaf64({4, 4}), leaf64({4, 4}),
                               leaf64({6}),    leaf64({4}),    leaf64({6, 4})};
    if (norm_first) {
      inputs.push_back(leaf64({4}, 0.5, 1.5));
      inputs.push_back(leaf64({4}));
    }
    EXPECT_TRUE(grad_ok(fn, inputs));
  }
}

TEST(TransformerTest, BadInput) {
  EXPECT_TRUE(throws_error([] { nn::make_transformer(12, 11, 8, 16, 3, 2); },
                           {"MultiHeadAttention", "num_heads 3"}));
  EXPECT_TRUE(throws_error([] { nn::make_transformer(12, 11, 7, 16, 7, 2); },
                           {"PositionalEncoding", "even"}));
  EXPECT_TRUE(throws_error([] { nn::make_transformer(12, 11, 8, 16, 2, 0); },
                           {"TransformerEncoder", "num_blks"}));
  auto model = nn::make_transformer(12, 11, 8, 16, 2, 2, 0.0);
  nn::Transformer& m = *model;
  const Tensor src = tensor({3, 4, 5, 6, 2, 0}, {2, 3}, kInt64), lens = testing::lens({3, 2});
  const Tensor tgt = tensor({1, 3, 1, 4}, {2, 2}, kInt64);
  EXPECT_NO_THROW(m(src, tgt, lens));
  // tokens out of range
  EXPECT_TRUE(throws_error(
      [&] {
        m(tensor({3, 12, 5, 6, 2, 0}, {2, 3}, kInt64), tgt, lens);
      },
      {"Embedding", "index 12"}));
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tensor({1, 3, 1, -1}, {2, 2}, kInt64), lens);
      },
      {"Embedding", "index -1"}));
  // mismatched lengths
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tgt, testing::lens({3, 2, 1}));
      },
      {"TransformerEncoder", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tgt, testing::lens({3, 4}));
      },
      {"TransformerEncoder", "valid length 4", "3 source steps"}));
  EXPECT_TRUE(throws_error(
      [&] {
        m(src, tensor({1, 3, 4}, {3, 1}, kInt64), lens);
      },
      {"TransformerDecoder", "batch size"}));
  // wrong dtypes and ranks
  EXPECT_TRUE(
      throws_error([&] { m(src.to(kFloat32), tgt, lens); }, {"TransformerEncoder", "int64"}));
  EXPECT_TRUE(
      throws_error([&] { m(reshape(src, {6}), tgt, lens); }, {"TransformerEncoder", "[6]"}));
  // a state that is not the decoder's, and a cache from another batch
  nn::DecoderState empty_state;
  EXPECT_TRUE(throws_error([&] { m.decoder().forward(tgt, empty_state); },
                           {"TransformerDecoder", "init_state"}));
  EXPECT_TRUE(throws_error(
      [&] {
        model->transformer_decoder().blks[1].forward(zeros({2, 1, 8}), empty_state, true);
      },
      {"TransformerDecoderBlock", "block 1", "init_state"}));
  nn::DecoderState state = m.decoder().init_state(m.encoder().forward(src, lens), lens);
  m.eval();
  m.decoder().forward(narrow(tgt, 1, 0, 1), state);
  state.tensors[0] = cat({state.tensors[0], state.tensors[0]}, 0);
  EXPECT_TRUE(throws_error(
      [&] {
        m.decoder().forward(tensor({1, 1, 1, 1}, {4, 1}, kInt64), state);
      },
      {"TransformerDecoder", "cached"}));
  // beyond the positional table (max_len 1000)
  EXPECT_TRUE(throws_error(
      [&] {
        m(zeros({1, 1001}, kInt64), tgt, Tensor());
      },
      {"PositionalEncoding", "max_len 1000"}));
}

}  // namespace
}  // namespace ag
