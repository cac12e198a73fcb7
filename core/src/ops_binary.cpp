// Elementwise binary ops with NumPy broadcasting, and comparisons.
// Backward lambdas return gradients at the broadcast (output) shape; the
// engine's sum_to_shape reduces them to each input's shape.
#include <cmath>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "elementwise.h"

namespace ag {

namespace {

// Both operands of arithmetic must share a numeric dtype: no silent promotion.
void check_arithmetic(const Tensor& a, const Tensor& b, const char* op) {
  AG_CHECK(a.defined() && b.defined(), op, "undefined tensor operand");
  check_same_dtype(a, b, op);
  AG_CHECK(a.dtype() != kBool, op,
           "arithmetic on bool tensors is not supported (shapes " + shape_str(a.shape()) + " and " +
               shape_str(b.shape()) + "); use .to(...) first");
}

template <typename Fn>
Tensor arithmetic(const Tensor& a, const Tensor& b, const char* op, Fn fn) {
  check_arithmetic(a, b, op);
  return dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return detail::map_binary<T, T>(a, b, op, a.dtype(),
                                    [&](T x, T y) { return static_cast<T>(fn(x, y)); });
  });
}

// The scalar operand of `op` as a 0-d tensor of t's dtype.
Tensor scalar_like(double value, const Tensor& t, const char* op) {
  AG_CHECK(t.defined(), op, "undefined tensor operand");
  return detail::scalar_tensor(value, t.dtype(), op);
}

// Which operands want a gradient. A backward skips the other one: for
// `scores / sqrt(d)` that saves three full-size ops and a reduction whose
// result the engine would throw away.
struct NeedsGrad {
  bool a, b;
};
NeedsGrad which_need_grad(const Tensor& a, const Tensor& b) {
  return {a.requires_grad(), b.requires_grad()};
}

}  // namespace

// out = a + b  =>  dL/da = g, dL/db = g
Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = arithmetic(a, b, "add", [](auto x, auto y) { return detail::wrapping_add(x, y); });
  if (needs_grad(a, b))
    record(out, "AddBackward", {a, b}, [](const Tensor& g) { return grads{g, g}; });
  return out;
}

// out = a - b  =>  dL/da = g, dL/db = -g
Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = arithmetic(a, b, "sub", [](auto x, auto y) { return detail::wrapping_sub(x, y); });
  if (needs_grad(a, b))
    record(out, "SubBackward", {a, b}, [need_b = b.requires_grad()](const Tensor& g) {
      return grads{g, need_b ? neg(g) : Tensor()};
    });
  return out;
}

// out = a * b  =>  dL/da = g * b, dL/db = g * a
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = arithmetic(a, b, "mul", [](auto x, auto y) { return detail::wrapping_mul(x, y); });
  if (needs_grad(a, b))
    record(out, "MulBackward", {a, b},
           // Only what a wanted gradient reads is saved (dL/da reads b, dL/db reads a):
           // no detached copy made, no buffer kept alive for nothing.
           [need = which_need_grad(a, b), a_ = b.requires_grad() ? a.detach() : Tensor(),
            b_ = a.requires_grad() ? b.detach() : Tensor()](const Tensor& g) {
             return grads{need.a ? mul(g, b_) : Tensor(), need.b ? mul(g, a_) : Tensor()};
           });
  return out;
}

// out = a / b  =>  dL/da = g / b, dL/db = -g a / b^2
Tensor div(const Tensor& a, const Tensor& b) {
  check_arithmetic(a, b, "div");
  if (a.dtype() == kInt64) {
    // Integer division by zero is undefined behaviour in C++: refuse it.
    for (double v : b.to_vector()) AG_CHECK(v != 0, "div", "integer division by zero");
  }
  // INT64_MIN / -1 does not fit (and traps on x86): it wraps to INT64_MIN,
  // as negation does.
  Tensor out = arithmetic(a, b, "div", [](auto x, auto y) {
    if constexpr (std::is_same_v<decltype(x), int64_t>) {
      if (y == -1) return detail::wrapping_neg(x);
    }
    return x / y;
  });
  if (needs_grad(a, b))
    record(out, "DivBackward", {a, b},
           // a is read only by dL/db (as in mul)
           [need = which_need_grad(a, b), a_ = b.requires_grad() ? a.detach() : Tensor(),
            b_ = b.detach()](const Tensor& g) {
             return grads{need.a ? div(g, b_) : Tensor(),
                          need.b ? neg(div(mul(g, a_), mul(b_, b_))) : Tensor()};
           });
  return out;
}

// out = x^p  =>  dL/dx = g p x^(p-1)
Tensor pow(const Tensor& base, double exponent) {
  check_floating(base, "pow", "base");
  Tensor out = dispatch_floating(base.dtype(), "pow", [&](auto tag) {
    using T = decltype(tag);
    return detail::map_unary<T, T>(base, base.dtype(),
                                   [&](T x) { return static_cast<T>(std::pow(x, exponent)); });
  });
  if (needs_grad(base))
    record(out, "PowBackward", {base}, [x = base.detach(), exponent](const Tensor& g) {
      return grads{mul(g, mul(scalar_like(exponent, x, "pow"), pow(x, exponent - 1.0)))};
    });
  return out;
}

// out = x^y  =>  dL/dx = g y x^(y-1), dL/dy = g out ln x (taken as 0 where x <= 0)
Tensor pow(const Tensor& base, const Tensor& exponent) {
  check_arithmetic(base, exponent, "pow");
  check_floating(base, "pow", "base");
  Tensor out = arithmetic(base, exponent, "pow", [](auto x, auto y) { return std::pow(x, y); });
  if (needs_grad(base, exponent))
    record(out, "PowBackward", {base, exponent},
           [x = base.detach(), y = exponent.detach(), o = out.detach()](const Tensor& g) {
             const Tensor positive = gt(x, zeros_like(x));
             const Tensor log_x = log(where(positive, x, 1.0));  // ln 1 = 0 off the domain
             return grads{mul(g, mul(y, pow(x, sub(y, ones_like(y))))), mul(g, mul(o, log_x))};
           });
  return out;
}

// out = max(a, b)  =>  the gradient goes to the larger operand (to a on ties)
Tensor maximum(const Tensor& a, const Tensor& b) {
  // A NaN in either operand gives NaN, as in PyTorch (x != x only for NaN).
  Tensor out = arithmetic(a, b, "maximum", [](auto x, auto y) { return x >= y || x != x ? x : y; });
  if (needs_grad(a, b))
    record(out, "MaximumBackward", {a, b}, [a_ = a.detach(), b_ = b.detach()](const Tensor& g) {
      const Tensor a_wins = ge(a_, b_);
      const Tensor zero = zeros_like(g);
      return grads{where(a_wins, g, zero), where(a_wins, zero, g)};
    });
  return out;
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator+(const Tensor& a, double b) {
  return add(a, scalar_like(b, a, "add"));
}
Tensor operator-(const Tensor& a, double b) {
  return sub(a, scalar_like(b, a, "sub"));
}
Tensor operator*(const Tensor& a, double b) {
  return mul(a, scalar_like(b, a, "mul"));
}
Tensor operator/(const Tensor& a, double b) {
  return div(a, scalar_like(b, a, "div"));
}
Tensor operator+(double a, const Tensor& b) {
  return add(scalar_like(a, b, "add"), b);
}
Tensor operator-(double a, const Tensor& b) {
  return sub(scalar_like(a, b, "sub"), b);
}
Tensor operator*(double a, const Tensor& b) {
  return mul(scalar_like(a, b, "mul"), b);
}
Tensor operator/(double a, const Tensor& b) {
  return div(scalar_like(a, b, "div"), b);
}
Tensor operator-(const Tensor& a) {
  return neg(a);
}

// ---- comparisons and logic: bool results, no gradient ------------------------------

namespace {

template <typename Fn>
Tensor compare(const Tensor& a, const Tensor& b, const char* op, Fn fn) {
  AG_CHECK(a.defined() && b.defined(), op, "undefined tensor operand");
  check_same_dtype(a, b, op);
  return dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return detail::map_binary<T, bool>(a, b, op, kBool, fn);
  });
}

Tensor as_bool(const Tensor& t, const char* op) {
  AG_CHECK(
      t.defined() && t.dtype() == kBool, op,
      std::string("expected a bool tensor, got ") + (t.defined() ? dtype_name(t.dtype()) : "none"));
  return t;
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
  return compare(a, b, "eq", [](auto x, auto y) { return x == y; });
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return compare(a, b, "ne", [](auto x, auto y) { return x != y; });
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return compare(a, b, "lt", [](auto x, auto y) { return x < y; });
}
Tensor le(const Tensor& a, const Tensor& b) {
  return compare(a, b, "le", [](auto x, auto y) { return x <= y; });
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return compare(a, b, "gt", [](auto x, auto y) { return x > y; });
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return compare(a, b, "ge", [](auto x, auto y) { return x >= y; });
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return compare(as_bool(a, "logical_and"), as_bool(b, "logical_and"), "logical_and",
                 [](auto x, auto y) { return x && y; });
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  return compare(as_bool(a, "logical_or"), as_bool(b, "logical_or"), "logical_or",
                 [](auto x, auto y) { return x || y; });
}

Tensor logical_not(const Tensor& a) {
  return detail::map_unary<bool, bool>(as_bool(a, "logical_not"), kBool, [](bool x) { return !x; });
}

}  // namespace ag
