#include "reduce.h"

#include "elementwise.h"

namespace ag::detail {

Shape reduced_shape(const Shape& shape, const std::vector<bool>& reduce, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduce[d])
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Tensor sum_dims(const Tensor& x, const std::vector<bool>& reduce, const Shape& out_shape) {
  const Shape kept = reduced_shape(x.shape(), reduce, /*keepdim=*/true);
  // Walk x; the output stride of every reduced dim is 0 so its elements pile up.
  Shape out_strides = contiguous_strides(kept);
  for (size_t d = 0; d < reduce.size(); ++d)
    if (reduce[d]) out_strides[d] = 0;
  const DType out_dtype = is_floating(x.dtype()) ? x.dtype() : kInt64;
  Tensor out = zeros(out_shape, out_dtype);
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    std::vector<Acc> acc(static_cast<size_t>(out.numel()), Acc(0));
    const T* in = x.data_ptr<T>();
    for_each_offset<2>(x.shape(), {x.strides(), out_strides},
                       [&](const std::array<int64_t, 2>& off) {
                         Acc& a = acc[static_cast<size_t>(off[1])];
                         a = wrapping_add(a, static_cast<Acc>(in[off[0]]));
                       });
    dispatch_all(out_dtype, [&](auto out_tag) {
      using O = decltype(out_tag);
      O* o = out.data_ptr<O>();
      for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<O>(acc[i]);
    });
  });
  return out;
}

}  // namespace ag::detail
