// Tutorial 1 — Tensors and autograd.
//
// A small expression built from attograd's ops, the graph autograd records
// for it, one backward pass, and three ways to trust the gradients it gives:
// the derivative worked out by hand, finite differences (gradcheck), and
// gradcheck catching a backward that is wrong on purpose.
//
// Run: build/tutorial_01_autograd [--no-pause] [--out DIR]
#include <algorithm>
#include <cmath>

#include "tutorial.h"

namespace {

// Prints the graph that produced `t`, one tensor a line, each op's inputs
// indented below it. A tensor used by two ops is printed under both.
// (Recursion is fine for a graph this small; backward() itself walks the
// graph with an explicit stack.) A node keeps of each input an ag::NodeInput,
// which answers the same questions as a Tensor: one template prints both.
template <typename TensorOrInput>
void print_graph(const TensorOrInput& t, int depth = 0) {
  std::cout << std::string(2 * depth, ' ');
  if (t.is_leaf()) {
    std::cout << (t.name().empty() ? "(constant)" : t.name()) << " " << ag::shape_str(t.shape())
              << (t.requires_grad() ? "  leaf, requires grad" : "") << "\n";
    return;
  }
  std::cout << t.grad_fn_name() << " -> " << ag::shape_str(t.shape())
            << (t.name().empty() ? "" : "  (" + t.name() + ")") << "\n";
  for (const ag::NodeInput& input : t.grad_fn()->inputs()) print_graph(input, depth + 1);
}

// x^3 as a hand-made op: the forward under NoGradGuard (so that the three
// multiplications record nothing), then its own backward, as every op in
// core/src/ops_*.cpp does. With `correct` false the backward has a bug.
ag::Tensor cube(const ag::Tensor& x, bool correct) {
  ag::Tensor out;
  {
    ag::NoGradGuard no_grad;
    out = x * x * x;
  }
  ag::record(out, correct ? "CubeBackward" : "BuggyCubeBackward", {x},
             [x_ = x.detach(), correct](const ag::Tensor& g) {
               // d(x^3)/dx = 3 x^2; the bug forgets the 3.
               return ag::grads{correct ? g * 3.0 * x_ * x_ : g * x_ * x_};
             });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 1, "Tensors and autograd");

  t.step("Tensors",
         "A tensor is an n-dimensional array with a shape and a dtype. We work in float64 "
         "so that the comparisons below can be exact to 1e-12. requires_grad_() marks the "
         "tensors we want derivatives for: they are the leaves of the graph.");
  const ag::Tensor x = ag::tensor({0.5, -1.0, 1.5, 0.25, -0.75, 2.0}, {3, 2}, ag::kFloat64)
                           .requires_grad_()
                           .set_name("x");
  ag::Tensor w = ag::tensor({0.8, -1.2}, {2}, ag::kFloat64).requires_grad_().set_name("w");
  const ag::Tensor b = ag::tensor({0.1, 0.2}, {2}, ag::kFloat64).requires_grad_().set_name("b");
  t.show("x", x);  // [3, 2]: three rows of two features
  t.show("w", w);  // [2]
  t.show("b", b);  // [2]

  t.step("A small expression and its graph",
         "h = x * w + b multiplies every row of x by w and adds b (w and b broadcast over "
         "the 3 rows, as in NumPy). Then L = sum(h * tanh(h)) uses h twice. Every op "
         "records a node with its inputs and its backward; printing the graph from L shows "
         "what backward() will walk.");
  ag::Tensor h = x * w + b;                       // [3, 2]
  const ag::Tensor L = ag::sum(h * ag::tanh(h));  // []
  h.set_name("h");
  t.show("h", h);
  t.show("L", L);
  print_graph(L);

  t.step("Backward",
         "L.backward() sorts the graph topologically and sweeps it once in reverse. Each "
         "leaf's grad() gets dL/dleaf with the leaf's own shape: w and b were broadcast to "
         "[3, 2] in the forward, so their gradients are summed back over the rows.");
  L.backward();
  t.show("dL/dx", x.grad());  // [3, 2]
  t.show("dL/dw", w.grad());  // [2]
  t.show("dL/db", b.grad());  // [2]

  t.step("The same derivatives by hand",
         "With u = tanh(h): dL/dh = u + h (1 - u^2), and h is used twice, so the engine "
         "added the gradients of both uses. Then the chain rule through h = x * w + b: "
         "dL/dx = dL/dh * w, dL/dw = sum over rows of dL/dh * x, dL/db = sum over rows of "
         "dL/dh. Here they are in plain loops over the numbers, with std::tanh and no "
         "attograd op, so that a wrong op in the library could not be wrong here too.");
  // The hand derivatives of every element, in the leaves' shapes.
  const std::vector<double> xs = x.to_vector(), ws = w.to_vector(), bs = b.to_vector();
  std::vector<double> dxs(6), dws(2, 0.0), dbs(2, 0.0);
  for (size_t row = 0; row < 3; ++row) {
    for (size_t col = 0; col < 2; ++col) {
      const double hv = xs[row * 2 + col] * ws[col] + bs[col], u = std::tanh(hv);
      const double dh = u + hv * (1.0 - u * u);
      dxs[row * 2 + col] = dh * ws[col];
      dws[col] += dh * xs[row * 2 + col];
      dbs[col] += dh;
    }
  }
  const ag::Tensor dx = ag::tensor(dxs, {3, 2}, ag::kFloat64);
  const ag::Tensor dw = ag::tensor(dws, {2}, ag::kFloat64);
  const ag::Tensor db = ag::tensor(dbs, {2}, ag::kFloat64);
  t.show("dL/dw by hand", dw);
  const double diff = std::max({tut::max_abs_diff(dx, x.grad()), tut::max_abs_diff(dw, w.grad()),
                                tut::max_abs_diff(db, b.grad())});
  t.check("hand-derived gradients equal autograd's", diff <= 1e-12,
          "max |difference| " + tut::num(diff));

  t.step("Gradients accumulate",
         "A second backward adds to grad() instead of replacing it (PyTorch does the same); "
         "that is what lets one tensor collect gradients from several uses. Training loops "
         "clear them before each step with zero_grad().");
  const ag::Tensor first = w.grad().detach().clone();
  ag::sum((x * w + b) * ag::tanh(x * w + b)).backward();  // the same L, built again
  t.show("dL/dw after two backward passes", w.grad());
  t.check("a second backward doubles the gradient",
          tut::max_abs_diff(w.grad(), first * 2.0) <= 1e-12);
  w.zero_grad();
  t.check("after w.zero_grad(), w has no gradient", !w.grad().defined());

  t.step("gradcheck: finite differences",
         "gradcheck nudges every input element by +-eps, measures how the output moves, "
         "(f(x + eps) - f(x - eps)) / 2 eps, and compares that with what backward() says: "
         "they must agree to 1e-5 + 1e-3 times the derivative. It needs float64: in float32 (7 "
         "significant digits) the rounding error of that difference is larger than the "
         "tolerance. Here is the difference for dL/dx[0, 0] in both, computed in plain "
         "loops with eps = 1e-6, against the hand derivative:");
  // L(x) with x[0, 0] moved by `delta`, in the floating type T, by loops.
  const auto L_moved = [&]<typename T>(T delta) {
    T total = 0;
    for (size_t i = 0; i < 6; ++i) {
      const T hv = (static_cast<T>(xs[i]) + (i == 0 ? delta : T(0))) * static_cast<T>(ws[i % 2]) +
                   static_cast<T>(bs[i % 2]);
      total += hv * std::tanh(hv);
    }
    return total;
  };
  const double numeric64 = (L_moved(1e-6) - L_moved(-1e-6)) / 2e-6;
  const double numeric32 = (L_moved(1e-6f) - L_moved(-1e-6f)) / 2e-6f;
  const double tolerance = 1e-5 + 1e-3 * std::abs(dxs[0]);
  std::cout << "  by hand " << tut::num(dxs[0], "%.9f") << ",  float64 difference "
            << tut::num(numeric64, "%.9f") << ",  float32 difference "
            << tut::num(numeric32, "%.9f") << "  (tolerance " << tut::num(tolerance) << ")\n";
  t.check("float64's difference is within the tolerance, float32's is not",
          std::abs(numeric64 - dxs[0]) < tolerance && std::abs(numeric32 - dxs[0]) > tolerance,
          "errors " + tut::num(std::abs(numeric64 - dxs[0])) + " and " +
              tut::num(std::abs(numeric32 - dxs[0])));
  const auto expression = [](const std::vector<ag::Tensor>& in) {
    const ag::Tensor hh = in[0] * in[1] + in[2];
    return ag::sum(hh * ag::tanh(hh));
  };
  const ag::GradcheckResult report = ag::gradcheck(expression, {x, w, b});
  std::cout << report.message << "\n";
  t.check("gradcheck passes for L(x, w, b)", report.ok);

  t.step("gradcheck catches a wrong backward",
         "An op whose backward is wrong still computes the right forward, so nothing looks "
         "broken until the gradients are used. Here is x^3 written as our own op twice: "
         "once with the derivative 3 x^2, once with a bug that forgets the 3.");
  const ag::Tensor z = ag::tensor({0.5, -1.0, 2.0}, {3}, ag::kFloat64).requires_grad_();
  const ag::GradcheckResult good =
      ag::gradcheck([](const std::vector<ag::Tensor>& in) { return cube(in[0], true); }, {z});
  const ag::GradcheckResult buggy =
      ag::gradcheck([](const std::vector<ag::Tensor>& in) { return cube(in[0], false); }, {z});
  std::cout << "correct cube: " << good.message << "\nbuggy cube:   " << buggy.message << "\n";
  t.check("gradcheck passes the correct cube", good.ok);
  t.check("gradcheck rejects the buggy cube", !buggy.ok,
          "analytic " + tut::num(buggy.analytic) + " vs numeric " + tut::num(buggy.numeric));

  t.step("Summary",
         "Every op records a node; backward() walks the nodes in reverse and adds each "
         "gradient into its input's grad(), summing broadcast dimensions away. Check a new "
         "op's backward with gradcheck in float64 before trusting it.\n"
         "In the viewer: attograd-viewer --scene graph draws an attention call's graph and "
         "steps through its backward.\n"
         "Next: tutorial_02_masked_softmax, the first op of attention.");
  return t.finish();
}
