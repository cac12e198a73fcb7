// Gradient checking: analytic gradients (backward) against central finite
// differences, (f(x + eps) - f(x - eps)) / 2 eps, in float64.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attograd/tensor.h"

namespace ag {

struct GradcheckResult {
  bool ok = true;
  // The worst element over all checked tensors: which one (its index in the
  // list given), which flat index, and both derivatives (filled even when ok).
  size_t worst_input = 0;
  int64_t worst_index = 0;
  double analytic = 0, numeric = 0, abs_error = 0;
  std::string message;  // a one-line summary, e.g. for EXPECT_TRUE(r.ok) << r.message
};

// fn maps the inputs to one output tensor (any shape; its elements are summed
// with fixed random weights so every output element is checked). Every input
// must be float64; inputs that require grad are checked. Passes when, for
// every element, |analytic - numeric| <= atol + rtol * |numeric|.
//
// fn is given copies of the inputs (so the caller's tensors are never
// perturbed): it must compute from its argument alone. A module's
// parameters, which the module reads from its own members, are checked with
// gradcheck_in_place below.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
                          double rtol = 1e-3);

// The same check of tensors where they are: each of `tensors` (a module's
// parameters(), inputs fn captures, any float64 tensors that require grad) is
// perturbed in place and restored, so fn() reads the very tensors checked.
// Their grad() is as before when it returns, and fn's last call is on the
// tensors as they are (so a module's attention_weights() are theirs).
//
//   ag::gradcheck_in_place([&] { return layer.attend(q, layer.remember(k, v), lens); },
//                          layer.parameters());
//
// Both calls throw an ag::Error when nothing was really checked: no tensor
// requires grad, or every analytic and every numeric derivative is exactly
// 0 (fn does not read the tensors it was given).
GradcheckResult gradcheck_in_place(const std::function<Tensor()>& fn,
                                   const std::vector<Tensor>& tensors, double eps = 1e-6,
                                   double atol = 1e-5, double rtol = 1e-3);

}  // namespace ag
