// gradcheck: compare backward() with central finite differences.
//
// The output y = fn(inputs) may have any shape; we check the scalar
// L = sum(w * y) with fixed random weights w, so that every output element
// contributes and errors cannot cancel by symmetry. For each input element x_i:
//   analytic  dL/dx_i from one backward pass
//   numeric   (L(x_i + eps) - L(x_i - eps)) / (2 eps)
#include "attograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "attograd/autograd.h"
#include "attograd/ops.h"

namespace ag {

namespace {

// `which` ("input 2 of shape [3]") is float64: finite differences need it.
void check_float64(const char* op, const Tensor& t, const std::string& which) {
  AG_CHECK(t.dtype() == kFloat64, op,
           which + " is " + dtype_name(t.dtype()) + "; gradcheck needs float64");
}

// The tensors gradcheck_in_place perturbs: float64, contiguous (their
// elements are walked linearly), and each a leaf, whose grad() a backward fills.
void check_checkable(const char* op, const Tensor& t, size_t i) {
  const std::string which = "tensor " + std::to_string(i) + " of shape " + shape_str(t.shape());
  check_float64(op, t, which);
  AG_CHECK(t.is_contiguous(), op, which + " is not contiguous; give its contiguous() leaf");
  AG_CHECK(t.is_leaf(), op,
           which + " is the output of " + t.grad_fn_name() +
               ", which fn recomputes; give the leaves it is computed from");
}

// The check itself. evaluate() computes the output from `tensors`, read
// where they are; the ones at `checked` are perturbed one element at a time.
GradcheckResult compare(const char* op, const std::function<Tensor()>& evaluate,
                        const std::vector<Tensor>& tensors, const std::vector<size_t>& checked,
                        double eps, double atol, double rtol) {
  AG_CHECK(
      !checked.empty(), op,
      "nothing to check: none of the " + std::to_string(tensors.size()) + " tensors requires grad");
  // Their gradients start empty for this backward, and are given back after.
  std::vector<Tensor> saved_grads;
  for (size_t i : checked) {
    saved_grads.push_back(tensors[i].grad());
    Tensor(tensors[i]).set_grad(Tensor());
  }

  Tensor y0 = evaluate();
  AG_CHECK(y0.defined() && y0.dtype() == kFloat64, op, "fn must return a float64 tensor");
  // Fixed weights from a local generator: gradcheck leaves the global seed alone.
  std::vector<double> w(static_cast<size_t>(y0.numel()));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (double& v : w) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = 0.5 + static_cast<double>(state >> 11) * 0x1.0p-53;  // in [0.5, 1.5)
  }
  const Tensor weights = tensor(w, y0.shape().empty() ? Shape{} : y0.shape(), kFloat64);
  auto loss = [&](const Tensor& y) { return sum(mul(y, reshape(weights, y.shape()))); };

  GradcheckResult result;
  if (y0.requires_grad()) loss(y0).backward();
  double worst_score = -1;
  bool any_nonzero = false;
  for (size_t n = 0; n < checked.size(); ++n) {
    const Tensor& t = tensors[checked[n]];
    const Tensor grad = t.grad();
    const std::vector<double> analytic =
        grad.defined() ? grad.to_vector()
                       : std::vector<double>(static_cast<size_t>(t.numel()), 0.0);
    Tensor(t).set_grad(saved_grads[n]);
    double* x = t.data_ptr<double>();
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double saved = x[k];
      double plus, minus;
      {
        NoGradGuard no_grad;
        x[k] = saved + eps;
        plus = loss(evaluate()).item();
        x[k] = saved - eps;
        minus = loss(evaluate()).item();
      }
      x[k] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      const double a = analytic[static_cast<size_t>(k)];
      any_nonzero |= a != 0.0 || numeric != 0.0;
      const double error = std::abs(a - numeric);
      const double allowed = atol + rtol * std::abs(numeric);
      // Rank elements by how far past their tolerance they are (NaN is worst).
      const double score = std::isnan(error) ? INFINITY : error / allowed;
      if (score > worst_score) {
        worst_score = score;
        result.worst_input = checked[n];
        result.worst_index = k;
        result.analytic = a;
        result.numeric = numeric;
        result.abs_error = error;
      }
      if (!(error <= allowed)) result.ok = false;
    }
  }
  // Once more on the tensors as they are, so that what fn leaves behind (a
  // module's attention_weights()) is not from the last perturbed element.
  {
    NoGradGuard no_grad;
    evaluate();
  }
  // Zero both ways for every element: the output never moved, so nothing
  // was compared (fn reads other tensors than the ones checked).
  AG_CHECK(any_nonzero, op,
           "nothing was checked: every analytic and numeric derivative of the " +
               std::to_string(checked.size()) +
               " tensors is 0, so the output does not depend on them; does fn read the "
               "tensors checked? (gradcheck passes fn copies of its inputs: a module's "
               "parameters are checked with gradcheck_in_place)");
  std::ostringstream msg;
  msg << op << " " << (result.ok ? "passed" : "FAILED") << ": worst element is input "
      << result.worst_input << " index " << result.worst_index << ": analytic " << result.analytic
      << " vs numeric " << result.numeric << " (abs error " << result.abs_error << ")";
  result.message = msg.str();
  return result;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  // Leaves we own: fresh contiguous copies, so perturbing them cannot touch
  // the caller's tensors, and their .grad starts empty.
  std::vector<Tensor> leaves;
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) {
      leaves.push_back(t);
      continue;
    }
    check_float64("gradcheck", t,
                  "input " + std::to_string(i) + " of shape " + shape_str(t.shape()));
    leaves.push_back(t.detach().clone().requires_grad_());
    checked.push_back(i);
  }
  return compare(
      "gradcheck", [&] { return fn(leaves); }, leaves, checked, eps, atol, rtol);
}

GradcheckResult gradcheck_in_place(const std::function<Tensor()>& fn,
                                   const std::vector<Tensor>& tensors, double eps, double atol,
                                   double rtol) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < tensors.size(); ++i) {
    AG_CHECK(tensors[i].defined(), "gradcheck_in_place",
             "tensor " + std::to_string(i) + " is undefined");
    AG_CHECK(tensors[i].requires_grad(), "gradcheck_in_place",
             "tensor " + std::to_string(i) + " of shape " + shape_str(tensors[i].shape()) +
                 " does not require grad, so it has no gradient to check");
    check_checkable("gradcheck_in_place", tensors[i], i);
    checked.push_back(i);
  }
  return compare("gradcheck_in_place", fn, tensors, checked, eps, atol, rtol);
}

}  // namespace ag
