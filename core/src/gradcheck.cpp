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

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    AG_CHECK(inputs[i].dtype() == kFloat64, "gradcheck",
             "input " + std::to_string(i) + " of shape " + shape_str(inputs[i].shape()) + " is " +
                 dtype_name(inputs[i].dtype()) + "; gradcheck needs float64");
  }
  // Leaves we own: fresh contiguous copies, so perturbing them cannot touch
  // the caller's tensors, and their .grad starts empty.
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      leaves.push_back(t);
      continue;
    }
    Tensor leaf = t.detach().clone();
    if (t.requires_grad()) leaf.requires_grad_();
    leaves.push_back(leaf);
  }

  Tensor y0 = fn(leaves);
  AG_CHECK(y0.defined() && y0.dtype() == kFloat64, "gradcheck", "fn must return a float64 tensor");
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
  for (size_t i = 0; i < leaves.size(); ++i) {
    Tensor& leaf = leaves[i];
    if (!leaf.defined() || !leaf.requires_grad()) continue;
    const Tensor grad = leaf.grad();
    const std::vector<double> analytic =
        grad.defined() ? grad.to_vector()
                       : std::vector<double>(static_cast<size_t>(leaf.numel()), 0.0);
    double* x = leaf.data_ptr<double>();
    for (int64_t k = 0; k < leaf.numel(); ++k) {
      const double saved = x[k];
      double plus, minus;
      {
        NoGradGuard no_grad;
        x[k] = saved + eps;
        plus = loss(fn(leaves)).item();
        x[k] = saved - eps;
        minus = loss(fn(leaves)).item();
      }
      x[k] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      const double a = analytic[static_cast<size_t>(k)];
      const double error = std::abs(a - numeric);
      const double allowed = atol + rtol * std::abs(numeric);
      // Rank elements by how far past their tolerance they are (NaN is worst).
      const double score = std::isnan(error) ? INFINITY : error / allowed;
      if (score > worst_score) {
        worst_score = score;
        result.worst_input = i;
        result.worst_index = k;
        result.analytic = a;
        result.numeric = numeric;
        result.abs_error = error;
      }
      if (!(error <= allowed)) result.ok = false;
    }
  }
  std::ostringstream msg;
  msg << "gradcheck " << (result.ok ? "passed" : "FAILED") << ": worst element is input "
      << result.worst_input << " index " << result.worst_index << ": analytic " << result.analytic
      << " vs numeric " << result.numeric << " (abs error " << result.abs_error << ")";
  result.message = msg.str();
  return result;
}

}  // namespace ag
