// Grades exercise 5 (starters/05_bmm_backward.cpp): bmm_backward against
// numerical derivatives of bmm (central differences, float64), on
// rectangular shapes (so that a transpose in the wrong place shows in the
// shape) and on square ones (where only the values can show it).
#include "exercises.h"
#include "grader.h"

int main() {
  ex::Grader g(5, "bmm's backward", "core/src/ops_matmul.cpp (bmm's backward)");
  const auto product = [](const std::vector<ag::Tensor>& in) { return ag::bmm(in[0], in[1]); };
  const std::string da = "dA = dC B^T: [B, n, m] @ [B, m, k] -> A's shape [B, n, k]";
  const std::string db = "dB = A^T dC: [B, k, n] @ [B, n, m] -> B's shape [B, k, m]";
  struct Case {
    std::string name;
    ag::Shape a, b;
  };
  uint64_t seed = 10;
  for (const Case& c : {Case{"A [2, 3, 4] @ B [2, 4, 5]", {2, 3, 4}, {2, 4, 5}},
                        Case{"square: A [3, 4, 4] @ B [3, 4, 4]", {3, 4, 4}, {3, 4, 4}}}) {
    const ag::Tensor a = ex::uniform(c.a, seed++), b = ex::uniform(c.b, seed++);
    const ag::Tensor dc = ex::uniform(ag::bmm(a, b).shape(), seed++);
    ex::BmmGrads grads;
    if (!g.run<ex::BmmGrads>(
            c.name, [&] { return ex::bmm_backward(a, b, dc); }, grads, da)) {
      continue;
    }
    g.close(
        c.name + ": dA", [&] { return grads.da; }, ex::numeric_vjp(product, {a, b}, 0, dc), 1e-7,
        da);
    g.close(
        c.name + ": dB", [&] { return grads.db; }, ex::numeric_vjp(product, {a, b}, 1, dc), 1e-7,
        db);
  }
  ex::BmmGrads torch;
  if (g.run<ex::BmmGrads>(
          "PyTorch's numbers: runs",
          [] {
            return ex::bmm_backward(ex::fixture("ex5.a"), ex::fixture("ex5.b"),
                                    ex::fixture("ex5.dc"));
          },
          torch, da)) {
    g.close(
        "PyTorch's numbers: dA", [&] { return torch.da; }, ex::fixture("ex5.da"), 1e-12, da);
    g.close(
        "PyTorch's numbers: dB", [&] { return torch.db; }, ex::fixture("ex5.db"), 1e-12, db);
  }
  return g.finish();
}
