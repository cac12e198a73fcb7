// Hostile input to the optimizers and schedulers (issue 29): the same tensor
// given twice, absurd hyper-parameters, odd parameter lists, steps without
// gradients. Each case gets an ag::Error naming the optimizer and the bad
// value, or PyTorch's result; never a silently different number.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ag {
namespace {

using testing::throws_error;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor optim_leaf(std::vector<double> values, DType dtype = kFloat32) {
  const int64_t n = static_cast<int64_t>(values.size());
  return tensor(values, {n}, dtype).requires_grad_();
}

// ---- the same tensor twice ------------------------------------------------------

TEST(RobustnessOptimTest, TheSameTensorTwiceIsRefusedWithBothPositions) {
  const Tensor p = optim_leaf({1, 1}), q = optim_leaf({1, 1}), r = optim_leaf({2});
  // Side by side, apart, and as a second handle to the same tensor.
  const Tensor p_again = p;
  for (const auto& [tensors, positions] : std::vector<std::pair<std::vector<Tensor>, std::string>>{
           {{p, p}, "parameter 1 of shape [2] is the same tensor as parameter 0"},
           {{q, r, p, q}, "parameter 3 of shape [2] is the same tensor as parameter 0"},
           {{p, q, p_again}, "parameter 2 of shape [2] is the same tensor as parameter 0"},
       }) {
    const auto& params = tensors;  // a lambda captures a variable, not a binding (Clang 14)
    EXPECT_TRUE(throws_error([&] { optim::SGD(params, 0.5); }, {"SGD", positions}));
    EXPECT_TRUE(throws_error([&] { optim::SGD(params, 0.5, 0.9); }, {"SGD", positions}));
    EXPECT_TRUE(throws_error([&] { optim::Adam(params, 0.5); }, {"Adam", positions}));
  }
  // model.parameters() plus one of its tensors again: the learner's mistake.
  nn::Linear layer(2, 2);
  std::vector<Tensor> params = layer.parameters();
  params.push_back(layer.weight);
  EXPECT_TRUE(throws_error([&] { optim::Adam(params, 0.1); },
                           {"Adam", "parameter 2 of shape [2, 2]", "parameter 0"}));
}

TEST(RobustnessOptimTest, EqualValuesAreNotTheSameTensor) {
  // Two parameters holding equal values (or sharing nothing but their values)
  // are two parameters: each moves once. (Identity, never value equality.)
  const Tensor a = optim_leaf({1, 1}), b = optim_leaf({1, 1});
  optim::SGD sgd({a, b}, 0.5);
  sum(a + b).backward();
  sgd.step();
  EXPECT_EQ(a.to_vector(), (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(b.to_vector(), (std::vector<double>{0.5, 0.5}));
}

TEST(RobustnessOptimTest, ARefusedOptimizerChangesNothing) {
  // The check runs before any state exists: the gradient and the values stay.
  const Tensor p = optim_leaf({1, 2});
  sum(p * p).backward();
  EXPECT_TRUE(throws_error([&] { optim::Adam({p, p}, 0.1); }, {"Adam", "same tensor"}));
  EXPECT_EQ(p.to_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(p.grad().to_vector(), (std::vector<double>{2, 4}));
  // The same parameter once trains at the rate asked for (what {p, p} broke:
  // SGD({p, p}, 0.5) moved p by 1.0).
  optim::SGD sgd({p}, 0.5);
  sgd.step();
  EXPECT_EQ(p.to_vector(), (std::vector<double>{0, 0}));
}

TEST(RobustnessOptimTest, TiedWeightsAreListedOnceAsInPyTorch) {
  // b.weight = a.weight ties them; parameters() lists the tensor once (under
  // its first name), so an optimizer built from it accepts it and moves it once.
  struct Tied : nn::Module {
    Tied() : Module("Tied") {
      register_module("a", &a);
      register_module("b", &b);
      b.weight = a.weight;
    }
    nn::Linear a{2, 2, false}, b{2, 2, false};
  } tied;
  const auto named = tied.named_parameters();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].first, "a.weight");
  EXPECT_EQ(tied.parameters().size(), 1u);
  EXPECT_EQ(tied.state_dict().size(), 2u);  // state_dict keeps both names, as torch's
  const std::vector<double> before = tied.a.weight.to_vector();
  optim::SGD sgd(tied.parameters(), 1.0);
  sum(tied.a.weight).backward();
  sgd.step();
  for (size_t k = 0; k < before.size(); ++k)
    EXPECT_FLOAT_EQ(tied.b.weight.to_vector()[k], before[k] - 1);
}

// ---- hyper-parameters -----------------------------------------------------------

TEST(RobustnessOptimTest, NonFiniteHyperParametersAreRefused) {
  const Tensor w = optim_leaf({1});
  for (const double bad : std::vector<double>{kInf, -kInf, NAN}) {
    const std::string shown = number_str(bad);
    EXPECT_TRUE(throws_error([&] { optim::SGD({w}, bad); }, {"SGD", "learning rate", shown}));
    EXPECT_TRUE(throws_error([&] { optim::Adam({w}, bad); }, {"Adam", "learning rate", shown}));
    EXPECT_TRUE(throws_error([&] { optim::SGD({w}, 0.1, bad); }, {"SGD", "momentum", shown}));
    EXPECT_TRUE(throws_error([&] { optim::Adam({w}, 0.1, {bad, 0.9}); }, {"Adam", "beta1", shown}));
    EXPECT_TRUE(throws_error([&] { optim::Adam({w}, 0.1, {0.9, bad}); }, {"Adam", "beta2", shown}));
    EXPECT_TRUE(throws_error(
        [&] {
          optim::Adam({w}, 0.1, {0.9, 0.999}, bad);
        },
        {"Adam", "eps", shown}));
    optim::SGD sgd({w}, 0.1);
    EXPECT_TRUE(throws_error([&] { sgd.set_lr(bad); }, {"SGD", "learning rate", shown}));
    EXPECT_EQ(sgd.lr, 0.1);  // unchanged
    EXPECT_TRUE(throws_error([&] { optim::StepLR(sgd, 1, bad); }, {"StepLR", "gamma", shown}));
    EXPECT_TRUE(throws_error([&] { optim::CosineAnnealingLR(sgd, 3, bad); },
                             {"CosineAnnealingLR", "eta_min", shown}));
  }
  // beta = 1 would divide by 1 - 1^t = 0 in the bias correction.
  EXPECT_TRUE(throws_error([&] { optim::Adam({w}, 0.1, {1.0, 0.999}); }, {"Adam", "beta1", "1"}));
  optim::SGD sgd({w}, 0.1);
  EXPECT_TRUE(throws_error([&] { optim::StepLR(sgd, -5); }, {"StepLR", "step_size", "-5"}));
  EXPECT_TRUE(throws_error([&] { optim::CosineAnnealingLR(sgd, -1); },
                           {"CosineAnnealingLR", "T_max", "-1"}));
}

TEST(RobustnessOptimTest, ExtremeButFiniteHyperParametersGivePyTorchsNumbers) {
  // torch.optim.SGD([w], lr=1e300) after w.sum().backward(): w = 1 - 1e300.
  const Tensor w = optim_leaf({1}, kFloat64);
  optim::SGD sgd({w}, 1e300);
  sum(w).backward();
  sgd.step();
  EXPECT_EQ(w.item(), 1 - 1e300);
  // lr = 0 leaves w alone; Adam with eps = 0 and a zero gradient gives 0/0
  // = NaN, as torch.optim.Adam(eps=0) does.
  Tensor z = optim_leaf({3}, kFloat64);
  optim::Adam adam({z}, 0.1, {0.9, 0.999}, 0.0);
  z.set_grad(zeros({1}, kFloat64));
  adam.step();
  EXPECT_TRUE(std::isnan(z.item()));
}

TEST(RobustnessOptimTest, SchedulersWithHugePeriodsOrRisingRates) {
  // T_max near int64's limit: PyTorch's (e - 1 - T) % (2 T) would overflow
  // 2 T (undefined behaviour in C++); the rate stays at its base.
  const Tensor w = optim_leaf({1}, kFloat64);
  optim::SGD sgd({w}, 0.1);
  optim::CosineAnnealingLR cosine(sgd, std::numeric_limits<int64_t>::max());
  for (int e = 0; e < 3; ++e) cosine.step();
  EXPECT_DOUBLE_EQ(sgd.lr, 0.1);
  optim::SGD sgd2({w}, 0.1);
  optim::CosineAnnealingLR past_two_62(sgd2, (int64_t{1} << 62) + 1);
  past_two_62.step();
  EXPECT_DOUBLE_EQ(sgd2.lr, 0.1);
  // eta_min above the base rate: the rate rises to eta_min and back, as
  // torch's CosineAnnealingLR(SGD([w], lr=0.1), T_max=3, eta_min=1.0) does.
  optim::SGD rising({w}, 0.1);
  optim::CosineAnnealingLR up(rising, 3, 1.0);
  std::vector<double> rates;
  for (int e = 0; e < 6; ++e) {
    up.step();
    rates.push_back(rising.lr);
  }
  // (torch's values, printed with repr(): the chainable form, bit for bit.)
  const std::vector<double> torch = {0.32499999999999996, 0.7749999999999999, 1.0, 0.775,
                                     0.3249999999999995,  0.09999999999999942};
  EXPECT_EQ(rates, torch);
  // gamma = 0 drops the rate to 0 and keeps it there; a huge step_size never decays.
  optim::SGD dropped({w}, 0.1);
  optim::StepLR zero(dropped, 1, 0.0);
  zero.step();
  zero.step();
  EXPECT_EQ(dropped.lr, 0.0);
  optim::SGD kept({w}, 0.1);
  optim::StepLR never(kept, std::numeric_limits<int64_t>::max());
  for (int e = 0; e < 5; ++e) never.step();
  EXPECT_EQ(kept.lr, 0.1);
}

// ---- parameter lists ------------------------------------------------------------

TEST(RobustnessOptimTest, OddParameterListsAreRefusedByPosition) {
  const Tensor w = optim_leaf({1});
  EXPECT_TRUE(throws_error(
      [&] {
        optim::Adam({w, Tensor()}, 0.1);
      },
      {"Adam", "parameter 1", "undefined"}));
  EXPECT_TRUE(throws_error(
      [&] {
        optim::SGD({w, zeros({2}, kInt64)}, 0.1);
      },
      {"SGD", "parameter 1", "float32 or float64", "int64"}));
  EXPECT_TRUE(throws_error([&] { optim::Adam({zeros({2}, kBool)}, 0.1); },
                           {"Adam", "parameter 0", "bool"}));
  EXPECT_TRUE(throws_error(
      [&] {
        optim::SGD({w, reshape(w, {1, 1})}, 0.1);
      },
      {"SGD", "parameter 1", "not a leaf"}));
  EXPECT_TRUE(throws_error(
      [&] {
        optim::Adam({transpose(zeros({2, 3}), 0, 1)}, 0.1);
      },
      {"Adam", "parameter 0", "not contiguous"}));
}

TEST(RobustnessOptimTest, MixedDtypesStepEachInItsOwn) {
  // float32 and float64 parameters in one optimizer give the numbers that
  // one optimizer per dtype gives (bit for bit).
  auto run = [](bool together) {
    Tensor a = optim_leaf({1, -2, 3}), b = optim_leaf({0.5, 0.25}, kFloat64);
    std::vector<std::unique_ptr<optim::Adam>> adams;
    if (together) {
      adams.push_back(std::make_unique<optim::Adam>(std::vector<Tensor>{a, b}, 0.1));
    } else {
      adams.push_back(std::make_unique<optim::Adam>(std::vector<Tensor>{a}, 0.1));
      adams.push_back(std::make_unique<optim::Adam>(std::vector<Tensor>{b}, 0.1));
    }
    for (int step = 0; step < 3; ++step) {
      a.zero_grad();
      b.zero_grad();
      sum(a * a).backward();
      sum(b * b * b).backward();
      for (auto& adam : adams) adam->step();
    }
    EXPECT_EQ(a.dtype(), kFloat32);
    EXPECT_EQ(b.dtype(), kFloat64);
    std::vector<double> values = a.to_vector();
    for (double v : b.to_vector()) values.push_back(v);
    return values;
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(RobustnessOptimTest, StepsWithoutGradientsChangeNothing) {
  // step() before any backward: no parameter moves, no state advances, so the
  // first real step is Adam's first step (bias correction with t = 1).
  const Tensor w = optim_leaf({1, 2}, kFloat64), fresh = optim_leaf({1, 2}, kFloat64);
  optim::Adam adam({w}, 0.1), reference({fresh}, 0.1);
  for (int k = 0; k < 3; ++k) adam.step();
  EXPECT_EQ(w.to_vector(), (std::vector<double>{1, 2}));
  sum(w * w).backward();
  sum(fresh * fresh).backward();
  adam.step();
  reference.step();
  EXPECT_EQ(w.to_vector(), fresh.to_vector());
  // zero_grad then step: again nothing (set_to_none, as PyTorch 2).
  adam.zero_grad();
  const std::vector<double> after = w.to_vector();
  adam.step();
  EXPECT_EQ(w.to_vector(), after);
  // A parameter that does not require grad, 0-d and empty parameters.
  const Tensor frozen = ones({2}), scalar = scalar_tensor(1.0).requires_grad_();
  const Tensor empty = zeros({0, 3}).requires_grad_();
  optim::SGD sgd({frozen, scalar, empty}, 0.5, 0.9);
  (scalar * scalar + sum(empty)).backward();
  sgd.step();
  EXPECT_EQ(frozen.to_vector(), (std::vector<double>{1, 1}));
  EXPECT_EQ(scalar.item(), 0.0);  // 1 - 0.5 * 2
  EXPECT_EQ(empty.grad().shape(), (Shape{0, 3}));
}

TEST(RobustnessOptimTest, GraphsRecordedBeforeAStepRefuseToBackward) {
  // Each optimizer, and with momentum (a second path through SGD::step).
  Tensor w = optim_leaf({1, 2});
  const Tensor x = tensor({3, 4});
  optim::SGD plain({w}, 0.1), heavy({w}, 0.1, 0.9);
  optim::Adam adam({w}, 0.1);
  for (optim::Optimizer* opt : std::vector<optim::Optimizer*>{&plain, &heavy, &adam}) {
    w.zero_grad();
    sum(w * x).backward();
    const Tensor stale = sum(w * x);
    opt->step();
    EXPECT_TRUE(throws_error([&] { stale.backward(); }, {"backward", "modified in place"}))
        << opt->name();
  }
}

}  // namespace
}  // namespace ag
