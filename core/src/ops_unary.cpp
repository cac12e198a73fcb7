// Elementwise unary ops. Each backward is written in terms of the forward's
// input x or output y, whichever makes the derivative cheapest.
#include <cmath>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "attograd/reference.h"
#include "elementwise.h"
#include "fast/vector_math.h"
#include "fault.h"

namespace ag {

namespace {

// y = fn(x) for float32/float64 x.
template <typename Fn>
Tensor float_map(const Tensor& x, const char* op, Fn fn) {
  check_floating(x, op, "input");
  return dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    return detail::map_unary<T, T>(x, x.dtype(), [&](T v) { return static_cast<T>(fn(v)); });
  });
}

// y = fn(x) for float32/float64/int64 x.
template <typename Fn>
Tensor signed_map(const Tensor& x, const char* op, Fn fn) {
  AG_CHECK(x.defined(), op, "undefined tensor");
  AG_CHECK(x.dtype() != kBool, op, "not defined for bool tensors, got " + shape_str(x.shape()));
  return dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return Tensor();  // unreachable: rejected above
    } else {
      return detail::map_unary<T, T>(x, x.dtype(), [&](T v) { return static_cast<T>(fn(v)); });
    }
  });
}

// float32 through a SIMD kernel of vector_math.h; other dtypes through fn.
template <typename Fn>
Tensor float_map_fast(const Tensor& x, const char* op,
                      void (*f32_kernel)(const float*, float*, int64_t), Fn fn) {
  // reference mode: std::exp, std::tanh element by element, not the vector kernels
  if (!x.defined() || x.dtype() != kFloat32 || reference_mode()) return float_map(x, op, fn);
  const Tensor in = x.detach().contiguous();
  Tensor y = empty(in.shape(), kFloat32);
  f32_kernel(in.data_ptr<float>(), y.data_ptr<float>(), in.numel());
  return y;
}

}  // namespace

// y = -x  =>  dL/dx = -g
Tensor neg(const Tensor& x) {
  Tensor y = signed_map(x, "neg", [](auto v) { return detail::wrapping_neg(v); });
  if (needs_grad(x)) record(y, "NegBackward", {x}, [](const Tensor& g) { return grads{neg(g)}; });
  return y;
}

// y = |x|  =>  dL/dx = g sign(x)   (0 at x = 0, as PyTorch; |INT64_MIN| wraps to itself)
Tensor abs(const Tensor& x) {
  Tensor y = signed_map(x, "abs", [](auto v) { return v < 0 ? detail::wrapping_neg(v) : v; });
  if (needs_grad(x))
    record(y, "AbsBackward", {x}, [x_ = x.detach()](const Tensor& g) {
      const Tensor sign = float_map(x_, "abs", [](auto v) { return (v > 0) - (v < 0); });
      return grads{mul(g, sign)};
    });
  return y;
}

// y = e^x  =>  dL/dx = g y
Tensor exp(const Tensor& x) {
  Tensor y = detail::faulty(
      "exp", float_map_fast(x, "exp", detail::exp_f32, [](auto v) { return std::exp(v); }));
  if (needs_grad(x))
    record(y, "ExpBackward", {x}, [y_ = y.detach()](const Tensor& g) { return grads{mul(g, y_)}; });
  return y;
}

// y = ln x  =>  dL/dx = g / x
Tensor log(const Tensor& x) {
  Tensor y = float_map(x, "log", [](auto v) { return std::log(v); });
  if (needs_grad(x))
    record(y, "LogBackward", {x}, [x_ = x.detach()](const Tensor& g) { return grads{div(g, x_)}; });
  return y;
}

// y = tanh x  =>  dL/dx = g (1 - y^2)
Tensor tanh(const Tensor& x) {
  Tensor y = detail::faulty(
      "tanh", float_map_fast(x, "tanh", detail::tanh_f32, [](auto v) { return std::tanh(v); }));
  if (needs_grad(x))
    record(y, "TanhBackward", {x},
           [y_ = y.detach()](const Tensor& g) { return grads{mul(g, 1.0 - mul(y_, y_))}; });
  return y;
}

// y = 1 / (1 + e^-x)  =>  dL/dx = g y (1 - y)
Tensor sigmoid(const Tensor& x) {
  // Two branches so that e^(-x) never overflows for very negative x.
  Tensor y = float_map(x, "sigmoid", [](auto v) {
    using T = decltype(v);
    if (v >= 0) return T(1) / (T(1) + std::exp(-v));
    const T e = std::exp(v);
    return e / (T(1) + e);
  });
  y = detail::faulty("sigmoid", std::move(y));
  if (needs_grad(x))
    record(y, "SigmoidBackward", {x},
           [y_ = y.detach()](const Tensor& g) { return grads{mul(g, mul(y_, 1.0 - y_))}; });
  return y;
}

// y = max(x, 0)  =>  dL/dx = g [x > 0]
Tensor relu(const Tensor& x) {
  // Written "v < 0 ? 0 : v" so NaN stays NaN, as in PyTorch.
  Tensor y = float_map(x, "relu", [](auto v) { return v < 0 ? decltype(v)(0) : v; });
  if (needs_grad(x))
    record(y, "ReluBackward", {x}, [y_ = y.detach()](const Tensor& g) {
      // One pass, g where y > 0 and 0 elsewhere (where(gt(y, 0), g, 0) in
      // one loop instead of a zeros tensor, a mask and the select; a NaN y
      // gives 0 either way)
      return grads{dispatch_floating(g.dtype(), "relu", [&](auto tag) {
        using T = decltype(tag);
        return detail::map_binary<T, T>(y_, g, "relu", g.dtype(),
                                        [](T yv, T gv) { return yv > T(0) ? gv : T(0); });
      })};
    });
  return y;
}

// y = sqrt x  =>  dL/dx = g / (2 y)
Tensor sqrt(const Tensor& x) {
  Tensor y = float_map(x, "sqrt", [](auto v) { return std::sqrt(v); });
  if (needs_grad(x))
    record(y, "SqrtBackward", {x},
           [y_ = y.detach()](const Tensor& g) { return grads{div(g, 2.0 * y_)}; });
  return y;
}

}  // namespace ag
