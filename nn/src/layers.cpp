#include "attograd/nn/layers.h"

#include <cmath>

namespace ag::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias)
    : Module("Linear"), in_features(in_features), out_features(out_features) {
  AG_CHECK(in_features > 0 && out_features > 0, "Linear",
           "feature counts must be positive, got in " + std::to_string(in_features) + ", out " +
               std::to_string(out_features));
  shape_numel({out_features, in_features}, "Linear");
  // PyTorch's default init: U(-k, k) with k = 1/sqrt(in_features).
  const double k = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = uniform({out_features, in_features}, -k, k);
  register_parameter("weight", &weight);
  if (has_bias) {
    bias = uniform({out_features}, -k, k);
    register_parameter("bias", &bias);
  }
}

// x [..., in] -> [..., out]
Tensor Linear::forward(const Tensor& x) const {
  return linear(x, weight, bias);
}

Dropout::Dropout(double p) : Module("Dropout"), p(p) {
  AG_CHECK(p >= 0 && p < 1, "Dropout", "p must be in [0, 1), got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) const {
  return dropout(x, p, is_training());
}

}  // namespace ag::nn
