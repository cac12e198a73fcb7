// Unrecorded summation over dims: the kernel behind ag::sum, shared with the
// autograd engine's sum_to_shape, which must reduce gradients without
// calling an op (the engine sits below the ops).
#pragma once

#include <vector>

#include "attograd/tensor.h"

namespace ag::detail {

// The shape after reducing the dims marked in `reduce` (kept as size 1 when keepdim).
Shape reduced_shape(const Shape& shape, const std::vector<bool>& reduce, bool keepdim);

// Sum of x over the dims marked in `reduce`, into a fresh contiguous tensor
// of shape `out_shape`, which holds as many elements as the kept shape
// (reduced_shape(x.shape(), reduce, true)) and is laid out like it. Floating
// inputs accumulate in double and keep their dtype; int64/bool accumulate
// in int64 (wrapping around on overflow, as add does) and give int64.
Tensor sum_dims(const Tensor& x, const std::vector<bool>& reduce, const Shape& out_shape);

}  // namespace ag::detail
