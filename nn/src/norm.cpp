#include "attograd/nn/norm.h"

#include <cmath>

namespace ag::nn {

LayerNorm::LayerNorm(Shape normalized_shape_, double eps_)
    : Module("LayerNorm"), normalized_shape(std::move(normalized_shape_)), eps(eps_) {
  AG_CHECK(!normalized_shape.empty(), "LayerNorm", "normalized_shape must not be empty");
  for (const int64_t s : normalized_shape)
    AG_CHECK(s > 0, "LayerNorm",
             "normalized_shape " + shape_str(normalized_shape) + " has a size < 1");
  AG_CHECK(std::isfinite(eps) && eps >= 0, "LayerNorm",
           "eps must be finite and >= 0, got " + number_str(eps));
  weight = ones(normalized_shape);
  bias = zeros(normalized_shape);
  register_parameter("weight", &weight);
  register_parameter("bias", &bias);
}

// x [..., *normalized_shape] -> the same shape
Tensor LayerNorm::forward(const Tensor& x) const {
  return layer_norm(x, normalized_shape, weight, bias, eps);
}

}  // namespace ag::nn
