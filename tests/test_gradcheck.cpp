// gradcheck_in_place: a module's parameters checked where the module reads
// them, and the error when nothing was really checked (issue 67: gradcheck
// copies its inputs, so passing a module's parameters to it used to compare
// two zero gradients and pass).
#include <attograd/nn/layers.h>

#include "test_util.h"

namespace ag {
namespace {

// y = x * scale with a deliberately wrong backward for its parameter:
// dy/dscale claimed 2x where it is x. The input's gradient is right.
class BrokenScale : public nn::Module {
 public:
  BrokenScale() : Module("BrokenScale") {
    scale = tensor({1.5, -0.5, 2.0}, {3}, kFloat64).requires_grad_();
    register_parameter("scale", &scale);
  }
  Tensor forward(const Tensor& x) const {
    Tensor y = x.detach() * scale.detach();
    record(y, "BrokenScaleBackward", {x, scale},
           [x_ = x.detach(), s_ = scale.detach()](const Tensor& g) {
             return grads{g * s_, sum(g * x_ * 2.0, 0)};
           });
    return y;
  }
  Tensor scale;
};

TEST(GradcheckInPlaceTest, ChecksAModulesParametersWhereTheModuleReadsThem) {
  manual_seed(3);
  nn::Linear linear(4, 3);
  linear.to(kFloat64);
  const Tensor x = rand({5, 4}, kFloat64).requires_grad_();
  // A gradient from an earlier backward is given back untouched.
  linear.weight.set_grad(full({3, 4}, 7.0, kFloat64));
  const std::vector<double> weight_before = linear.weight.to_vector();

  std::vector<Tensor> checked = linear.parameters();
  checked.push_back(x);
  const GradcheckResult r = gradcheck_in_place([&] { return tanh(linear(x)); }, checked);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(linear.weight.to_vector(), weight_before);  // restored to the bit
  EXPECT_TRUE(all_close(linear.weight.grad(), std::vector<double>(12, 7.0)));
  EXPECT_FALSE(linear.bias.grad().defined());
}

TEST(GradcheckInPlaceTest, CatchesAWrongBackwardOfAParameter) {
  BrokenScale broken;
  const Tensor x = tensor({1.0, -4.0, 2.0, 0.5, 3.0, -1.0}, {2, 3}, kFloat64).requires_grad_();
  const GradcheckResult r =
      gradcheck_in_place([&] { return broken.forward(x); }, {x, broken.scale});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.worst_input, 1u);  // the parameter, not x
  EXPECT_NEAR(r.analytic, 2 * r.numeric, 1e-6);
  EXPECT_NE(r.message.find("gradcheck_in_place FAILED"), std::string::npos) << r.message;
}

TEST(GradcheckInPlaceTest, CopiesOfAModulesParametersAreRefusedAsNothingChecked) {
  // The accident the in-place call exists for: gradcheck gives fn copies,
  // and fn reads the module's own parameters, so no derivative moves.
  manual_seed(3);
  nn::Linear linear(4, 3);
  linear.to(kFloat64);
  const Tensor x = rand({5, 4}, kFloat64);
  EXPECT_TRUE(throws_error(
      [&] {
        gradcheck([&](const std::vector<Tensor>&) { return linear(x); }, linear.parameters());
      },
      {"gradcheck", "nothing was checked", "2 tensors", "gradcheck_in_place"}));
}

TEST(GradcheckInPlaceTest, RefusesTensorsItCannotCheck) {
  manual_seed(3);
  nn::Linear linear(4, 3);
  linear.to(kFloat64);
  const Tensor x = rand({5, 4}, kFloat64);
  auto fn = [&] { return linear(x); };
  EXPECT_TRUE(throws_error([&] { gradcheck_in_place(fn, {x}); },
                           {"gradcheck_in_place", "tensor 0", "[5, 4]", "does not require grad"}));
  EXPECT_TRUE(throws_error([&] { gradcheck_in_place(fn, {linear.weight * 2.0}); },
                           {"gradcheck_in_place", "MulBackward", "leaves"}));
  EXPECT_TRUE(throws_error([&] { gradcheck_in_place(fn, {rand({2}).requires_grad_()}); },
                           {"gradcheck_in_place", "float32", "float64"}));
  EXPECT_TRUE(
      throws_error([&] { gradcheck([&](const std::vector<Tensor>&) { return linear(x); }, {x}); },
                   {"gradcheck", "nothing to check"}));
}

}  // namespace
}  // namespace ag
