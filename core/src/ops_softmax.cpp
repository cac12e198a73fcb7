// softmax and log_softmax along one dim, as fused kernels.
//
// Composed from primitives, softmax(x) = exp(x - max) / sum(exp(x - max))
// would make five passes and five temporaries, and its backward would walk
// the same graph back. Here the forward is one kernel (max, exp and sum, scale)
// and the backward another, from the saved output y:
//
//   y = softmax(x)      dL/dx = y * (g - sum(g * y))
//   y = log_softmax(x)  dL/dx = g - exp(y) * sum(g)
//
// (sums along `dim`). Subtracting the row max keeps exp() from overflowing:
// x = 1000 is as fine as x = 0. A -inf entry gets weight exp(-inf) = 0; a row
// of only -inf has no finite max and gives NaN everywhere, as in PyTorch
// (masked_softmax in nn masks with a large finite negative value instead).
//
// The tensor is viewed as [outer, n, inner] around `dim` (contiguous), so the
// n entries of one softmax row are `inner` elements apart. When dim is the
// last (inner = 1) each row is one contiguous run; otherwise the kernels walk
// a whole [n, inner] block row by row and keep one running max/sum per column,
// so the innermost loop is still over contiguous memory. The outer blocks are
// independent and split across threads (each block's arithmetic is the same
// whatever the split, so results do not depend on the thread count).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "attograd/reference.h"
#include "dim_layout.h"
#include "elementwise.h"
#include "fast/parallel.h"
#include "fast/vector_math.h"
#include "fault.h"

namespace ag {

namespace {

using detail::DimLayout;

// ==== softmax and log_softmax =========================================================
// A row is the n entries along `dim`; a row is contiguous when dim is the last
// (inner = 1), and `inner` elements apart otherwise, where a block [n, inner]
// holds `inner` rows side by side (as columns). Below: forward and backward of
// a contiguous row, then the op (checks, forward, record of the backward);
// after it the float32 dispatch, the same two for a block, and (at the end of
// the file) the loops that run them over every row on the threads.

// forward: y = e^(x - max) / sum_k e^(x - max)      (log_softmax: y = x - max - log sum)
// float32 twin (softmax only): detail::softmax_row_f32 in fast/vector_math.cpp.
template <typename T, bool Log>
void forward_row(const T* x, T* y, int64_t n) {
  T max = x[0];
  for (int64_t k = 1; k < n; ++k) max = x[k] > max ? x[k] : max;
  double sum = 0;  // accumulated in double: long rows keep their precision
  for (int64_t k = 0; k < n; ++k) {
    const T e = std::exp(x[k] - max);
    if constexpr (!Log) y[k] = e;
    sum += e;
  }
  if constexpr (Log) {
    const T log_sum = static_cast<T>(std::log(sum));
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - max) - log_sum;
  } else {
    const T scale = static_cast<T>(1.0 / sum);
    for (int64_t k = 0; k < n; ++k) y[k] *= scale;
  }
}

// backward, from the saved y and g = dL/dy. In the forward this was
//   y_k = e^x_k / sum_j e^x_j,  so dy_k/dx_i = y_k (delta_ki - y_i), and
//   softmax:     dx = y * (g - s),      s = sum_k g_k y_k
//   log_softmax: dx = g - e^y * s,      s = sum_k g_k      (e^y is the softmax)
// float32 twin (softmax only): detail::softmax_backward_row_f32 in fast/vector_math.cpp.
template <typename T, bool Log>
void backward_row(const T* y, const T* g, T* dx, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += Log ? g[k] : static_cast<double>(g[k]) * y[k];
  const T sum = static_cast<T>(s);
  for (int64_t k = 0; k < n; ++k) dx[k] = Log ? g[k] - std::exp(y[k]) * sum : y[k] * (g[k] - sum);
}

// Every row of x (forward) or of y and g (backward), split across threads by
// outer block; defined at the end of the file.
template <bool Log>
Tensor forward(const Tensor& x, const DimLayout& l, const char* op);
template <bool Log>
Tensor backward(const Tensor& y, const Tensor& g, const DimLayout& l, const char* op);

template <bool Log>
Tensor softmax_op(const Tensor& x, int64_t dim, const char* op, const char* node) {
  check_floating(x, op, "input");
  const size_t d = static_cast<size_t>(normalize_dim(dim, x.shape(), op));
  const DimLayout l = x.dim() == 0 ? DimLayout{} : detail::layout_around(x.shape(), d);
  Tensor y = detail::faulty(op, forward<Log>(x, l, op));
  if (needs_grad(x))
    record(y, node, {x}, [y_ = y.detach(), l, op](const Tensor& g) {
      return grads{backward<Log>(y_, g, l, op)};
    });
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return softmax_op<false>(x, dim, "softmax", "SoftmaxBackward");
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_op<true>(x, dim, "log_softmax", "LogSoftmaxBackward");
}

namespace {

// The float32 softmax rows take the SIMD twins; everything else, and every
// row in reference mode, the loops above.
template <typename T, bool Log>
void forward_row_fast(const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float> && !Log) {
    if (!reference_mode()) return detail::softmax_row_f32(x, y, n);
  }
  forward_row<T, Log>(x, y, n);
}

template <typename T, bool Log>
void backward_row_fast(const T* y, const T* g, T* dx, int64_t n) {
  if constexpr (std::is_same_v<T, float> && !Log) {
    if (!reference_mode()) return detail::softmax_backward_row_f32(y, g, dx, n);
  }
  backward_row<T, Log>(y, g, dx, n);
}

// The same two for a block [n, inner]: one running max/sum per column, so the
// innermost loop stays over contiguous memory.
template <typename T, bool Log>
void forward_block(const T* x, T* y, int64_t n, int64_t inner, std::vector<T>& max,
                   std::vector<double>& sum) {
  std::copy(x, x + inner, max.begin());
  for (int64_t k = 1; k < n; ++k)
    for (int64_t i = 0; i < inner; ++i)
      max[i] = x[k * inner + i] > max[i] ? x[k * inner + i] : max[i];
  std::fill(sum.begin(), sum.end(), 0.0);
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t i = 0; i < inner; ++i) {
      const T e = std::exp(x[k * inner + i] - max[i]);
      if constexpr (!Log) y[k * inner + i] = e;
      sum[i] += e;
    }
  }
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t i = 0; i < inner; ++i) {
      if constexpr (Log) {
        y[k * inner + i] = (x[k * inner + i] - max[i]) - static_cast<T>(std::log(sum[i]));
      } else {
        y[k * inner + i] = static_cast<T>(y[k * inner + i] / sum[i]);
      }
    }
  }
}

template <typename T, bool Log>
void backward_block(const T* y, const T* g, T* dx, int64_t n, int64_t inner,
                    std::vector<double>& s) {
  std::fill(s.begin(), s.end(), 0.0);
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t j = k * inner + i;
      s[i] += Log ? g[j] : static_cast<double>(g[j]) * y[j];
    }
  }
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t j = k * inner + i;
      const T si = static_cast<T>(s[i]);
      dx[j] = Log ? g[j] - std::exp(y[j]) * si : y[j] * (g[j] - si);
    }
  }
}

// ==== masked softmax over the last axis ================================================
// Rows are the last axis of x (contiguous, n entries); keep (broadcast to x)
// may have any strides, so each row gets its own keep offset and the keep
// row is walked with keep's last stride (0 when one flag covers the row).

struct KeepRows {
  std::vector<int64_t> offset;  // keep offset of each row
  int64_t stride;               // keep's stride along the last axis
  const bool* data;
};

KeepRows keep_rows(const Tensor& keep, const Shape& shape) {
  const Shape strides = detail::broadcast_strides(keep, shape);
  const Shape rows_shape(shape.begin(), shape.end() - 1);
  const Shape row_strides(strides.begin(), strides.end() - 1);
  KeepRows rows{{}, strides.back(), keep.data_ptr<bool>()};
  rows.offset.reserve(static_cast<size_t>(shape_numel(rows_shape)));
  detail::for_each_offset<1>(rows_shape, {row_strides}, [&](const std::array<int64_t, 1>& off) {
    rows.offset.push_back(off[0]);
  });
  return rows;
}

// forward: y = softmax(where(k, x, fill)), then y = 0 where !k if zero_masked,
// for the rows [begin, end) of x and y (n entries each, row r's keep flags at
// k + offset[r], k_stride apart). float32 rows of up to kMaxPaddedRow keys
// take detail::masked_softmax_rows_f32 (the same steps on rows padded to
// whole SIMD vectors).
template <typename T>
void masked_forward_rows(const T* x, const KeepRows& keep, T* y, int64_t begin, int64_t end,
                         int64_t n, T fill, bool zero_masked) {
  if (n == 0) return;  // rows of no keys: nothing to normalise
  if constexpr (std::is_same_v<T, float>) {
    if (n <= detail::kMaxPaddedRow) {
      detail::masked_softmax_rows_f32(x + begin * n, keep.data, keep.offset.data() + begin,
                                      keep.stride, y + begin * n, end - begin, n, fill,
                                      zero_masked);
      return;
    }
  }
  const auto flags = [&](int64_t r) { return keep.data + keep.offset[static_cast<size_t>(r)]; };
  for (int64_t r = begin; r < end; ++r) {
    T* yr = y + r * n;
    for (int64_t j = 0; j < n; ++j) yr[j] = flags(r)[j * keep.stride] ? x[r * n + j] : fill;
    forward_row_fast<T, false>(yr, yr, n);  // in place: each entry is read before it is written
    if (zero_masked)
      for (int64_t j = 0; j < n; ++j) yr[j] = flags(r)[j * keep.stride] ? yr[j] : T(0);
  }
}

// backward: dx = k * y * (g~ - sum_j g~_j y_j), g~ = zero_masked ? k * g : g,
// for the rows [begin, end). (With zero_masked, y is 0 where k is false, so
// the output y stands in for the unmasked softmax in the sum: every masked
// term has g~ = 0 anyway.) float32 rows of up to kMaxPaddedRow keys take
// detail::masked_softmax_backward_rows_f32; longer ones and float64 sum in
// double, one entry at a time.
template <typename T>
void masked_backward_rows(const T* y, const T* g, const KeepRows& keep, T* dx, int64_t begin,
                          int64_t end, int64_t n, bool zero_masked) {
  if constexpr (std::is_same_v<T, float>) {
    if (n <= detail::kMaxPaddedRow) {
      detail::masked_softmax_backward_rows_f32(y + begin * n, g + begin * n, keep.data,
                                               keep.offset.data() + begin, keep.stride,
                                               dx + begin * n, end - begin, n, zero_masked);
      return;
    }
  }
  for (int64_t r = begin; r < end; ++r) {
    const T *yr = y + r * n, *gr = g + r * n;
    const bool* k = keep.data + keep.offset[static_cast<size_t>(r)];
    double s = 0;
    for (int64_t j = 0; j < n; ++j)
      if (k[j * keep.stride] || !zero_masked) s += static_cast<double>(gr[j]) * yr[j];
    const T sum = static_cast<T>(s);
    for (int64_t j = 0; j < n; ++j)
      dx[r * n + j] = k[j * keep.stride] ? yr[j] * (gr[j] - sum) : T(0);
  }
}

}  // namespace

Tensor masked_softmax_last(const Tensor& x, const Tensor& keep, double fill, bool zero_masked) {
  const char* op = "masked_softmax";
  AG_CHECK(keep.defined(), op, "undefined keep mask");
  check_floating(x, op, "scores");
  AG_CHECK(x.dim() >= 1, op, "expected scores of rank >= 1, got shape " + shape_str(x.shape()));
  AG_CHECK(keep.dtype() == kBool, op,
           std::string("keep mask must be bool, got ") + dtype_name(keep.dtype()) + " " +
               shape_str(keep.shape()));
  AG_CHECK(broadcasts_to(keep.shape(), x.shape()), op,
           "keep mask of shape " + shape_str(keep.shape()) +
               " does not broadcast to the scores' shape " + shape_str(x.shape()));
  AG_CHECK(!std::isnan(fill), op,
           "the mask value is NaN (scores " + shape_str(x.shape()) +
               "); use a large negative number such as -1e6");
  if (reference_mode()) {
    return detail::faulty(op, reference::masked_softmax_last(x, keep, fill, zero_masked));
  }
  const Tensor xc = x.detach().contiguous();
  const int64_t n = x.size(-1);
  Tensor y = empty(x.shape(), x.dtype());  // masked_forward_rows writes every row
  const KeepRows rows = keep_rows(keep, x.shape());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    // A fill outside the dtype's finite range (-1e300 in float32, -inf) would
    // make a fully masked row all -inf and its softmax NaN: it is clamped to
    // the nearest finite value, which still gives masked keys exactly 0 weight.
    const T finite_fill = static_cast<T>(
        std::clamp<double>(fill, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max()));
    const T* px = xc.data_ptr<T>();
    T* py = y.data_ptr<T>();
    detail::parallel_for(
        static_cast<int64_t>(rows.offset.size()),
        [&](int64_t begin, int64_t end) {
          masked_forward_rows<T>(px, rows, py, begin, end, n, finite_fill, zero_masked);
        },
        detail::grain_for(n));
  });
  y = detail::faulty(op, std::move(y));
  if (needs_grad(x))
    record(y, "MaskedSoftmaxBackward", {x},
           // rows.data points into keep's storage: keep_ holds it alive.
           [y_ = y.detach(), keep_ = keep.detach(), rows, zero_masked](const Tensor& g) {
             const Tensor gc = g.contiguous();
             const int64_t n = y_.size(-1);
             Tensor dx = empty(y_.shape(), y_.dtype());  // every row written
             dispatch_floating(y_.dtype(), "masked_softmax", [&](auto tag) {
               using T = decltype(tag);
               // The rows split across threads, as in the forward.
               detail::parallel_for(
                   static_cast<int64_t>(rows.offset.size()),
                   [&](int64_t begin, int64_t end) {
                     masked_backward_rows<T>(y_.data_ptr<T>(), gc.data_ptr<T>(), rows,
                                             dx.data_ptr<T>(), begin, end, n, zero_masked);
                   },
                   detail::grain_for(n));
             });
             return grads{dx};
           });
  return y;
}

// The reference (reference.h): the filled scores made, then the plain softmax;
// autograd takes the backward through where and softmax.
Tensor reference::masked_softmax_last(const Tensor& x, const Tensor& keep, double fill,
                                      bool zero_masked) {
  // Clamped as the kernel clamps it (above): no row of -inf, no NaN.
  const double lowest = x.dtype() == kFloat32 ? std::numeric_limits<float>::lowest()
                                              : std::numeric_limits<double>::lowest();
  const double highest = x.dtype() == kFloat32 ? std::numeric_limits<float>::max()
                                               : std::numeric_limits<double>::max();
  const Tensor weights = softmax(where(keep, x, std::clamp(fill, lowest, highest)), -1);
  return zero_masked ? where(keep, weights, 0.0) : weights;
}

// ==== the row loops behind softmax and log_softmax ========================================
namespace {

// One thread's scratch for the block form: a running max and sum per column.
template <typename T>
struct Columns {
  std::vector<T> max;
  std::vector<double> sum;
};

// Calls row(at) for every outer block when its rows are contiguous (inner = 1)
// and block(at, columns) otherwise, `at` being the block's first element; the
// outer blocks are split across threads.
template <typename T, typename Row, typename Block>
void for_each_outer_block(const DimLayout& l, Row row, Block block) {
  const int64_t size = l.n * l.inner;
  detail::parallel_for(
      l.outer,
      [&](int64_t begin, int64_t end) {
        if (l.inner == 1) {
          for (int64_t o = begin; o < end; ++o) row(o * size);
          return;
        }
        Columns<T> columns{std::vector<T>(static_cast<size_t>(l.inner)),
                           std::vector<double>(static_cast<size_t>(l.inner))};
        for (int64_t o = begin; o < end; ++o) block(o * size, columns);
      },
      detail::grain_for(size));
}

template <bool Log>
Tensor forward(const Tensor& x, const DimLayout& l, const char* op) {
  const Tensor xc = x.contiguous();
  Tensor y = empty(x.shape(), x.dtype());  // every row is written below
  if (l.n == 0) return y;                  // empty rows: nothing to normalise
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = xc.data_ptr<T>();
    T* py = y.data_ptr<T>();
    for_each_outer_block<T>(
        l, [&](int64_t at) { forward_row_fast<T, Log>(px + at, py + at, l.n); },
        [&](int64_t at, Columns<T>& c) {
          forward_block<T, Log>(px + at, py + at, l.n, l.inner, c.max, c.sum);
        });
  });
  return y;
}

template <bool Log>
Tensor backward(const Tensor& y, const Tensor& g, const DimLayout& l, const char* op) {
  const Tensor gc = g.contiguous();
  Tensor dx = empty(y.shape(), y.dtype());  // every row is written below
  dispatch_floating(y.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* py = y.data_ptr<T>();
    const T* pg = gc.data_ptr<T>();
    T* pdx = dx.data_ptr<T>();
    for_each_outer_block<T>(
        l, [&](int64_t at) { backward_row_fast<T, Log>(py + at, pg + at, pdx + at, l.n); },
        [&](int64_t at, Columns<T>& c) {
          backward_block<T, Log>(py + at, pg + at, pdx + at, l.n, l.inner, c.sum);
        });
  });
  return dx;
}

}  // namespace

}  // namespace ag
