// Element types. The dtype is a run-time value: each op dispatches on it inside
// its body (see dispatch_* below), so no template leaks into public signatures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attograd/error.h"

namespace ag {

enum class DType : uint8_t { Float32, Float64, Int64, Bool };

inline constexpr DType kFloat32 = DType::Float32;  // the default
inline constexpr DType kFloat64 = DType::Float64;  // gradcheck runs in double
inline constexpr DType kInt64 = DType::Int64;      // lengths, indices
inline constexpr DType kBool = DType::Bool;        // masks

// "float32", "float64", "int64", "bool" (as NumPy names them).
const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);
inline bool is_floating(DType dtype) {
  return dtype == kFloat32 || dtype == kFloat64;
}

namespace detail {
// Throws "op: <what> must be float32 or float64, got int64 [2, 3]": the one
// wording of that check (the shape only when one is given).
[[noreturn]] void throw_not_floating(DType dtype, const char* op, const char* what,
                                     const std::vector<int64_t>* shape = nullptr);
}  // namespace detail

// Throws as above unless dtype is float32 or float64; `what` names the
// argument ("scores", "dtype"). check_floating(const Tensor&, ...) in tensor.h
// also names the tensor's shape.
inline void check_floating(DType dtype, const char* op, const char* what) {
  if (!is_floating(dtype)) detail::throw_not_floating(dtype, op, what);
}

// The C++ type stored for each dtype. bool is stored as one byte holding 0 or 1.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return kFloat32;
}
template <>
constexpr DType dtype_of<double>() {
  return kFloat64;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return kInt64;
}
template <>
constexpr DType dtype_of<bool>() {
  return kBool;
}

// Calls fn(T{}) with T the C++ type of `dtype`:
//   dispatch_all(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
template <typename Fn>
decltype(auto) dispatch_all(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(float{});
    case DType::Float64:
      return fn(double{});
    case DType::Int64:
      return fn(int64_t{});
    case DType::Bool:
      return fn(bool{});
  }
  throw Error("dispatch: unknown dtype");
}

// As dispatch_all, but only for float32/float64; anything else throws
// "op: input must be float32 or float64, got int64".
template <typename Fn>
decltype(auto) dispatch_floating(DType dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(float{});
    case DType::Float64:
      return fn(double{});
    default:
      break;
  }
  detail::throw_not_floating(dtype, op, "input");
}

}  // namespace ag
