// Grades exercise 4 (starters/04_softmax_backward.cpp): softmax_backward
// against numerical derivatives of softmax (central differences, float64),
// on rows of the plain softmax and on a masked softmax's rows.
#include "exercises.h"
#include "grader.h"

int main() {
  ex::Grader g(4, "the softmax's backward", "core/src/ops_softmax.cpp (softmax's backward)");
  const std::string jacobian =
      "dx_j = y_j (dy_j - sum_i dy_i y_i): the sum over the row is the Jacobian's off-diagonal "
      "part, -y_i y_j";
  const auto softmax = [](const std::vector<ag::Tensor>& in) { return ag::softmax(in[0], -1); };

  const ag::Tensor x = ex::uniform({2, 3, 5}, 6), dy = ex::uniform({2, 3, 5}, 7);
  const ag::Tensor y = ag::softmax(x, -1);
  g.close(
      "rows of [2, 3, 5]", [&] { return ex::softmax_backward(y, dy); },
      ex::numeric_vjp(softmax, {x}, 0, dy), 1e-8, jacobian);

  // A masked row: its last two scores at -1e6 (zero weight), no gradient there.
  const ag::Tensor keep = ag::tensor({1, 1, 1, 0, 0}, {1, 5}, ag::kBool);
  const auto masked = [&](const std::vector<ag::Tensor>& in) {
    return ag::softmax(ag::where(keep, in[0], -1e6), -1);
  };
  const ag::Tensor xm = ex::uniform({4, 5}, 8), dym = ex::uniform({4, 5}, 9);
  g.close(
      "masked rows (the last two keys masked)",
      [&] { return ex::softmax_backward(masked({xm}), dym); },
      ex::numeric_vjp(masked, {xm}, 0, dym), 1e-8,
      jacobian + "; where y_j = 0 (a masked key) dx_j is 0");
  g.close(
      "PyTorch's numbers: rows of [3, 5]",
      [] { return ex::softmax_backward(ex::fixture("ex4.y"), ex::fixture("ex4.dy")); },
      ex::fixture("ex4.dx"), 1e-12, jacobian);
  return g.finish();
}
