// How the ops see a tensor around one dim, written once for all of them.
//
// Around dim d a contiguous tensor of shape [s0, ..., s(d-1), n, ...] is
// [outer, n, inner]: `outer` blocks (the product of the dims before d), each
// holding n slices (along d) of `inner` contiguous elements (the product of
// the dims after d). Softmax walks rows of n entries `inner` apart, max and
// argmax reduce along them, and cat, narrow, index_select and
// repeat_interleave copy whole slices of `inner` elements.
#pragma once

#include <cstdint>
#include <vector>

#include "attograd/tensor.h"

namespace ag::detail {

struct DimLayout {
  int64_t outer = 1, n = 1, inner = 1;
};

// `shape` around dim d (d < shape.size()).
inline DimLayout layout_around(const Shape& shape, size_t d) {
  const auto at = shape.begin() + static_cast<std::ptrdiff_t>(d);
  return {shape_numel(Shape(shape.begin(), at)), shape[d], shape_numel(Shape(at + 1, shape.end()))};
}

// {0, 1, ..., count - 1}: every dim of a rank-`count` shape, or the first
// `count` dims of a longer one (for sum over them).
inline std::vector<int64_t> first_dims(size_t count) {
  std::vector<int64_t> dims(count);
  for (size_t d = 0; d < count; ++d) dims[d] = static_cast<int64_t>(d);
  return dims;
}

}  // namespace ag::detail
