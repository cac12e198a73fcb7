// Shape ops. All of these are views: the result shares the input's storage
// and only shape, strides and offset change (reshape copies only when the
// input's layout cannot be viewed with the new shape).
#include <algorithm>
#include <numeric>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "tensor_impl_access.h"

namespace ag {

namespace {

Tensor make_view(const Tensor& x, Shape shape, Shape strides, int64_t offset) {
  return detail::TensorImplAccess::make(x.impl()->storage(), offset, std::move(shape),
                                        std::move(strides), x.dtype());
}

// Replaces a single -1 in `shape` so that it holds `numel` elements.
Shape infer_shape(Shape shape, int64_t numel, const Shape& from, const char* op) {
  int64_t unknown = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      AG_CHECK(unknown < 0, op, "only one dim may be -1 in " + shape_str(shape));
      unknown = static_cast<int64_t>(d);
    } else {
      AG_CHECK(shape[d] >= 0, op, "invalid shape " + shape_str(shape));
    }
  }
  if (unknown >= 0) {
    Shape known_dims = shape;
    known_dims[static_cast<size_t>(unknown)] = 1;
    const int64_t known = shape_numel(known_dims, op);
    AG_CHECK(known != 0 && numel % known == 0, op,
             "cannot reshape " + shape_str(from) + " into " + shape_str(shape));
    shape[static_cast<size_t>(unknown)] = numel / known;
  }
  AG_CHECK(shape_numel(shape, op) == numel, op,
           "cannot reshape " + shape_str(from) + " (" + std::to_string(numel) + " elements) into " +
               shape_str(shape));
  return shape;
}

// y = x viewed as `shape`  =>  dL/dx = dL/dy viewed as x's shape
// (errors are reported as `op`: "view", or "reshape" when it calls this)
Tensor view_op(const Tensor& x, Shape shape, const char* op) {
  AG_CHECK(x.defined(), op, "undefined tensor");
  shape = infer_shape(std::move(shape), x.numel(), x.shape(), op);
  AG_CHECK(x.is_contiguous(), op,
           "input of shape " + shape_str(x.shape()) + " is not contiguous; use reshape");
  Shape strides = contiguous_strides(shape);
  Tensor y = make_view(x, std::move(shape), std::move(strides), x.impl()->offset());
  if (needs_grad(x))
    record(y, "ViewBackward", {x},
           [in_shape = x.shape()](const Tensor& g) { return grads{reshape(g, in_shape)}; });
  return y;
}

}  // namespace

Tensor view(const Tensor& x, Shape shape) {
  return view_op(x, std::move(shape), "view");
}

Tensor reshape(const Tensor& x, Shape shape) {
  AG_CHECK(x.defined(), "reshape", "undefined tensor");
  // contiguous() records its own CloneBackward when it copies
  return view_op(x.contiguous(), std::move(shape), "reshape");
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  AG_CHECK(x.defined(), "flatten", "undefined tensor");
  const int64_t start = normalize_dim(start_dim, x.shape(), "flatten");
  const int64_t end = normalize_dim(end_dim, x.shape(), "flatten");
  if (x.dim() == 0) return reshape(x, {1});
  AG_CHECK(start <= end, "flatten",
           "start_dim comes after end_dim for shape " + shape_str(x.shape()));
  Shape shape(x.shape().begin(), x.shape().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= x.shape()[static_cast<size_t>(d)];
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + end + 1, x.shape().end());
  return reshape(x, shape);
}

// y = x with dims d0 and d1 swapped  =>  dL/dx = dL/dy with them swapped back
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  AG_CHECK(x.defined(), "transpose", "undefined tensor");
  const size_t d0 = static_cast<size_t>(normalize_dim(dim0, x.shape(), "transpose"));
  const size_t d1 = static_cast<size_t>(normalize_dim(dim1, x.shape(), "transpose"));
  if (x.dim() == 0) return x;  // dims 0 and -1 both name the scalar itself
  Shape shape = x.shape(), strides = x.strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  Tensor y = make_view(x, std::move(shape), std::move(strides), x.impl()->offset());
  if (needs_grad(x))
    record(y, "TransposeBackward", {x},
           [dim0, dim1](const Tensor& g) { return grads{transpose(g, dim0, dim1)}; });
  return y;
}

// y.shape[i] = x.shape[dims[i]]  =>  dL/dx = dL/dy permuted by the inverse
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  AG_CHECK(x.defined(), "permute", "undefined tensor");
  AG_CHECK(
      static_cast<int64_t>(dims.size()) == x.dim(), "permute",
      "got " + std::to_string(dims.size()) + " dims for a tensor of shape " + shape_str(x.shape()));
  Shape shape(dims.size()), strides(dims.size());
  std::vector<int64_t> inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = normalize_dim(dims[i], x.shape(), "permute");
    AG_CHECK(inverse[static_cast<size_t>(d)] < 0, "permute",
             "dim " + std::to_string(dims[i]) + " repeats in " + shape_str(dims));
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(i);
    shape[i] = x.shape()[static_cast<size_t>(d)];
    strides[i] = x.strides()[static_cast<size_t>(d)];
  }
  Tensor y = make_view(x, std::move(shape), std::move(strides), x.impl()->offset());
  if (needs_grad(x))
    record(y, "PermuteBackward", {x},
           [inverse](const Tensor& g) { return grads{permute(g, inverse)}; });
  return y;
}

// Inserts a size-1 dim at `dim` (in [-(n+1), n]).
Tensor unsqueeze(const Tensor& x, int64_t dim) {
  AG_CHECK(x.defined(), "unsqueeze", "undefined tensor");
  const int64_t n = x.dim();
  AG_CHECK(dim >= -(n + 1) && dim <= n, "unsqueeze",
           "dim " + std::to_string(dim) + " out of range for a " + std::to_string(n) +
               "-D tensor of shape " + shape_str(x.shape()));
  const size_t d = static_cast<size_t>(dim < 0 ? dim + n + 1 : dim);
  Shape shape = x.shape(), strides = x.strides();
  const int64_t stride = d < shape.size() ? shape[d] * strides[d] : 1;
  shape.insert(shape.begin() + static_cast<long>(d), 1);
  strides.insert(strides.begin() + static_cast<long>(d), stride);
  Tensor y = make_view(x, std::move(shape), std::move(strides), x.impl()->offset());
  if (needs_grad(x))
    record(y, "UnsqueezeBackward", {x},
           [in_shape = x.shape()](const Tensor& g) { return grads{reshape(g, in_shape)}; });
  return y;
}

namespace {
// Drops the dims for which keep(d) is false (all of size 1).
template <typename Keep>
Tensor drop_dims(const Tensor& x, Keep keep) {
  Shape shape, strides;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    if (!keep(d)) continue;
    shape.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
  }
  Tensor y = make_view(x, std::move(shape), std::move(strides), x.impl()->offset());
  if (needs_grad(x))
    record(y, "SqueezeBackward", {x},
           [in_shape = x.shape()](const Tensor& g) { return grads{reshape(g, in_shape)}; });
  return y;
}
}  // namespace

Tensor squeeze(const Tensor& x) {
  AG_CHECK(x.defined(), "squeeze", "undefined tensor");
  return drop_dims(x, [&](size_t d) { return x.shape()[d] != 1; });
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  AG_CHECK(x.defined(), "squeeze", "undefined tensor");
  const size_t target = static_cast<size_t>(normalize_dim(dim, x.shape(), "squeeze"));
  if (x.dim() == 0) return x;
  return drop_dims(x, [&](size_t d) { return d != target || x.shape()[d] != 1; });
}

// y = x repeated along size-1 (or new leading) dims, with stride 0: no copy.
// dL/dx = dL/dy summed over the repeated dims — the engine's sum_to_shape does it.
Tensor expand(const Tensor& x, Shape shape) {
  AG_CHECK(x.defined(), "expand", "undefined tensor");
  const Shape& in = x.shape();
  AG_CHECK(shape.size() >= in.size(), "expand",
           "cannot expand shape " + shape_str(in) + " to fewer dims " + shape_str(shape));
  const size_t lead = shape.size() - in.size();
  Shape strides(shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < lead) {
      AG_CHECK(shape[d] >= 0, "expand", "invalid target shape " + shape_str(shape));
      continue;
    }
    const int64_t size = in[d - lead];
    if (shape[d] == -1) shape[d] = size;
    AG_CHECK(shape[d] >= 0, "expand", "invalid target shape " + shape_str(shape));
    AG_CHECK(shape[d] == size || size == 1, "expand",
             "cannot expand shape " + shape_str(in) + " to " + shape_str(shape));
    strides[d] = size == 1 && shape[d] != 1 ? 0 : x.strides()[d - lead];
  }
  shape_numel(shape, "expand");
  Tensor y = make_view(x, std::move(shape), std::move(strides), x.impl()->offset());
  if (needs_grad(x)) record(y, "ExpandBackward", {x}, [](const Tensor& g) { return grads{g}; });
  return y;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  return expand(x, shape);
}

}  // namespace ag
