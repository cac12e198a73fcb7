// Selecting, joining and repeating: where, masked_fill, cat, stack,
// repeat_interleave, narrow, index_select.
#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "elementwise.h"

namespace ag {

// out = cond ? a : b  =>  dL/da = g where cond, dL/db = g where !cond
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check(cond.defined() && a.defined() && b.defined(), "where", "undefined tensor operand");
  check(cond.dtype() == kBool, "where",
        std::string("condition must be bool, got ") + dtype_name(cond.dtype()) + " " +
            shape_str(cond.shape()));
  check(a.dtype() == b.dtype(), "where",
        std::string("dtypes differ: ") + dtype_name(a.dtype()) + " " + shape_str(a.shape()) +
            " vs " + dtype_name(b.dtype()) + " " + shape_str(b.shape()));
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, a.dtype());
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* c = cond.data_ptr<bool>();
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    T* o = out.data_ptr<T>();
    int64_t i = 0;
    detail::for_each_offset<3>(
        shape,
        {detail::broadcast_strides(cond, shape), detail::broadcast_strides(a, shape),
         detail::broadcast_strides(b, shape)},
        [&](const std::array<int64_t, 3>& off) { o[i++] = c[off[0]] ? pa[off[1]] : pb[off[2]]; });
  });
  record(out, "WhereBackward", {a, b}, [cond_ = cond.detach()](const Tensor& g) {
    const Tensor zero = zeros({}, g.dtype());
    return grads{where(cond_, g, zero), where(cond_, zero, g)};
  });
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, double b) {
  check(a.defined(), "where", "undefined tensor operand");
  return where(cond, a, scalar_tensor(b, a.dtype()));
}

// out = x, with `value` where mask  =>  dL/dx = g where !mask
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check(x.defined() && mask.defined(), "masked_fill", "undefined tensor operand");
  check(mask.dtype() == kBool, "masked_fill",
        std::string("mask must be bool, got ") + dtype_name(mask.dtype()) + " " +
            shape_str(mask.shape()));
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
  check(shape == x.shape(), "masked_fill",
        "mask of shape " + shape_str(mask.shape()) + " does not broadcast to input shape " +
            shape_str(x.shape()));
  return where(mask, scalar_tensor(value, x.dtype()), x);
}

}  // namespace ag
