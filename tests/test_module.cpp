// nn::Module, Linear and Dropout: parameter registration and names, state
// dicts (and their strict errors), train/eval, zero_grad, dtype conversion,
// Linear's values and gradients, Dropout's statistics and reproducibility.
#include <cmath>
#include <type_traits>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::leaf64;
using testing::throws_error;

// Two levels of nesting, registered in the order PyTorch would see them.
class Block : public nn::Module {
 public:
  Block() : Module("Block"), proj(3, 4), out(4, 2, /*bias=*/false) {
    register_module("proj", &proj);
    register_module("drop", &drop);
    register_module("out", &out);
  }
  nn::Linear proj;
  nn::Dropout drop{0.5};
  nn::Linear out;
};

class Net : public nn::Module {
 public:
  Net() : Module("Net"), scale(ones({2})) {
    register_parameter("scale", &scale);
    register_module("block", &block);
    register_module("head", &head);
  }
  Tensor scale;
  Block block;
  nn::Linear head{2, 1};
};

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, p] : m.named_parameters()) names.push_back(name);
  return names;
}

static_assert(!std::is_copy_constructible_v<nn::Module>, "modules hold pointers to their members");

TEST(ModuleTest, NamedParametersAreOrderedAndDotted) {
  Net net;
  EXPECT_EQ(names_of(net),
            (std::vector<std::string>{"scale", "block.proj.weight", "block.proj.bias",
                                      "block.out.weight", "head.weight", "head.bias"}));
  const auto named = net.named_parameters();
  const auto params = net.parameters();
  ASSERT_EQ(params.size(), named.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(params[i].is_same(named[i].second));
    EXPECT_TRUE(params[i].requires_grad());
  }
  EXPECT_TRUE(named[1].second.is_same(net.block.proj.weight));
  EXPECT_EQ(net.type_name(), "Net");
}

TEST(ModuleTest, StateDictSharesStorageWithoutGraph) {
  Net net;
  const auto state = net.state_dict();
  ASSERT_EQ(state.size(), 6u);
  const Tensor& w = state.at("block.proj.weight");
  EXPECT_FALSE(w.requires_grad());
  EXPECT_EQ(w.data_ptr<float>(), net.block.proj.weight.data_ptr<float>());
  EXPECT_EQ(w.shape(), (Shape{4, 3}));
}

TEST(ModuleTest, StateDictKeepsRegistrationOrder) {
  Net net;
  // "scale" first and "head" last, as registered: not alphabetical.
  std::vector<std::string> names;
  for (const auto& [name, p] : net.state_dict()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"scale", "block.proj.weight", "block.proj.bias",
                                             "block.out.weight", "head.weight", "head.bias"}));
  EXPECT_EQ(names, names_of(net));
}

TEST(ModuleTest, StateDictLooksUpLikeAMap) {
  Net net;
  nn::StateDict state = net.state_dict();
  EXPECT_TRUE(state.contains("head.bias"));
  EXPECT_EQ(state.count("nope"), 0u);
  EXPECT_TRUE(throws_error([&] { state.at("nope"); },
                           {"state_dict", "no entry named \"nope\"", "6 entries"}));
  state["extra"] = zeros({1});  // a new name goes last
  EXPECT_EQ((state.end() - 1)->first, "extra");
  state["scale"] = zeros({2});  // an existing one keeps its place
  EXPECT_EQ(state.begin()->first, "scale");
  EXPECT_EQ(state.size(), 7u);
  EXPECT_EQ(state.erase("extra"), 1u);
  EXPECT_EQ(state.erase("extra"), 0u);
  // The std::map it converts to holds the same entries.
  const std::map<std::string, Tensor> map = state;
  EXPECT_EQ(map.size(), 6u);
  EXPECT_TRUE(map.at("scale").is_same(state.at("scale")));
}

TEST(ModuleTest, LoadStateDictCopiesInPlaceAndConvertsDtype) {
  Net a, b;
  const Tensor handle = b.block.proj.weight;
  std::map<std::string, Tensor> state = a.state_dict();
  state["head.bias"] = tensor({7.5}, {1}, kFloat64);  // converted to the parameter's float32
  b.load_state_dict(state);
  EXPECT_TRUE(b.block.proj.weight.is_same(handle));  // same tensor: optimizers keep working
  EXPECT_TRUE(all_close(b.block.proj.weight, a.block.proj.weight, 0, 0));
  EXPECT_EQ(b.head.bias.dtype(), kFloat32);
  EXPECT_EQ(b.head.bias.item(), 7.5);
}

TEST(ModuleTest, StrictLoadRejectsMissingUnexpectedAndMisShapedEntries) {
  Net net;
  const auto good = net.state_dict();
  auto missing = good;
  missing.erase("block.out.weight");
  EXPECT_TRUE(throws_error([&] { net.load_state_dict(missing); },
                           {"Net.load_state_dict", "missing", "block.out.weight", "[2, 4]"}));
  auto unexpected = good;
  unexpected["block.out.bias"] = zeros({2});
  EXPECT_TRUE(throws_error([&] { net.load_state_dict(unexpected); },
                           {"Net.load_state_dict", "unexpected", "block.out.bias", "[2]"}));
  auto misshaped = good;
  misshaped["block.proj.weight"] = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { net.load_state_dict(misshaped); },
                           {"Net.load_state_dict", "block.proj.weight", "[3, 4]", "[4, 3]"}));
  EXPECT_TRUE(throws_error([&] { net.load_state_dict(misshaped, /*strict=*/false); },
                           {"block.proj.weight", "[3, 4]", "[4, 3]"}));
  auto boolean = good;
  boolean["scale"] = tensor({1, 0}, {2}, kBool);
  EXPECT_TRUE(throws_error([&] { net.load_state_dict(boolean); }, {"scale", "bool"}));
}

TEST(ModuleTest, NonStrictLoadSkipsMissingAndUnexpected) {
  Net net;
  std::map<std::string, Tensor> partial{{"scale", tensor({3, 4}, {2})}, {"extra", zeros({5})}};
  net.load_state_dict(partial, /*strict=*/false);
  EXPECT_EQ(net.scale.to_vector(), (std::vector<double>{3, 4}));
}

TEST(ModuleTest, FailedLoadChangesNothing) {
  Net net;
  const std::vector<double> before = net.scale.to_vector();
  std::map<std::string, Tensor> state = net.state_dict();
  state["scale"] = tensor({9, 9}, {2});
  state["head.weight"] = zeros({5, 5});
  EXPECT_THROW(net.load_state_dict(state), Error);
  EXPECT_EQ(net.scale.to_vector(), before);
}

TEST(ModuleTest, TrainAndEvalPropagateToEverySubModule) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  EXPECT_FALSE(net.block.is_training());
  EXPECT_FALSE(net.block.drop.is_training());
  net.block.train();
  EXPECT_TRUE(net.block.drop.is_training());
  EXPECT_FALSE(net.is_training());
  net.train(false);
  EXPECT_FALSE(net.block.drop.is_training());
}

// As torch's Module.apply: children first (depth first, registration order),
// then the module itself.
TEST(ModuleTest, ApplyVisitsSubModulesThenItself) {
  Net net;
  std::vector<const nn::Module*> visited;
  net.apply([&](nn::Module& m) { visited.push_back(&m); });
  const std::vector<const nn::Module*> expected{&net.block.proj, &net.block.drop, &net.block.out,
                                                &net.block,      &net.head,       &net};
  EXPECT_EQ(visited, expected);
}

TEST(ModuleTest, ZeroGradClearsEveryParameter) {
  Net net;
  Tensor y = net.head(net.block.out(net.block.proj(ones({1, 3}))) * net.scale);
  sum(y).backward();
  for (const Tensor& p : net.parameters()) EXPECT_TRUE(p.grad().defined());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(ModuleTest, ToConvertsEveryParameter) {
  Net net;
  const std::vector<double> before = net.block.proj.weight.to_vector();
  net.to(kFloat64);
  for (const auto& [name, p] : net.named_parameters()) {
    EXPECT_EQ(p.dtype(), kFloat64) << name;
    EXPECT_TRUE(p.requires_grad()) << name;
    EXPECT_TRUE(p.is_leaf()) << name;
  }
  EXPECT_EQ(net.block.proj.weight.to_vector(), before);
  EXPECT_EQ(net.block.proj(ones({1, 3}, kFloat64)).dtype(), kFloat64);
  EXPECT_TRUE(throws_error([&] { net.to(kInt64); }, {"Net.to", "int64"}));
}

// ---- Linear ----------------------------------------------------------------------------------

TEST(LinearTest, ComputesXWTransposePlusB) {
  nn::Linear linear(3, 2);
  linear.load_state_dict(
      {{"weight", tensor({1, 2, 3, 4, 5, 6}, {2, 3})}, {"bias", tensor({0.5, -1}, {2})}});
  // x [2, 2, 3] (any rank): y[..., o] = sum_i x[..., i] W[o, i] + b[o]
  Tensor x = tensor({1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {2, 2, 3});
  Tensor y = linear(x);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_TRUE(all_close(y, {1.5, 3, 2.5, 4, 3.5, 5, 6.5, 14}));
  nn::Linear no_bias(3, 2, /*bias=*/false);
  EXPECT_FALSE(no_bias.bias.defined());
  EXPECT_EQ(names_of(no_bias), (std::vector<std::string>{"weight"}));
}

TEST(LinearTest, InitIsUniformInPlusMinusOneOverSqrtInAndSeeded) {
  manual_seed(42);
  nn::Linear a(16, 32);
  manual_seed(42);
  nn::Linear b(16, 32);
  EXPECT_EQ(a.weight.to_vector(), b.weight.to_vector());
  EXPECT_EQ(a.bias.to_vector(), b.bias.to_vector());
  for (double w : a.weight.to_vector()) EXPECT_LE(std::abs(w), 0.25);
  EXPECT_GT(max(abs(a.weight)).item(), 0.2);  // and it uses the range
  EXPECT_EQ(a.weight.shape(), (Shape{32, 16}));
  EXPECT_EQ(a.bias.shape(), (Shape{32}));
}

TEST(LinearTest, Gradcheck) {
  nn::Linear linear(3, 2);
  linear.to(kFloat64);
  std::vector<Tensor> inputs{leaf64({2, 4, 3}), linear.weight, linear.bias};
  EXPECT_TRUE(grad_ok(
      [&](const std::vector<Tensor>& in) {
        linear.weight = in[1];
        linear.bias = in[2];
        return linear(in[0]);
      },
      inputs));
}

TEST(LinearTest, BadInput) {
  EXPECT_TRUE(throws_error([] { nn::Linear(0, 2); }, {"Linear", "positive"}));
  nn::Linear linear(3, 2);
  EXPECT_THROW(linear(ones({2, 4})), Error);
}

// ---- Dropout ---------------------------------------------------------------------------------

TEST(DropoutTest, IdentityInEval) {
  nn::Dropout dropout(0.5);
  dropout.eval();
  Tensor x = rand({4, 5});
  EXPECT_EQ(dropout(x).to_vector(), x.to_vector());
  nn::Dropout none(0.0);
  EXPECT_EQ(none(x).to_vector(), x.to_vector());
}

TEST(DropoutTest, KeepsOneMinusPAndScalesByItsInverse) {
  manual_seed(3);
  const double p = 0.3;
  nn::Dropout dropout(p);
  Tensor y = dropout(ones({100000}));
  int64_t kept = 0;
  for (double v : y.to_vector()) {
    if (v != 0) {
      ++kept;
      EXPECT_NEAR(v, 1 / (1 - p), 1e-6);
    }
  }
  const double fraction = static_cast<double>(kept) / 100000.0;
  // binomial standard deviation sqrt(p (1-p) / n) ~ 0.0014: 5 sigma
  EXPECT_NEAR(fraction, 1 - p, 0.0075);
  EXPECT_NEAR(mean(y).item(), 1.0, 0.011);  // unbiased: E[y] = x
}

TEST(DropoutTest, ReproducibleFromManualSeedAndDifferentiable) {
  nn::Dropout dropout(0.5);
  manual_seed(11);
  Tensor x = rand({64}).requires_grad_();
  manual_seed(12);
  Tensor a = dropout(x);
  manual_seed(12);
  Tensor b = dropout(x);
  EXPECT_EQ(a.to_vector(), b.to_vector());
  Tensor c = dropout(x);
  EXPECT_NE(a.to_vector(), c.to_vector());
  // dy/dx is the same mask: 0 or 1/(1-p).
  sum(a).backward();
  const std::vector<double> g = x.grad().to_vector(), y = a.to_vector();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], y[i] == 0 ? 0.0 : 2.0);
}

TEST(DropoutTest, RejectsPOutsideZeroOne) {
  EXPECT_TRUE(throws_error([] { nn::Dropout(1.0); }, {"Dropout", "[0, 1)"}));
  EXPECT_TRUE(throws_error([] { nn::Dropout(-0.1); }, {"Dropout", "[0, 1)"}));
}

}  // namespace
}  // namespace ag
