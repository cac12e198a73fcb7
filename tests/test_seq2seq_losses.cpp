// The training helpers of d2l's seq2seq chapter: nn::masked_softmax_ce_loss
// (d2l's MaskedSoftmaxCELoss) and nn::clip_grad_norm_
// (torch.nn.utils.clip_grad_norm_), against
// tests/fixtures/seq2seq_losses.npz from scripts/make_seq2seq_block_fixtures.py.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

const Tensor& fix(const std::string& name) {
  return testing::fixture_tensor("seq2seq_losses.npz", name);
}

// ---- masked_softmax_ce_loss ------------------------------------------------------------

TEST(MaskedSoftmaxCeLossTest, MatchesD2l) {
  for (const auto& [dtype, tol] : {std::pair{kFloat64, 1e-10}, {kFloat32, 1e-5}}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor logits = fix("logits").to(dtype).clone().requires_grad_();
    const Tensor loss = nn::masked_softmax_ce_loss(logits, fix("labels"), fix("valid_len"));
    EXPECT_EQ(loss.shape(), (Shape{3}));
    EXPECT_TRUE(all_close(loss, fix("ce.loss"), tol, tol));
    sum(loss * fix("ce.w").to(dtype)).backward();
    EXPECT_TRUE(all_close(logits.grad(), fix("ce.grad.logits"), tol, tol));
  }
}

TEST(MaskedSoftmaxCeLossTest, LabelSmoothingMatchesTorch) {
  // d2l's loss built on nn.CrossEntropyLoss(label_smoothing=0.1).
  const double epsilon = fix("ce_smooth.epsilon").item();
  for (const auto& [dtype, tol] : {std::pair{kFloat64, 1e-10}, {kFloat32, 1e-5}}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor logits = fix("logits").to(dtype).clone().requires_grad_();
    const Tensor loss =
        nn::masked_softmax_ce_loss(logits, fix("labels"), fix("valid_len"), epsilon);
    EXPECT_TRUE(all_close(loss, fix("ce_smooth.loss"), tol, tol));
    EXPECT_FALSE(all_close(loss, fix("ce.loss"), tol, tol));  // the smoothing changed it
    sum(loss * fix("ce.w").to(dtype)).backward();
    EXPECT_TRUE(all_close(logits.grad(), fix("ce_smooth.grad.logits"), tol, tol));
  }
}

TEST(MaskedSoftmaxCeLossTest, FullSmoothingIsTheUniformTarget) {
  // label_smoothing = 1 ignores the labels: each valid position costs the
  // mean of -log p over the classes, log V when every logit is equal.
  const Tensor logits = zeros({1, 3, 4}, kFloat64);
  const Tensor loss = nn::masked_softmax_ce_loss(logits, tensor({1, 2, 3}, {1, 3}, kInt64),
                                                 tensor({2}, {1}, kInt64), 1.0);
  EXPECT_NEAR(loss.item(), std::log(4.0) * 2 / 3, 1e-12);
}

TEST(MaskedSoftmaxCeLossTest, EqualsCrossEntropyOverTheValidPositions) {
  // One sequence: the loss is (valid / T) times the mean cross entropy of
  // the valid positions, which ag::cross_entropy computes on its own.
  manual_seed(2);
  const Tensor logits = randn({1, 5, 4}, kFloat64);
  const Tensor labels = tensor({3, 0, 2, 1, 1}, {1, 5}, kInt64);
  const Tensor loss = nn::masked_softmax_ce_loss(logits, labels, tensor({3}, {1}, kInt64));
  const Tensor ce = cross_entropy(narrow(reshape(logits, {5, 4}), 0, 0, 3),
                                  narrow(reshape(labels, {5}), 0, 0, 3));
  EXPECT_NEAR(loss.item(), ce.item() * 3 / 5, 1e-12);
}

TEST(MaskedSoftmaxCeLossTest, Gradcheck) {
  const Tensor labels = tensor({0, 4, 2, 2, 1, 3, 0, 4}, {2, 4}, kInt64);
  const Tensor valid = tensor({3, 1}, {2}, kInt64);
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) {
        return nn::masked_softmax_ce_loss(in[0], labels, valid);
      },
      {leaf64({2, 4, 5}, -2, 2)}));
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) {
        return nn::masked_softmax_ce_loss(in[0], labels, valid, 0.3);
      },
      {leaf64({2, 4, 5}, -2, 2)}));
}

TEST(MaskedSoftmaxCeLossTest, BadInput) {
  const Tensor logits = zeros({2, 3, 4}), labels = zeros({2, 3}, kInt64),
               valid = tensor({3, 1}, {2}, kInt64);
  const auto loss = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    return [=] { nn::masked_softmax_ce_loss(a, b, c); };
  };
  EXPECT_TRUE(throws_error(loss(logits, tensor({0, 1, 2, 3, 4, 0}, {2, 3}, kInt64), valid),
                           {"masked_softmax_ce_loss", "label 4", "[1, 1]", "4 classes"}));
  EXPECT_TRUE(throws_error(loss(logits, tensor({0, -1, 0, 0, 0, 0}, {2, 3}, kInt64), valid),
                           {"masked_softmax_ce_loss", "label -1"}));
  EXPECT_TRUE(throws_error(loss(logits, labels, tensor({4, 1}, {2}, kInt64)),
                           {"masked_softmax_ce_loss", "valid_len 4", "T = 3"}));
  EXPECT_TRUE(throws_error(loss(logits, labels, tensor({3, -1}, {2}, kInt64)),
                           {"masked_softmax_ce_loss", "valid_len -1"}));
  EXPECT_TRUE(throws_error(loss(zeros({2, 3}), labels, valid),
                           {"masked_softmax_ce_loss", "logits [2, 3]", "[B, T, V]"}));
  EXPECT_TRUE(throws_error(loss(logits, zeros({3, 2}, kInt64), valid),
                           {"masked_softmax_ce_loss", "labels [3, 2]"}));
  EXPECT_TRUE(throws_error(loss(logits, labels, tensor({3, 1, 1}, {3}, kInt64)),
                           {"masked_softmax_ce_loss", "valid_len [3]"}));
  EXPECT_TRUE(throws_error(loss(logits, zeros({2, 3}), valid),
                           {"masked_softmax_ce_loss", "int64", "float32"}));
  EXPECT_TRUE(
      throws_error(loss(logits.to(kInt64), labels, valid), {"masked_softmax_ce_loss", "logits"}));
  EXPECT_TRUE(throws_error(loss(logits, Tensor(), valid), {"masked_softmax_ce_loss", "defined"}));
  for (const double epsilon : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()})
    EXPECT_TRUE(throws_error([&] { nn::masked_softmax_ce_loss(logits, labels, valid, epsilon); },
                             {"masked_softmax_ce_loss", "label_smoothing", "[0, 1]"}));
}

// ---- clip_grad_norm_ -------------------------------------------------------------------

TEST(ClipGradNormTest, MatchesTorch) {
  for (const auto& [dtype, tol] : {std::pair{kFloat64, 1e-12}, {kFloat32, 1e-6}}) {
    for (const char* c : {"clip", "noclip"}) {
      const std::string name = c;
      SCOPED_TRACE(name + ", " + dtype_name(dtype));
      std::vector<Tensor> params;
      for (int i = 0; i < 3; ++i) {
        const Tensor g = fix("grad" + std::to_string(i)).to(dtype).clone();
        Tensor p = zeros(g.shape(), dtype).requires_grad_();
        p.set_grad(g);
        params.push_back(p);
      }
      params.push_back(zeros({2}, dtype).requires_grad_());  // no gradient: skipped
      const double total = nn::clip_grad_norm_(params, fix(name + ".max_norm").item());
      EXPECT_NEAR(total, fix(name + ".total_norm").item(), tol);
      for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(all_close(params[static_cast<size_t>(i)].grad(),
                              fix(name + ".grad" + std::to_string(i)), tol, tol));
      EXPECT_FALSE(params[3].grad().defined());
    }
  }
}

TEST(ClipGradNormTest, ScalesToMaxNormAndWorksOnModules) {
  nn::Linear layer(3, 2);
  sum(layer(ones({4, 3})) * 10.0).backward();
  const double before = nn::clip_grad_norm_(layer.parameters(), 1e9);  // no clipping
  EXPECT_GT(before, 1.0);
  EXPECT_NEAR(nn::clip_grad_norm_(layer.parameters(), 1.0), before, 1e-4 * before);
  // Now the norm is max_norm (up to the 1e-6 of torch's formula).
  EXPECT_NEAR(nn::clip_grad_norm_(layer.parameters(), 1.0), 1.0, 1e-5);
  EXPECT_EQ(nn::clip_grad_norm_({}, 1.0), 0.0);
}

TEST(ClipGradNormTest, BadMaxNorm) {
  nn::Linear layer(3, 2);
  EXPECT_TRUE(throws_error([&] { nn::clip_grad_norm_(layer.parameters(), -1.0); },
                           {"clip_grad_norm_", "max_norm", "-1"}));
  EXPECT_TRUE(throws_error([&] { nn::clip_grad_norm_(layer.parameters(), std::nan("")); },
                           {"clip_grad_norm_", "max_norm", "nan"}));
  EXPECT_TRUE(throws_error([] { nn::clip_grad_norm_({Tensor()}, 1.0); },
                           {"clip_grad_norm_", "parameter 0", "undefined"}));
}

}  // namespace
}  // namespace ag
