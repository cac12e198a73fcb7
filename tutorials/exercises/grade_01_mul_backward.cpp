// Grades exercise 1 (starters/01_mul_backward.cpp): mul_backward against
// numerical derivatives of a * b (central differences, float64), for equal
// shapes and for each way an input can be broadcast.
#include "exercises.h"
#include "grader.h"

int main() {
  ex::Grader g(1, "the backward of a * b, with broadcasting",
               "core/src/ops_binary.cpp (mul's backward) and core/src/autograd.cpp "
               "(sum_to_shape)");
  const auto product = [](const std::vector<ag::Tensor>& in) { return in[0] * in[1]; };
  struct Case {
    std::string name;
    ag::Shape a, b;
    std::string hint_a, hint_b;
  };
  const std::string chain = "dc/da = b and dc/db = a: da = dc * b, db = dc * a";
  const std::vector<Case> cases = {
      {"a [2, 3] * b [2, 3] (no broadcasting)", {2, 3}, {2, 3}, chain, chain},
      {"a [2, 3] * b [3] (b's row used twice)",
       {2, 3},
       {3},
       chain,
       "db has b's shape [3]: sum dc * a over axis 0, the axis b lacks"},
      {"a [2, 1, 4] * b [3, 1] (both broadcast, c [2, 3, 4])",
       {2, 1, 4},
       {3, 1},
       "da has a's shape [2, 1, 4]: sum dc * b over axis 1 keeping it (keepdim)",
       "db has b's shape [3, 1]: sum dc * a over axis 0 (which b lacks), then over its last "
       "axis keeping it"},
      {"a [1] * b [2, 2] (a one-element a)",
       {1},
       {2, 2},
       "da has a's shape [1]: sum dc * b over every axis, down to one element",
       chain},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const ag::Tensor a = ex::uniform(c.a, seed++), b = ex::uniform(c.b, seed++);
    const ag::Tensor dc = ex::uniform((a * b).shape(), seed++);
    ex::MulGrads grads;
    if (!g.run<ex::MulGrads>(
            c.name + ": runs", [&] { return ex::mul_backward(a, b, dc); }, grads, chain)) {
      continue;
    }
    g.close(
        c.name + ": da", [&] { return grads.da; }, ex::numeric_vjp(product, {a, b}, 0, dc), 1e-7,
        c.hint_a);
    g.close(
        c.name + ": db", [&] { return grads.db; }, ex::numeric_vjp(product, {a, b}, 1, dc), 1e-7,
        c.hint_b);
  }
  ex::MulGrads torch;
  if (g.run<ex::MulGrads>(
          "PyTorch's numbers: a [2, 1, 4] * b [3, 1] runs",
          [] {
            return ex::mul_backward(ex::fixture("ex1.a"), ex::fixture("ex1.b"),
                                    ex::fixture("ex1.dc"));
          },
          torch, chain)) {
    g.close(
        "PyTorch's numbers: da", [&] { return torch.da; }, ex::fixture("ex1.da"), 1e-12,
        cases[2].hint_a);
    g.close(
        "PyTorch's numbers: db", [&] { return torch.db; }, ex::fixture("ex1.db"), 1e-12,
        cases[2].hint_b);
  }
  return g.finish();
}
