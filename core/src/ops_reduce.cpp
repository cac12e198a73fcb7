// Reductions: sum, mean, max, argmax. Sums accumulate in double (float
// inputs) or int64 (int64/bool inputs, wrapping around on overflow as
// add does) so long rows keep their precision.
#include <algorithm>
#include <limits>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "dim_layout.h"
#include "elementwise.h"
#include "reduce.h"

namespace ag {

namespace {

std::vector<bool> dims_mask(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  std::vector<bool> reduce(x.shape().size(), false);
  for (int64_t dim : dims) {
    if (x.dim() == 0) {
      normalize_dim(dim, x.shape(), op);  // validates; a 0-d tensor has nothing to reduce
      continue;
    }
    const size_t d = static_cast<size_t>(normalize_dim(dim, x.shape(), op));
    AG_CHECK(!reduce[d], op, "dim " + std::to_string(dim) + " repeats in " + shape_str(dims));
    reduce[d] = true;
  }
  return reduce;
}

}  // namespace

// y = sum over dims of x  =>  dL/dx = dL/dy broadcast back over those dims
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  AG_CHECK(x.defined(), "sum", "undefined tensor");
  const std::vector<bool> reduce = dims_mask(x, dims, "sum");
  Tensor y = detail::sum_dims(x, reduce, detail::reduced_shape(x.shape(), reduce, keepdim));
  if (needs_grad(x))
    record(y, "SumBackward", {x},
           [in_shape = x.shape(),
            kept_shape = detail::reduced_shape(x.shape(), reduce, /*keepdim=*/true)](
               const Tensor& g) { return grads{expand(reshape(g, kept_shape), in_shape)}; });
  return y;
}

Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  return sum(x, std::vector<int64_t>{dim}, keepdim);
}

Tensor sum(const Tensor& x) {
  AG_CHECK(x.defined(), "sum", "undefined tensor");
  return sum(x, detail::first_dims(x.shape().size()), /*keepdim=*/false);
}

// mean = sum / count (composed: its backward comes from sum and div)
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  check_floating(x, "mean", "input");
  const int64_t d = normalize_dim(dim, x.shape(), "mean");
  const int64_t count = x.dim() == 0 ? 1 : x.shape()[static_cast<size_t>(d)];
  AG_CHECK(count > 0, "mean", "mean over an empty dim of shape " + shape_str(x.shape()));
  return sum(x, dim, keepdim) / static_cast<double>(count);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  check_floating(x, "mean", "input");
  const std::vector<bool> reduce = dims_mask(x, dims, "mean");
  int64_t count = 1;
  for (size_t d = 0; d < reduce.size(); ++d)
    if (reduce[d]) count *= x.shape()[d];
  AG_CHECK(count > 0, "mean",
           "mean over dims " + shape_str(dims) + " of shape " + shape_str(x.shape()) +
               ": they hold no elements");
  return sum(x, dims, keepdim) / static_cast<double>(count);
}

Tensor mean(const Tensor& x) {
  check_floating(x, "mean", "input");
  AG_CHECK(x.numel() > 0, "mean", "mean of an empty tensor of shape " + shape_str(x.shape()));
  return sum(x) / static_cast<double>(x.numel());
}

// ---- max / argmax along one dim -------------------------------------------------
// x is viewed as [outer, n, inner] around `dim` (dim_layout.h).

namespace {

struct ArgMax {
  Tensor values, indices;  // both with the dim kept as size 1
};

ArgMax argmax_kept(const Tensor& x, int64_t dim, const char* op) {
  AG_CHECK(x.defined(), op, "undefined tensor");
  AG_CHECK(x.dtype() != kBool, op, "not defined for bool tensors, got " + shape_str(x.shape()));
  const Tensor c = x.contiguous();
  const Shape shape = c.dim() == 0 ? Shape{1} : c.shape();
  const size_t d = static_cast<size_t>(normalize_dim(dim, x.shape(), op));  // 0 for a 0-d x
  const detail::DimLayout l = detail::layout_around(shape, d);
  const int64_t outer = l.outer, n = l.n, inner = l.inner;
  AG_CHECK(n > 0, op, "reduction over an empty dim of shape " + shape_str(x.shape()));
  Shape kept = shape;
  kept[d] = 1;
  // Every kept position gets its value and index below.
  ArgMax r{empty(kept, x.dtype()), empty(kept, kInt64)};
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = c.data_ptr<T>();
    T* values = r.values.data_ptr<T>();
    int64_t* indices = r.indices.data_ptr<int64_t>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = in + o * n * inner + i;
        int64_t best = 0;
        auto is_nan = [](T v) { return v != v; };
        for (int64_t k = 1; k < n && !is_nan(row[best * inner]); ++k)  // a NaN wins, as in PyTorch
          if (row[k * inner] > row[best * inner] || is_nan(row[k * inner])) best = k;
        values[o * inner + i] = row[best * inner];
        indices[o * inner + i] = best;
      }
    }
  });
  return r;
}

Shape drop_dim(const Shape& shape, int64_t dim) {
  Shape out = shape;
  if (!out.empty()) out.erase(out.begin() + dim);
  return out;
}

}  // namespace

// y = max_k x[..., k, ...]  =>  dL/dx = dL/dy at the first argmax, 0 elsewhere
MaxResult max_with_indices(const Tensor& x, int64_t dim, bool keepdim) {
  ArgMax r = argmax_kept(x, dim, "max");
  const int64_t d = normalize_dim(dim, x.shape(), "max");
  const Shape out_shape = x.dim() == 0 ? Shape{}
                          : keepdim    ? r.values.shape()
                                       : drop_dim(x.shape(), d);
  Tensor y = reshape(r.values, out_shape);
  if (needs_grad(x))
    record(
        y, "MaxBackward", {x},
        [in_shape = x.shape(), kept = r.values.shape(), indices = r.indices, d](const Tensor& g) {
          // Scatter g into a zero tensor of x's shape at the recorded indices.
          const Tensor gc = reshape(g, kept).contiguous();
          Tensor gx = zeros(in_shape.empty() ? Shape{1} : in_shape, g.dtype());
          const int64_t n = in_shape.empty() ? 1 : in_shape[static_cast<size_t>(d)];
          const detail::DimLayout l =
              detail::layout_around(kept, static_cast<size_t>(d));  // l.n = 1
          dispatch_floating(g.dtype(), "max", [&](auto tag) {
            using T = decltype(tag);
            const T* src = gc.data_ptr<T>();
            const int64_t* idx = indices.data_ptr<int64_t>();
            T* dst = gx.data_ptr<T>();
            for (int64_t o = 0; o < l.outer; ++o)
              for (int64_t i = 0; i < l.inner; ++i)
                dst[o * n * l.inner + idx[o * l.inner + i] * l.inner + i] = src[o * l.inner + i];
          });
          return grads{reshape(gx, in_shape)};
        });
  return {y, reshape(r.indices, out_shape)};
}

Tensor max(const Tensor& x, int64_t dim, bool keepdim) {
  return max_with_indices(x, dim, keepdim).values;
}

Tensor max(const Tensor& x) {
  AG_CHECK(x.defined(), "max", "undefined tensor");
  AG_CHECK(x.numel() > 0, "max", "max of an empty tensor of shape " + shape_str(x.shape()));
  return max(reshape(x, {-1}), 0, /*keepdim=*/false);
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  ArgMax r = argmax_kept(x, dim, "argmax");
  if (keepdim || x.dim() == 0) return x.dim() == 0 ? reshape(r.indices, {}) : r.indices;
  return reshape(r.indices, drop_dim(x.shape(), normalize_dim(dim, x.shape(), "argmax")));
}

}  // namespace ag
