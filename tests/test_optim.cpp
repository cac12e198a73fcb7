// Optimizers: SGD (with and without momentum) and Adam against torch.optim
// step by step (tests/fixtures/optim_steps.npz from
// scripts/make_keras_optim_fixtures.py), the update rules by hand, skipping
// parameters without gradients, in-place updates, bad arguments.
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::throws_error;

Tensor optim_fixture(const std::string& name) {
  return testing::fixture_tensor("optim_steps.npz", name);
}

// The same optimizers as OPTIMIZERS in scripts/make_keras_optim_fixtures.py.
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> p) {
  if (name == "sgd") return std::make_unique<optim::SGD>(p, 0.1);
  if (name == "sgd_momentum") return std::make_unique<optim::SGD>(p, 0.1, 0.9);
  if (name == "adam") return std::make_unique<optim::Adam>(p, 0.01);
  return std::make_unique<optim::Adam>(p, 0.05, std::pair{0.5, 0.9}, 1e-3);  // "adam_custom"
}

// Five steps on loss_t = mse(x W^T + b, target) (+ 0.5 sum(c^2) on even t, so
// that c has no gradient on odd steps), compared after every step.
void check_against_torch(DType dtype, double atol) {
  const Tensor x = optim_fixture("x").to(dtype), target = optim_fixture("target").to(dtype);
  for (const char* name : {"sgd", "sgd_momentum", "adam", "adam_custom"}) {
    Tensor W = optim_fixture("W").to(dtype).clone().requires_grad_();
    Tensor b = optim_fixture("b").to(dtype).clone().requires_grad_();
    Tensor c = optim_fixture("c").to(dtype).clone().requires_grad_();
    auto opt = make_optimizer(name, {W, b, c});
    for (int t = 0; t < 5; ++t) {
      SCOPED_TRACE(std::string(name) + " step " + std::to_string(t) + " " + dtype_name(dtype));
      opt->zero_grad();
      Tensor loss = mse_loss(linear(x, W, b), target);
      if (t % 2 == 0) loss = loss + sum(c * c) * 0.5;
      loss.backward();
      opt->step();
      const std::string prefix = std::string(name) + "_step" + std::to_string(t) + "_";
      EXPECT_TRUE(all_close(W, optim_fixture(prefix + "W"), atol, atol));
      EXPECT_TRUE(all_close(b, optim_fixture(prefix + "b"), atol, atol));
      EXPECT_TRUE(all_close(c, optim_fixture(prefix + "c"), atol, atol));
    }
  }
}

TEST(OptimParityTest, MatchesTorchOptimInFloat64) {
  check_against_torch(kFloat64, 1e-12);
}

TEST(OptimParityTest, MatchesTorchOptimInFloat32) {
  check_against_torch(kFloat32, 1e-5);
}

// ---- the rules by hand ----------------------------------------------------------

// L = sum(w * coef), so dL/dw = coef on every step.
void linear_step(optim::Optimizer& opt, const Tensor& w, const Tensor& coef) {
  opt.zero_grad();
  sum(w * coef).backward();
  opt.step();
}

TEST(OptimRuleTest, SgdWithMomentumStartsTheBufferAtTheGradient) {
  const Tensor g = tensor({1.0, -2.0}, {2}, kFloat64);
  Tensor w = tensor({0.0, 0.0}, {2}, kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.5, 0.9);
  linear_step(sgd, w, g);  // b = g, w = -0.5 g
  EXPECT_TRUE(all_close(w, {-0.5, 1.0}, 1e-15));
  linear_step(sgd, w, g);  // b = 0.9 g + g = 1.9 g, w = -0.5 g - 0.95 g = -1.45 g
  EXPECT_TRUE(all_close(w, {-1.45, 2.9}, 1e-15));
}

TEST(OptimRuleTest, AdamFirstStepMovesEachWeightByLr) {
  // t = 1: m / (1 - beta1) = g and sqrt(v / (1 - beta2)) = |g|, so with eps = 0
  // the step is lr * sign(g), whatever the size of g.
  Tensor w = tensor({1.0, 1.0, 1.0}, {3}, kFloat64).requires_grad_();
  optim::Adam adam({w}, 0.1, {0.9, 0.999}, 0.0);
  linear_step(adam, w, tensor({1e-3, -50.0, 2.0}, {3}, kFloat64));
  EXPECT_TRUE(all_close(w, {0.9, 1.1, 0.9}, 1e-12));
}

TEST(OptimRuleTest, ParametersWithoutGradientsAreSkipped) {
  Tensor used = tensor({1.0}, {1}, kFloat64).requires_grad_();
  Tensor unused = tensor({5.0}, {1}, kFloat64).requires_grad_();
  optim::Adam adam({used, unused}, 0.1);
  linear_step(adam, used, tensor({1.0}, {1}, kFloat64));
  EXPECT_TRUE(all_close(unused, {5.0}, 0, 0));
  EXPECT_FALSE(unused.grad().defined());
  // unused's own step count is still 0: its first real step moves it by lr.
  adam.zero_grad();
  sum(unused * 3.0).backward();
  adam.step();
  EXPECT_TRUE(all_close(unused, {4.9}, 1e-7));
}

TEST(OptimRuleTest, ZeroGradDropsTheGradients) {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  sum(w * 2.0).backward();
  ASSERT_TRUE(w.grad().defined());
  sgd.zero_grad();
  EXPECT_FALSE(w.grad().defined());
  sgd.step();  // nothing to do
  EXPECT_TRUE(all_close(w, {1.0, 1.0}, 0, 0));
}

TEST(OptimRuleTest, UpdatesTheModulesParametersInPlace) {
  manual_seed(5);
  nn::Linear layer(3, 2);
  const float* storage = layer.weight.data_ptr<float>();
  const Tensor before = layer.weight.clone();
  optim::SGD sgd(layer.parameters(), 0.1);
  sum(layer(ones({4, 3}))).backward();
  sgd.step();
  // dL/dW = sum over the 4 rows of x = 4 everywhere: W <- W - 0.4.
  EXPECT_EQ(layer.weight.data_ptr<float>(), storage);
  EXPECT_TRUE(all_close(layer.weight, before - 0.4, 1e-6));
  EXPECT_TRUE(layer.weight.is_leaf());
  EXPECT_TRUE(layer.weight.requires_grad());
}

// ---- learning rates that change: set_lr and StepLR ------------------------------------

TEST(OptimLrTest, SetLrChangesTheNextStep) {
  const Tensor g = tensor({1.0, -2.0}, {2}, kFloat64);
  Tensor w = tensor({0.0, 0.0}, {2}, kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.5);
  EXPECT_EQ(sgd.lr, 0.5);
  linear_step(sgd, w, g);  // w = -0.5 g
  sgd.set_lr(0.25);
  EXPECT_EQ(sgd.lr, 0.25);
  linear_step(sgd, w, g);  // w = -0.5 g - 0.25 g = -0.75 g
  EXPECT_TRUE(all_close(w, {-0.75, 1.5}, 1e-15));

  // Adam's first step moves each weight by lr (see above): by the new one.
  Tensor v = tensor({1.0, 1.0}, {2}, kFloat64).requires_grad_();
  optim::Adam adam({v}, 0.1, {0.9, 0.999}, 0.0);
  adam.set_lr(0.3);
  linear_step(adam, v, g);
  EXPECT_TRUE(all_close(v, {0.7, 1.3}, 1e-12));
}

TEST(OptimLrTest, SetLrRejectsBadRatesAndKeepsTheOldOne) {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  EXPECT_TRUE(throws_error([&] { sgd.set_lr(-1); }, {"SGD", "learning rate", "-1"}));
  EXPECT_TRUE(throws_error([&] { sgd.set_lr(NAN); }, {"SGD", "learning rate", "nan"}));
  EXPECT_EQ(sgd.lr, 0.1);
  optim::Adam adam({w}, 0.1);
  EXPECT_TRUE(throws_error([&] { adam.set_lr(-0.5); }, {"Adam", "learning rate", "-0.5"}));
}

TEST(OptimLrTest, StepLrDecaysEveryStepSizeEpochsAsTorch) {
  Tensor w = ones({1}, kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  optim::StepLR scheduler(sgd, /*step_size=*/2, /*gamma=*/0.5);
  // torch: lr of epoch e, by one multiplication per decay (not 0.1 * 0.5**k).
  const double expected[] = {0.1, 0.1, 0.1 * 0.5, 0.1 * 0.5, 0.1 * 0.5 * 0.5, 0.1 * 0.5 * 0.5};
  for (int64_t epoch = 0; epoch < 6; ++epoch) {
    EXPECT_EQ(scheduler.last_epoch(), epoch);
    EXPECT_EQ(scheduler.get_last_lr(), expected[epoch]) << "epoch " << epoch;
    EXPECT_EQ(sgd.lr, expected[epoch]);
    scheduler.step();
  }
}

TEST(OptimLrTest, StepLrDrivesTraining) {
  // L = sum(w * g): each epoch's step moves w by -lr_e g, at the scheduler's lr_e.
  const Tensor g = tensor({1.0, -2.0}, {2}, kFloat64);
  Tensor w = tensor({0.0, 0.0}, {2}, kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.4);
  optim::StepLR scheduler(sgd, /*step_size=*/1, /*gamma=*/0.5);
  for (int epoch = 0; epoch < 3; ++epoch) {
    linear_step(sgd, w, g);
    scheduler.step();
  }
  // lr 0.4, 0.2, 0.1: w = -0.7 g; the next epoch would train at 0.05.
  EXPECT_TRUE(all_close(w, {-0.7, 1.4}, 1e-15));
  EXPECT_EQ(sgd.lr, 0.4 * 0.5 * 0.5 * 0.5);
}

TEST(OptimLrTest, StepLrBadArguments) {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  EXPECT_TRUE(throws_error([&] { optim::StepLR(sgd, 0); }, {"StepLR", "step_size", "0"}));
  EXPECT_TRUE(throws_error([&] { optim::StepLR(sgd, 1, -0.1); }, {"StepLR", "gamma", "-0.1"}));
}

TEST(OptimLrTest, CosineAnnealingFollowsTheCosineDownAndBackUp) {
  // lr_e = eta_min + (base - eta_min) (1 + cos(pi e / T_max)) / 2 over three
  // half periods (the scheduler computes it step by step, as PyTorch does, so
  // the two agree to rounding).
  Tensor w = ones({1}, kFloat64).requires_grad_();
  const double base = 0.1, eta_min = 0.01;
  const int64_t t_max = 4;
  optim::SGD sgd({w}, base);
  optim::CosineAnnealingLR scheduler(sgd, t_max, eta_min);
  for (int64_t epoch = 0; epoch <= 3 * t_max; ++epoch) {
    const double expected =
        eta_min + (base - eta_min) * (1 + std::cos(M_PI * static_cast<double>(epoch) / 4)) / 2;
    EXPECT_EQ(scheduler.last_epoch(), epoch);
    EXPECT_NEAR(scheduler.get_last_lr(), expected, 1e-16) << "epoch " << epoch;
    EXPECT_EQ(sgd.lr, scheduler.get_last_lr());
    scheduler.step();
  }
}

TEST(OptimLrTest, CosineAnnealingDrivesTraining) {
  // T_max = 2, eta_min = 0: lr 0.4, 0.2, 0 for epochs 0, 1, 2, so w moves by
  // -(0.4 + 0.2 + 0) g and then stays.
  const Tensor g = tensor({1.0, -2.0}, {2}, kFloat64);
  Tensor w = tensor({0.0, 0.0}, {2}, kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.4);
  optim::CosineAnnealingLR scheduler(sgd, /*T_max=*/2);
  for (int epoch = 0; epoch < 3; ++epoch) {
    linear_step(sgd, w, g);
    scheduler.step();
  }
  EXPECT_TRUE(all_close(w, {-0.6, 1.2}, 1e-15));
}

TEST(OptimLrTest, CosineAnnealingBadArguments) {
  Tensor w = ones({2}).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  EXPECT_TRUE(
      throws_error([&] { optim::CosineAnnealingLR(sgd, 0); }, {"CosineAnnealingLR", "T_max", "0"}));
  EXPECT_TRUE(throws_error([&] { optim::CosineAnnealingLR(sgd, 2, -0.5); },
                           {"CosineAnnealingLR", "eta_min", "-0.5"}));
}

// ---- bad arguments ------------------------------------------------------------------

// ---- state dicts ----------------------------------------------------------------

// check_against_torch's loss on (W, b, c) at step t.
void fixture_step(optim::Optimizer& opt, const std::vector<Tensor>& p, int t) {
  opt.zero_grad();
  Tensor loss = mse_loss(linear(optim_fixture("x"), p[0], p[1]), optim_fixture("target"));
  if (t % 2 == 0) loss = loss + sum(p[2] * p[2]) * 0.5;
  loss.backward();
  opt.step();
}

std::vector<Tensor> fixture_parameters() {
  return {optim_fixture("W").clone().requires_grad_(), optim_fixture("b").clone().requires_grad_(),
          optim_fixture("c").clone().requires_grad_()};
}

// Three steps, the state dict into a new optimizer over copies of the
// parameters, two more steps: the same bits as five steps of one optimizer
// (and torch's values); a parameter no step has reached has no entries.
TEST(OptimStateDictTest, ANewOptimizerGoesOnToTheSameBits) {
  for (const char* name : {"sgd", "sgd_momentum", "adam", "adam_custom"}) {
    SCOPED_TRACE(name);
    const std::vector<Tensor> whole = fixture_parameters();
    auto uninterrupted = make_optimizer(name, whole);
    for (int t = 0; t < 5; ++t) fixture_step(*uninterrupted, whole, t);
    const std::vector<Tensor> first = fixture_parameters();
    auto before = make_optimizer(name, first);
    for (int t = 0; t < 3; ++t) fixture_step(*before, first, t);
    const std::map<std::string, Tensor> state = before->state_dict();
    std::vector<Tensor> second;
    for (const Tensor& p : first) second.push_back(p.detach().clone().requires_grad_());
    auto after = make_optimizer(name, second);
    after->set_lr(1.0);  // the dict's rate replaces it
    after->load_state_dict(state);
    for (int t = 3; t < 5; ++t) fixture_step(*after, second, t);
    for (size_t i = 0; i < whole.size(); ++i)
      EXPECT_EQ(second[i].to_vector(), whole[i].to_vector()) << "parameter " << i;
    EXPECT_TRUE(all_close(second[0], optim_fixture(std::string(name) + "_step4_W"), 1e-5, 1e-5));
    EXPECT_EQ(after->state_dict().size(), uninterrupted->state_dict().size());
    for (const auto& [key, value] : uninterrupted->state_dict())
      EXPECT_EQ(after->state_dict().at(key).to_vector(), value.to_vector()) << key;
  }
  // Adam's entries, PyTorch's names; c's step count is 2 after 3 steps
  // (no gradient on step 1).
  const std::vector<Tensor> p = fixture_parameters();
  optim::Adam adam(p, 0.01);
  EXPECT_EQ(adam.state_dict().size(), 1u);  // no step yet: the lr alone
  for (int t = 0; t < 3; ++t) fixture_step(adam, p, t);
  const auto state = adam.state_dict();
  EXPECT_EQ(state.at("state.0.step").item(), 3);
  EXPECT_EQ(state.at("state.2.step").item(), 2);
  EXPECT_EQ(state.at("state.0.exp_avg").shape(), p[0].shape());
  EXPECT_EQ(state.at("state.1.exp_avg_sq").shape(), p[1].shape());
  EXPECT_EQ(state.at("param_groups.0.lr").item(), 0.01);
}

TEST(OptimStateDictTest, BadStateDictsNameTheEntry) {
  const std::vector<Tensor> p = fixture_parameters();
  optim::Adam adam(p, 0.01);
  for (int t = 0; t < 2; ++t) fixture_step(adam, p, t);
  const auto good = adam.state_dict();
  const auto refused = [&](std::map<std::string, Tensor> state,
                           const std::vector<std::string>& fragments) {
    optim::Adam fresh(fixture_parameters(), 0.01);
    const auto before = fresh.state_dict();
    const bool thrown = throws_error([&] { fresh.load_state_dict(state); }, fragments);
    return thrown && fresh.state_dict().size() == before.size();  // unchanged
  };
  auto state = good;
  state["state.0.exp_avg"] = zeros({9});
  EXPECT_TRUE(refused(state, {"Adam.load_state_dict", "state.0.exp_avg", "[9]"}));
  state = good;
  state["state.3.exp_avg"] = zeros({1});
  EXPECT_TRUE(refused(state, {"Adam.load_state_dict", "unexpected entry 'state.3.exp_avg'"}));
  state = good;
  state["state.0.momentum"] = zeros({1});
  EXPECT_TRUE(refused(state, {"unexpected entry 'state.0.momentum'", "exp_avg_sq"}));
  state = good;
  state.erase("state.1.exp_avg_sq");
  EXPECT_TRUE(refused(state, {"parameter 1", "not all three"}));
  state = good;
  state["state.0.step"] = scalar_tensor(0, kInt64);
  EXPECT_TRUE(refused(state, {"state.0.step", "step count >= 1"}));
  state = good;
  state.erase("param_groups.0.lr");
  EXPECT_TRUE(refused(state, {"param_groups.0.lr"}));
  state = good;
  const DType other = p[0].dtype() == kFloat64 ? kFloat32 : kFloat64;
  state["state.0.exp_avg"] = zeros(p[0].shape(), other);
  EXPECT_TRUE(refused(state, {"state.0.exp_avg", dtype_name(other), dtype_name(p[0].dtype())}));
  optim::SGD plain(fixture_parameters(), 0.1);
  EXPECT_TRUE(throws_error(
      [&] {
        plain.load_state_dict({{"param_groups.0.lr", tensor({0.1}, {1}, kFloat64)},
                               {"state.0.momentum_buffer", zeros(p[0].shape())}});
      },
      {"SGD.load_state_dict", "state.0.momentum_buffer", "without momentum"}));
}

TEST(OptimArgumentTest, BadArgumentsThrowNamingTheOptimizer) {
  Tensor w = ones({2}).requires_grad_();
  EXPECT_TRUE(throws_error([&] { optim::SGD({w}, -0.1); }, {"SGD", "learning rate", "-0.1"}));
  EXPECT_TRUE(throws_error([&] { optim::SGD({w}, NAN); }, {"SGD", "learning rate", "nan"}));
  EXPECT_TRUE(throws_error([&] { optim::SGD({w}, 0.1, -1); }, {"SGD", "momentum", "-1"}));
  EXPECT_TRUE(throws_error([&] { optim::Adam({w}, -1); }, {"Adam", "learning rate"}));
  EXPECT_TRUE(throws_error(
      [&] {
        optim::Adam({w}, 0.1, {1.0, 0.999});
      },
      {"Adam", "beta1", "[0, 1)"}));
  EXPECT_TRUE(throws_error([&] { optim::Adam({w}, 0.1, {0.9, -0.5}); }, {"Adam", "beta2", "-0.5"}));
  EXPECT_TRUE(throws_error([&] { optim::Adam({w}, 0.1, {0.9, 0.999}, -1e-8); }, {"Adam", "eps"}));
  EXPECT_TRUE(throws_error([&] { optim::SGD({}, 0.1); }, {"SGD", "empty parameter list"}));
  EXPECT_TRUE(throws_error([&] { optim::Adam({}, 0.1); }, {"Adam", "empty parameter list"}));
  EXPECT_TRUE(throws_error(
      [&] {
        optim::Adam({w, arange(3, kInt64)}, 0.1);
      },
      {"Adam", "parameter 1", "[3]", "int64"}));
  EXPECT_TRUE(
      throws_error([&] { optim::SGD({w * 2.0}, 0.1); }, {"SGD", "not a leaf", "MulBackward"}));
  EXPECT_TRUE(
      throws_error([&] { optim::SGD({Tensor()}, 0.1); }, {"SGD", "parameter 0", "undefined"}));
  EXPECT_TRUE(throws_error(
      [&] {
        optim::SGD({transpose(ones({2, 3}), 0, 1)}, 0.1);
      },
      {"SGD", "not contiguous", "[3, 2]"}));
}

}  // namespace
}  // namespace ag
