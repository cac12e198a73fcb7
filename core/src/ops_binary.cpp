// Elementwise binary ops with NumPy broadcasting, and comparisons.
// Backward lambdas return gradients at the broadcast (output) shape; the
// engine's sum_to_shape reduces them to each input's shape.
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <type_traits>

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
// Each comparison is one test of an ordering (x <=> y), shared by its tensor
// and number forms. NaN is unordered with everything: only `ne` holds.

namespace {

constexpr auto is_eq = [](std::partial_ordering o) { return o == 0; };
constexpr auto is_ne = [](std::partial_ordering o) { return o != 0; };
constexpr auto is_lt = [](std::partial_ordering o) { return o < 0; };
constexpr auto is_le = [](std::partial_ordering o) { return o <= 0; };
constexpr auto is_gt = [](std::partial_ordering o) { return o > 0; };
constexpr auto is_ge = [](std::partial_ordering o) { return o >= 0; };

// a vs b, elementwise with broadcasting, in their common dtype.
template <typename Test>
Tensor compare(const Tensor& a, const Tensor& b, const char* op, Test test) {
  AG_CHECK(a.defined() && b.defined(), op, "undefined tensor operand");
  check_same_dtype(a, b, op);
  return dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return detail::map_binary<T, bool>(a, b, op, kBool, [&](T x, T y) { return test(x <=> y); });
  });
}

// A number (not NaN) placed among the int64 values, to compare them with it
// exactly: x <=> number is x <=> whole, except that x == whole gives `tie`.
struct IntegerPlace {
  int64_t whole;
  std::partial_ordering tie;
  std::partial_ordering order(int64_t x) const {
    return x < whole   ? std::partial_ordering::less
           : x > whole ? std::partial_ordering::greater
                       : tie;
  }
};
IntegerPlace integer_place(double number) {
  using order = std::partial_ordering;
  if (number >= 0x1p63) return {INT64_MAX, order::less};     // above every int64
  if (number < -0x1p63) return {INT64_MIN, order::greater};  // below every int64
  const double whole = std::floor(number);                   // in [-2^63, 2^63): exact
  return {static_cast<int64_t>(whole), whole == number ? order::equivalent : order::less};
}

// The number as a floating T, for comparing T values in T (PyTorch's
// promotion keeps a tensor's dtype against a Python number). Beyond float32's
// range it is +-inf, still above or below every finite float32 (a plain cast
// would be undefined behaviour).
template <typename T>
T rounded_to(double number) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr double largest = std::numeric_limits<float>::max();
    if (number > largest) return std::numeric_limits<float>::infinity();
    if (number < -largest) return -std::numeric_limits<float>::infinity();
  }
  return static_cast<T>(number);
}

// a vs the number b: a floating a in its dtype, an int64 or bool a exactly.
template <typename Test>
Tensor compare(const Tensor& a, double b, const char* op, Test test) {
  AG_CHECK(a.defined(), op, "undefined tensor operand");
  return dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T number = rounded_to<T>(b);
      return detail::map_unary<T, bool>(a, kBool, [&](T x) { return test(x <=> number); });
    } else {
      if (std::isnan(b)) return full(a.shape(), test(std::partial_ordering::unordered), kBool);
      const IntegerPlace place = integer_place(b);
      return detail::map_unary<T, bool>(
          a, kBool, [&](T x) { return test(place.order(static_cast<int64_t>(x))); });
    }
  });
}

Tensor as_bool(const Tensor& t, const char* op) {
  AG_CHECK(t.defined() && t.dtype() == kBool, op,
           t.defined() ? std::string("expected a bool tensor, got ") + dtype_name(t.dtype()) + " " +
                             shape_str(t.shape())
                       : std::string("expected a bool tensor, got none"));
  return t;
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
  return compare(a, b, "eq", is_eq);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return compare(a, b, "ne", is_ne);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return compare(a, b, "lt", is_lt);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return compare(a, b, "le", is_le);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return compare(a, b, "gt", is_gt);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return compare(a, b, "ge", is_ge);
}
Tensor eq(const Tensor& a, double b) {
  return compare(a, b, "eq", is_eq);
}
Tensor ne(const Tensor& a, double b) {
  return compare(a, b, "ne", is_ne);
}
Tensor lt(const Tensor& a, double b) {
  return compare(a, b, "lt", is_lt);
}
Tensor le(const Tensor& a, double b) {
  return compare(a, b, "le", is_le);
}
Tensor gt(const Tensor& a, double b) {
  return compare(a, b, "gt", is_gt);
}
Tensor ge(const Tensor& a, double b) {
  return compare(a, b, "ge", is_ge);
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return detail::map_binary<bool, bool>(as_bool(a, "logical_and"), as_bool(b, "logical_and"),
                                        "logical_and", kBool,
                                        [](bool x, bool y) { return x && y; });
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  return detail::map_binary<bool, bool>(as_bool(a, "logical_or"), as_bool(b, "logical_or"),
                                        "logical_or", kBool, [](bool x, bool y) { return x || y; });
}

Tensor logical_not(const Tensor& a) {
  return detail::map_unary<bool, bool>(as_bool(a, "logical_not"), kBool, [](bool x) { return !x; });
}

Tensor operator==(const Tensor& a, const Tensor& b) {
  return eq(a, b);
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
  return ne(a, b);
}
Tensor operator<(const Tensor& a, const Tensor& b) {
  return lt(a, b);
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
  return le(a, b);
}
Tensor operator>(const Tensor& a, const Tensor& b) {
  return gt(a, b);
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
  return ge(a, b);
}
Tensor operator==(const Tensor& a, double b) {
  return eq(a, b);
}
Tensor operator!=(const Tensor& a, double b) {
  return ne(a, b);
}
Tensor operator<(const Tensor& a, double b) {
  return lt(a, b);
}
Tensor operator<=(const Tensor& a, double b) {
  return le(a, b);
}
Tensor operator>(const Tensor& a, double b) {
  return gt(a, b);
}
Tensor operator>=(const Tensor& a, double b) {
  return ge(a, b);
}
// A number on the left: the same comparison seen from the tensor's side.
Tensor operator==(double a, const Tensor& b) {
  return eq(b, a);
}
Tensor operator!=(double a, const Tensor& b) {
  return ne(b, a);
}
Tensor operator<(double a, const Tensor& b) {
  return gt(b, a);
}
Tensor operator<=(double a, const Tensor& b) {
  return ge(b, a);
}
Tensor operator>(double a, const Tensor& b) {
  return lt(b, a);
}
Tensor operator>=(double a, const Tensor& b) {
  return le(b, a);
}
Tensor operator&(const Tensor& a, const Tensor& b) {
  return logical_and(a, b);
}
Tensor operator|(const Tensor& a, const Tensor& b) {
  return logical_or(a, b);
}
Tensor operator~(const Tensor& a) {
  return logical_not(a);
}

}  // namespace ag
