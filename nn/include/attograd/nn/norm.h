// Normalization layers with PyTorch's parameter names and shapes.
#pragma once

#include "attograd/nn/module.h"

namespace ag::nn {

// torch.nn.LayerNorm: normalizes over the trailing dims normalized_shape
// (x [..., *normalized_shape]) to mean 0, variance 1, then scales and shifts:
//   y = (x - mean) / sqrt(var + eps) * weight + bias
// Parameters weight (ones) and bias (zeros), both shaped normalized_shape.
// One fused op, ag::layer_norm (core/src/ops_norm.cpp).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  Shape normalized_shape;
  double eps;
  Tensor weight;  // [*normalized_shape]
  Tensor bias;    // [*normalized_shape]
};

}  // namespace ag::nn
