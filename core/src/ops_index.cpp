// Selecting, joining and repeating: where, masked_fill, cat, stack,
// repeat_interleave, narrow, index_select.
#include <cstring>
#include <limits>

#include "attograd/autograd.h"
#include "attograd/ops.h"
#include "dim_layout.h"
#include "elementwise.h"

namespace ag {

// out = cond ? a : b  =>  dL/da = g where cond, dL/db = g where !cond
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  AG_CHECK(cond.defined() && a.defined() && b.defined(), "where", "undefined tensor operand");
  AG_CHECK(cond.dtype() == kBool, "where",
           std::string("condition must be bool, got ") + dtype_name(cond.dtype()) + " " +
               shape_str(cond.shape()));
  check_same_dtype(a, b, "where");
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, a.dtype());  // every element is written below
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* c = cond.data_ptr<bool>();
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    T* o = out.data_ptr<T>();
    // cond, a and b laid out as out, or one of a and b a single value: one
    // flat loop without a branch per element (relu's backward,
    // where(y > 0, g, 0), whose cond is half true at random); other strides
    // take the walk.
    const auto laid_out = [&](const Tensor& t) { return t.shape() == shape && t.is_contiguous(); };
    const auto flat = [n = out.numel()](const bool* __restrict k, auto x, auto y, T* __restrict z) {
      for (int64_t j = 0; j < n; ++j) {
        const T pick[2] = {y(j), x(j)};  // indexed, not branched on (k is random: relu)
        z[j] = pick[k[j]];
      }
    };
    const auto each = [](const T* p) { return [p](int64_t j) { return p[j]; }; };
    const auto one = [](const T* p) { return [v = *p](int64_t) { return v; }; };
    if (laid_out(cond) && laid_out(a) && laid_out(b)) return flat(c, each(pa), each(pb), o);
    if (laid_out(cond) && laid_out(a) && b.numel() == 1) return flat(c, each(pa), one(pb), o);
    if (laid_out(cond) && a.numel() == 1 && laid_out(b)) return flat(c, one(pa), each(pb), o);
    int64_t i = 0;
    detail::for_each_offset<3>(
        shape,
        {detail::broadcast_strides(cond, shape), detail::broadcast_strides(a, shape),
         detail::broadcast_strides(b, shape)},
        [&](const std::array<int64_t, 3>& off) { o[i++] = c[off[0]] ? pa[off[1]] : pb[off[2]]; });
  });
  // (an operand that needs no gradient, like the fill value of masked_fill, is skipped)
  if (needs_grad(a, b))
    record(out, "WhereBackward", {a, b},
           [cond_ = cond.detach(), need_a = a.requires_grad(),
            need_b = b.requires_grad()](const Tensor& g) {
             const Tensor zero = zeros({}, g.dtype());
             return grads{need_a ? where(cond_, g, zero) : Tensor(),
                          need_b ? where(cond_, zero, g) : Tensor()};
           });
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, double b) {
  AG_CHECK(a.defined(), "where", "undefined tensor operand");
  return where(cond, a, detail::scalar_tensor(b, a.dtype(), "where"));
}

// out = x, with `value` where mask  =>  dL/dx = g where !mask
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  AG_CHECK(x.defined() && mask.defined(), "masked_fill", "undefined tensor operand");
  AG_CHECK(mask.dtype() == kBool, "masked_fill",
           std::string("mask must be bool, got ") + dtype_name(mask.dtype()) + " " +
               shape_str(mask.shape()));
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
  AG_CHECK(shape == x.shape(), "masked_fill",
           "mask of shape " + shape_str(mask.shape()) + " does not broadcast to input shape " +
               shape_str(x.shape()));
  return where(mask, detail::scalar_tensor(value, x.dtype(), "masked_fill"), x);
}

// ---- joining, slicing, repeating, selecting ---------------------------------------
// These ops move whole slices along one dim. Around that dim a contiguous
// tensor is [outer, n, inner] (dim_layout.h), so the kernels copy `inner`
// elements at a time (with memcpy, whatever the dtype) instead of computing an
// index per element.

namespace {

using detail::DimLayout;
using detail::layout_around;

// The first element of t, as bytes.
std::byte* bytes_of(const Tensor& t) {
  return t.impl()->storage()->data() +
         t.impl()->offset() * static_cast<int64_t>(dtype_size(t.dtype()));
}

// Copies `rows` consecutive slices of `inner` elements from src (starting at
// slice src_row) to dst (starting at slice dst_row); both contiguous, same dtype.
void copy_rows(const Tensor& src, int64_t src_row, const Tensor& dst, int64_t dst_row, int64_t rows,
               int64_t inner) {
  const int64_t size = static_cast<int64_t>(dtype_size(src.dtype()));
  const size_t nbytes = static_cast<size_t>(rows * inner * size);
  if (nbytes == 0) return;
  std::memcpy(bytes_of(dst) + dst_row * inner * size, bytes_of(src) + src_row * inner * size,
              nbytes);
}

// With src viewed as [outer, src_n, inner] and dst as [outer, dst_n, inner]:
//   dst[o, dst_start + k, :] = src[o, src_start + k, :]  for k < count.
void copy_slices(const Tensor& src, int64_t src_n, int64_t src_start, const Tensor& dst,
                 int64_t dst_n, int64_t dst_start, int64_t count, int64_t outer, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    copy_rows(src, o * src_n + src_start, dst, o * dst_n + dst_start, count, inner);
}

// The values of an int64 tensor, read as integers (a trip through double
// would round large ones).
std::vector<int64_t> int64_values(const Tensor& t) {
  const Tensor c = t.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// The backward of the ops that copy slices of x (of shape in_shape, seen as
// `b`) to the output, the output's slice i of each outer block from x's slice
// from[i]: dL/dx[slice j] = the sum of g's slices i with from[i] = j, added in
// order of i.
Tensor scatter_add_slices(const Tensor& g, const Shape& in_shape, const DimLayout& b,
                          const std::vector<int64_t>& from, const char* op) {
  const Tensor gc = g.contiguous();
  Tensor gx = zeros(in_shape, g.dtype());
  dispatch_floating(g.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* src = gc.data_ptr<T>();
    T* dst = gx.data_ptr<T>();
    for (int64_t o = 0; o < b.outer; ++o)
      for (size_t i = 0; i < from.size(); ++i, src += b.inner) {
        T* row = dst + (o * b.n + from[i]) * b.inner;
        for (int64_t k = 0; k < b.inner; ++k) row[k] += src[k];
      }
  });
  return gx;
}

// These ops need at least one dim to work along (as in PyTorch).
void check_has_dims(const Tensor& x, const char* op) {
  AG_CHECK(x.defined(), op, "undefined tensor");
  AG_CHECK(x.dim() > 0, op, "cannot be applied to a 0-d tensor (shape [])");
}

}  // namespace

// out = [t0, t1, ...] joined along dim  =>  dL/dti = the slice of g that ti filled
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  AG_CHECK(!tensors.empty(), "cat", "expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i)
    AG_CHECK(tensors[i].defined(), "cat", "tensor " + std::to_string(i) + " is undefined");
  const Tensor& first = tensors[0];
  AG_CHECK(first.dim() > 0, "cat", "tensor 0 is 0-d (shape []) and cannot be concatenated");
  const size_t d = static_cast<size_t>(normalize_dim(dim, first.shape(), "cat"));
  Shape shape = first.shape();
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dtype() != first.dtype())
      detail::throw_dtypes_differ(first, t, "cat", "tensor 0", "tensor " + std::to_string(i));
    bool fits = t.dim() == first.dim();
    for (size_t k = 0; fits && k < shape.size(); ++k)
      fits = k == d || t.shape()[k] == first.shape()[k];
    AG_CHECK(fits, "cat",
             "shapes must match except in dim " + std::to_string(d) + ": " +
                 shape_str(first.shape()) + " (tensor 0) vs " + shape_str(t.shape()) + " (tensor " +
                 std::to_string(i) + ")");
    AG_CHECK(t.shape()[d] <= kMaxNumel - shape[d], "cat",
             "too many elements: the joined dim " + std::to_string(d) + " passes 2^60");
    shape[d] += t.shape()[d];
  }
  shape_numel(shape, "cat");
  Tensor out = empty(shape, first.dtype());  // the inputs tile it
  const DimLayout b = layout_around(shape, d);
  std::vector<int64_t> starts;  // where each input begins along dim
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    starts.push_back(start);
    copy_slices(t.detach().contiguous(), t.shape()[d], 0, out, b.n, start, t.shape()[d], b.outer,
                b.inner);
    start += t.shape()[d];
  }
  if (!needs_grad(tensors)) return out;
  std::vector<int64_t> sizes(tensors.size());
  std::vector<bool> wants_grad(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    sizes[i] = tensors[i].shape()[d];
    wants_grad[i] = tensors[i].requires_grad();
  }
  record(out, "CatBackward", tensors, [d, starts, sizes, wants_grad](const Tensor& g) {
    // Made contiguous once, here: narrow() on a strided g (SumBackward's is a
    // broadcast view) would copy all of it per input, quadratic in the count.
    const Tensor gc = g.contiguous();
    grads result(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i)
      if (wants_grad[i]) result[i] = narrow(gc, static_cast<int64_t>(d), starts[i], sizes[i]);
    return result;
  });
  return out;
}

// stack = cat of the inputs, each given a new size-1 dim at `dim`
// (composed: its backward comes from cat and unsqueeze).
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  AG_CHECK(!tensors.empty(), "stack", "expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    AG_CHECK(tensors[i].defined(), "stack", "tensor " + std::to_string(i) + " is undefined");
    AG_CHECK(tensors[i].shape() == tensors[0].shape() && tensors[i].dtype() == tensors[0].dtype(),
             "stack",
             "expects tensors of equal shape and dtype, got " + shape_str(tensors[0].shape()) +
                 " " + dtype_name(tensors[0].dtype()) + " (tensor 0) vs " +
                 shape_str(tensors[i].shape()) + " " + dtype_name(tensors[i].dtype()) +
                 " (tensor " + std::to_string(i) + ")");
  }
  const int64_t n = tensors[0].dim();
  AG_CHECK(dim >= -(n + 1) && dim <= n, "stack",
           "dim " + std::to_string(dim) + " out of range for stacking tensors of shape " +
               shape_str(tensors[0].shape()) + " (expected [" + std::to_string(-(n + 1)) + ", " +
               std::to_string(n) + "])");
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (const Tensor& t : tensors) unsqueezed.push_back(unsqueeze(t, dim));
  return cat(unsqueezed, dim < 0 ? dim + n + 1 : dim);
}

// out = x[..., start : start + length, ...] along dim
//   =>  dL/dx = g placed at [start, start + length) along dim, zeros elsewhere
// The backward returns g for the slice only and the engine places it
// (record_slice): T narrows of one x (a GRU's steps) add T slices into one
// dL/dx instead of summing T zero-filled tensors of x's size.
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  check_has_dims(x, "narrow");
  const size_t d = static_cast<size_t>(normalize_dim(dim, x.shape(), "narrow"));
  const int64_t n = x.shape()[d];
  AG_CHECK(start >= -n && start <= n, "narrow",
           "start " + std::to_string(start) + " out of range for dim " + std::to_string(d) +
               " of size " + std::to_string(n) + " (shape " + shape_str(x.shape()) + ")");
  if (start < 0) start += n;
  AG_CHECK(length >= 0 && length <= n - start, "narrow",
           "start " + std::to_string(start) + " + length " + std::to_string(length) +
               " does not fit in dim " + std::to_string(d) + " of size " + std::to_string(n) +
               " (shape " + shape_str(x.shape()) + ")");
  Shape shape = x.shape();
  shape[d] = length;
  Tensor out = empty(shape, x.dtype());  // copy_slices fills it
  const DimLayout b = layout_around(x.shape(), d);
  copy_slices(x.detach().contiguous(), n, start, out, length, 0, length, b.outer, b.inner);
  if (needs_grad(x))
    record_slice(out, "NarrowBackward", x, {static_cast<int64_t>(d), start, length},
                 [](const Tensor& g) { return grads{g}; });  // dL/dx[slice] = g
  return out;
}

namespace {

// out = x with slice k along dim repeated counts[k] times (in order)
//   =>  dL/dx[k] = sum of g over the counts[k] slices that copied x[k]
Tensor repeat_slices(const Tensor& x, const std::vector<int64_t>& counts, size_t d) {
  const DimLayout b = layout_around(x.shape(), d);
  int64_t total = 0;
  for (int64_t c : counts) {
    AG_CHECK(c <= std::numeric_limits<int64_t>::max() - total, "repeat_interleave",
             "repeats overflow the output size for input shape " + shape_str(x.shape()));
    total += c;
  }
  Shape shape = x.shape();
  shape[d] = total;
  shape_numel(shape, "repeat_interleave");
  Tensor out = empty(shape, x.dtype());  // every output slice is copied below
  const Tensor src = x.detach().contiguous();
  int64_t next = 0;  // output slice being written, counted over all outer blocks
  for (int64_t o = 0; o < b.outer; ++o)
    for (int64_t k = 0; k < b.n; ++k)
      for (int64_t r = 0; r < counts[static_cast<size_t>(k)]; ++r)
        copy_rows(src, o * b.n + k, out, next++, 1, b.inner);
  if (needs_grad(x)) {
    // Output slice i of a block copied input slice from[i]: k, counts[k] times.
    std::vector<int64_t> from;
    from.reserve(static_cast<size_t>(total));
    for (int64_t k = 0; k < b.n; ++k) from.insert(from.end(), counts[static_cast<size_t>(k)], k);
    record(out, "RepeatInterleaveBackward", {x},
           [in_shape = x.shape(), b, from = std::move(from)](const Tensor& g) {
             return grads{scatter_add_slices(g, in_shape, b, from, "repeat_interleave")};
           });
  }
  return out;
}

}  // namespace

Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim) {
  check_has_dims(x, "repeat_interleave");
  const size_t d = static_cast<size_t>(normalize_dim(dim, x.shape(), "repeat_interleave"));
  AG_CHECK(repeats >= 0, "repeat_interleave",
           "repeats must be >= 0, got " + std::to_string(repeats) + " for shape " +
               shape_str(x.shape()));
  return repeat_slices(x, std::vector<int64_t>(static_cast<size_t>(x.shape()[d]), repeats), d);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, int64_t dim) {
  check_has_dims(x, "repeat_interleave");
  AG_CHECK(repeats.defined(), "repeat_interleave", "undefined repeats tensor");
  const size_t d = static_cast<size_t>(normalize_dim(dim, x.shape(), "repeat_interleave"));
  AG_CHECK(repeats.dtype() == kInt64 && repeats.dim() <= 1, "repeat_interleave",
           std::string("repeats must be a 0-d or 1-D int64 tensor, got ") +
               dtype_name(repeats.dtype()) + " " + shape_str(repeats.shape()));
  const int64_t n = x.shape()[d];
  std::vector<int64_t> counts = int64_values(repeats);
  // A single count applies to every slice, as in PyTorch.
  if (counts.size() == 1) counts.assign(static_cast<size_t>(n), counts[0]);
  AG_CHECK(static_cast<int64_t>(counts.size()) == n, "repeat_interleave",
           "repeats of shape " + shape_str(repeats.shape()) +
               " must have one count per slice of dim " + std::to_string(d) + " of input shape " +
               shape_str(x.shape()));
  for (int64_t c : counts)
    AG_CHECK(
        c >= 0, "repeat_interleave",
        "repeats must be >= 0, got " + std::to_string(c) + " for shape " + shape_str(x.shape()));
  return repeat_slices(x, counts, d);
}

// out[..., i, ...] = x[..., index[i], ...]
//   =>  dL/dx[..., j, ...] = sum of g[..., i, ...] over the i with index[i] = j
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_has_dims(x, "index_select");
  AG_CHECK(index.defined(), "index_select", "undefined index tensor");
  const size_t d = static_cast<size_t>(normalize_dim(dim, x.shape(), "index_select"));
  AG_CHECK(index.dtype() == kInt64 && index.dim() <= 1, "index_select",
           std::string("index must be a 0-d or 1-D int64 tensor, got ") +
               dtype_name(index.dtype()) + " " + shape_str(index.shape()));
  const DimLayout b = layout_around(x.shape(), d);
  const std::vector<int64_t> idx = int64_values(index);
  for (int64_t i : idx) {
    AG_CHECK(i >= 0 && i < b.n, "index_select",
             "index " + std::to_string(i) + " out of range for dim " + std::to_string(d) +
                 " of size " + std::to_string(b.n) + " (shape " + shape_str(x.shape()) + ")");
  }
  const int64_t m = static_cast<int64_t>(idx.size());
  Shape shape = x.shape();
  shape[d] = m;
  Tensor out = empty(shape, x.dtype());  // one row copied per index
  const Tensor src = x.detach().contiguous();
  for (int64_t o = 0; o < b.outer; ++o)
    for (int64_t i = 0; i < m; ++i)
      copy_rows(src, o * b.n + idx[static_cast<size_t>(i)], out, o * m + i, 1, b.inner);
  if (needs_grad(x))
    record(out, "IndexSelectBackward", {x}, [in_shape = x.shape(), b, idx](const Tensor& g) {
      return grads{scatter_add_slices(g, in_shape, b, idx, "index_select")};
    });
  return out;
}

}  // namespace ag
