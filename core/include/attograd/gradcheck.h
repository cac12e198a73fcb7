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
  // The worst element over all inputs: which input, which flat index,
  // and both derivatives (filled even when ok).
  size_t worst_input = 0;
  int64_t worst_index = 0;
  double analytic = 0, numeric = 0, abs_error = 0;
  std::string message;  // a one-line summary, e.g. for EXPECT_TRUE(r.ok) << r.message
};

// fn maps the inputs to one output tensor (any shape; its elements are summed
// with fixed random weights so every output element is checked). Every input
// must be float64; inputs that require grad are checked. Passes when, for
// every element, |analytic - numeric| <= atol + rtol * |numeric|.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
                          double rtol = 1e-3);

}  // namespace ag
