// Internal helpers for elementwise kernels: walking tensors of any strides
// (including the stride-0 dims of a broadcast) in row-major order.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "attograd/tensor.h"

namespace ag::detail {

// A fresh contiguous tensor, its errors (a bad shape, out of memory) reported
// under `op`, the name of the function the user called; zero-filled unless
// Init::None (when the caller writes every element). Every creation function
// goes through it.
Tensor make_tensor(Shape shape, DType dtype, const char* op, Init init = Init::Zero);

// A 0-d tensor of `dtype` holding `value`, reported as `op` when the dtype
// cannot hold the value (NaN as int64): scalar_tensor() for the ops that take
// a scalar operand (t + 1.5, masked_fill, where).
Tensor scalar_tensor(double value, DType dtype, const char* op);

// int64 arithmetic wraps around on overflow (two's complement, as PyTorch),
// instead of being undefined behaviour: it is done in uint64, where wrapping
// is defined, and converted back (a modular conversion since C++20). Floating
// types go through unchanged.
template <typename T, typename Op>
T wrapping(T a, T b, Op op) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<int64_t>(op(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
  } else {
    return static_cast<T>(op(a, b));
  }
}
template <typename T>
T wrapping_add(T a, T b) {
  return wrapping(a, b, [](auto x, auto y) { return x + y; });
}
template <typename T>
T wrapping_sub(T a, T b) {
  return wrapping(a, b, [](auto x, auto y) { return x - y; });
}
template <typename T>
T wrapping_mul(T a, T b) {
  return wrapping(a, b, [](auto x, auto y) { return x * y; });
}
template <typename T>
T wrapping_neg(T a) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return wrapping_sub(T(0), a);  // -INT64_MIN wraps to INT64_MIN
  } else {
    return -a;  // not 0 - a: -(0.0) is -0.0
  }
}

// static_cast from a floating value to int64 is undefined behaviour for NaN,
// infinities and values outside int64's range: refuse those. Everything else
// converts as C++ does (toward zero; nonzero -> true).
template <typename To, typename From>
To convert(From value, const char* op) {
  if constexpr (std::is_same_v<To, int64_t> && std::is_floating_point_v<From>) {
    AG_CHECK(std::isfinite(value) && value >= -0x1p63 && value < 0x1p63, op,
             "cannot convert " + number_str(static_cast<double>(value)) + " to int64");
  }
  return static_cast<To>(value);
}

// Strides of `t` seen at shape `out` (which t broadcasts to): leading missing
// dims and size-1 dims that broadcast get stride 0.
inline Shape broadcast_strides(const Tensor& t, const Shape& out) {
  Shape strides(out.size(), 0);
  const size_t lead = out.size() - t.shape().size();
  for (size_t d = 0; d < t.shape().size(); ++d) {
    if (t.shape()[d] != 1) strides[lead + d] = t.strides()[d];
  }
  return strides;
}

// Calls fn(offsets) for every index of `shape` in row-major order, where
// offsets[k] is the element offset of operand k (from strides[k]).
template <size_t N, typename Fn>
void for_each_offset(const Shape& shape, const std::array<Shape, N>& strides, Fn&& fn) {
  const int64_t total = shape_numel(shape);
  if (total == 0) return;
  std::array<int64_t, N> base{};
  if (shape.empty()) {
    fn(base);
    return;
  }
  const size_t nd = shape.size();
  const int64_t inner = shape[nd - 1];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][nd - 1];
  std::vector<int64_t> index(nd, 0);
  for (int64_t row = 0; row < total / inner; ++row) {
    std::array<int64_t, N> offsets = base;
    for (int64_t i = 0; i < inner; ++i) {
      fn(offsets);
      for (size_t k = 0; k < N; ++k) offsets[k] += inner_stride[k];
    }
    // Odometer step over the outer dims (last-but-one fastest).
    for (int64_t d = static_cast<int64_t>(nd) - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

// out[i] = fn(x[i]) into a fresh contiguous tensor of dtype R.
template <typename T, typename R, typename Fn>
Tensor map_unary(const Tensor& x, DType out_dtype, Fn&& fn) {
  Tensor out = ag::empty(x.shape(), out_dtype);
  const T* in = x.data_ptr<T>();
  R* o = out.data_ptr<R>();
  if (x.is_contiguous()) {
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = fn(in[i]);
    return out;
  }
  int64_t i = 0;
  for_each_offset<1>(x.shape(), {x.strides()},
                     [&](const std::array<int64_t, 1>& off) { o[i++] = fn(in[off[0]]); });
  return out;
}

// A fresh contiguous copy of t's values, recording nothing (clone's forward;
// the tensor layer's to_vector and printing use it to walk any strides).
// When the last dim has stride 1, its rows are copied whole (the attention
// heads' transposes: rows of h/H features, 8 in d2l's Transformer), a run of
// rows along the next dim at a time: the odometer of for_each_offset steps
// once per run, not once per row of a few floats. Other strides go one by one.
inline Tensor contiguous_copy(const Tensor& t) {
  return dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (t.dim() < 2 || t.strides().back() != 1 || t.is_contiguous())
      return map_unary<T, T>(t, t.dtype(), [](T v) { return v; });
    Tensor out = ag::empty(t.shape(), t.dtype());
    const size_t nd = t.shape().size();
    const int64_t n = t.shape()[nd - 1];                                      // a row's values
    const int64_t run = t.shape()[nd - 2], run_stride = t.strides()[nd - 2];  // a run's rows
    const T* in = t.data_ptr<T>();
    T* o = out.data_ptr<T>();
    const Shape runs(t.shape().begin(), t.shape().end() - 2);
    const Shape run_strides(t.strides().begin(), t.strides().end() - 2);
    for_each_offset<1>(runs, {run_strides}, [&](const std::array<int64_t, 1>& off) {
      const T* row = in + off[0];
      for (int64_t r = 0; r < run; ++r, row += run_stride, o += n)
        for (int64_t k = 0; k < n; ++k)
          o[k] = row[k];  // (a loop, not a memcpy call: rows are short)
    });
    return out;
  });
}

// out = fn(a, b) with NumPy broadcasting, into a fresh tensor of dtype R.
template <typename T, typename R, typename Fn>
Tensor map_binary(const Tensor& a, const Tensor& b, const char* op, DType out_dtype, Fn&& fn) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = ag::empty(shape, out_dtype);
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  R* o = out.data_ptr<R>();
  const int64_t n = out.numel();
  if (a.shape() == b.shape() && a.is_contiguous() && b.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) o[i] = fn(pa[i], pb[i]);
    return out;
  }
  // One operand laid out as out, the other one value (x / sqrt(d), 1 - y):
  // a flat loop too.
  if (a.shape() == shape && a.is_contiguous() && b.numel() == 1) {
    const T v = pb[0];
    for (int64_t i = 0; i < n; ++i) o[i] = fn(pa[i], v);
    return out;
  }
  if (b.shape() == shape && b.is_contiguous() && a.numel() == 1) {
    const T v = pa[0];
    for (int64_t i = 0; i < n; ++i) o[i] = fn(v, pb[i]);
    return out;
  }
  int64_t i = 0;
  for_each_offset<2>(
      shape, {broadcast_strides(a, shape), broadcast_strides(b, shape)},
      [&](const std::array<int64_t, 2>& off) { o[i++] = fn(pa[off[0]], pb[off[1]]); });
  return out;
}

// A fresh tensor whose element i is convert<T>(value_at(i), op), written in
// place (tensor, arange and the random creation functions).
template <typename ValueAt>
Tensor make_filled(Shape shape, DType dtype, const char* op, ValueAt value_at) {
  Tensor t = make_tensor(std::move(shape), dtype, op, Init::None);
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data_ptr<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(value_at(i), op);
  });
  return t;
}

}  // namespace ag::detail
