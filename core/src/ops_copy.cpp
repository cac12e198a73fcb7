// Differentiable copies, declared as Tensor members in tensor.h: contiguous,
// clone and to. They record a node, so they live here with the other ops,
// above the engine, and not in tensor.cpp.
#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "elementwise.h"

namespace ag {

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  const Tensor& x = *this;
  Tensor out = detail::contiguous_copy(x);
  // y = x  =>  dL/dx = dL/dy
  if (needs_grad(x)) record(out, "CloneBackward", {x}, [](const Tensor& g) { return grads{g}; });
  return out;
}

Tensor Tensor::to(DType target) const {
  const Tensor& x = *this;
  if (target == dtype()) return x;
  Tensor out = dispatch_all(dtype(), [&](auto src_tag) {
    using S = decltype(src_tag);
    return dispatch_all(target, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      return detail::map_unary<S, D>(x, target, [](S v) { return detail::convert<D>(v, "to"); });
    });
  });
  if (is_floating(dtype()) && is_floating(target)) {
    // y = cast(x)  =>  dL/dx = cast back(dL/dy)
    const DType source = dtype();
    if (needs_grad(x))
      record(out, "ToCopyBackward", {x}, [source](const Tensor& g) { return grads{g.to(source)}; });
  }
  return out;
}

}  // namespace ag
