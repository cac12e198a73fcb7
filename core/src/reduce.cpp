// sum_dims (reduce.h): the walk that sums a tensor over any dims, the
// reference every reduction and the autograd's sum_to_shape use; float32
// rows and columns take vector_math's lane sums unless reference mode is on.
#include "reduce.h"

#include <algorithm>

#include "attograd/reference_mode.h"
#include "elementwise.h"
#include "fast/vector_math.h"

namespace ag::detail {

Shape reduced_shape(const Shape& shape, const std::vector<bool>& reduce, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduce[d])
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

namespace {

// The common case: x contiguous and the reduced dims its last ones (sum(),
// mean over the last dim, a gradient summed to a scalar), so every output is
// one contiguous row of x. float32 rows are summed in double lanes
// (vector_math's sum_f32): the general walk below adds one element per
// double-addition latency (docs/performance.md: what that cost).
// float64, the gradcheck path, keeps the walk.
bool sum_rows(const Tensor& x, const std::vector<bool>& reduce, Tensor& out) {
  const size_t first =
      static_cast<size_t>(std::find(reduce.begin(), reduce.end(), true) - reduce.begin());
  if (x.dtype() != kFloat32 || !x.is_contiguous() || reference_mode() ||
      std::find(reduce.begin() + static_cast<std::ptrdiff_t>(first), reduce.end(), false) !=
          reduce.end())
    return false;
  int64_t row = 1;
  for (size_t d = first; d < reduce.size(); ++d) row *= x.size(static_cast<int64_t>(d));
  const int64_t rows = out.numel();
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) o[r] = static_cast<float>(sum_f32(in + r * row, row));
  return true;
}

// The other common case: x contiguous and the reduced dims its first ones
// (a bias's gradient: the rows of g [..., out] summed into [out]). Each
// output is a column of x, added in double in row order, as the general
// walk below adds it (the same bits), but a row of columns at a time in
// SIMD doubles (vector_math's column_sums_f32) instead of one element per
// call through the walk. float32 only, as sum_rows.
bool sum_columns(const Tensor& x, const std::vector<bool>& reduce, Tensor& out) {
  const size_t kept =
      static_cast<size_t>(std::find(reduce.begin(), reduce.end(), false) - reduce.begin());
  if (x.dtype() != kFloat32 || !x.is_contiguous() || kept == 0 || reference_mode() ||
      std::find(reduce.begin() + static_cast<std::ptrdiff_t>(kept), reduce.end(), true) !=
          reduce.end())
    return false;
  const int64_t cols = out.numel(), rows = cols == 0 ? 0 : x.numel() / cols;
  std::vector<double> acc(static_cast<size_t>(cols), 0.0);
  column_sums_f32(x.data_ptr<float>(), rows, cols, acc.data());
  float* o = out.data_ptr<float>();
  for (int64_t j = 0; j < cols; ++j) o[j] = static_cast<float>(acc[static_cast<size_t>(j)]);
  return true;
}

}  // namespace

Tensor sum_dims(const Tensor& x, const std::vector<bool>& reduce, const Shape& out_shape) {
  const Shape kept = reduced_shape(x.shape(), reduce, /*keepdim=*/true);
  // Walk x; the output stride of every reduced dim is 0 so its elements pile up.
  Shape out_strides = contiguous_strides(kept);
  for (size_t d = 0; d < reduce.size(); ++d)
    if (reduce[d]) out_strides[d] = 0;
  const DType out_dtype = is_floating(x.dtype()) ? x.dtype() : kInt64;
  Tensor out = zeros(out_shape, out_dtype);
  if (sum_rows(x, reduce, out) || sum_columns(x, reduce, out)) return out;
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    std::vector<Acc> acc(static_cast<size_t>(out.numel()), Acc(0));
    const T* in = x.data_ptr<T>();
    for_each_offset<2>(x.shape(), {x.strides(), out_strides},
                       [&](const std::array<int64_t, 2>& off) {
                         Acc& a = acc[static_cast<size_t>(off[1])];
                         a = wrapping_add(a, static_cast<Acc>(in[off[0]]));
                       });
    dispatch_all(out_dtype, [&](auto out_tag) {
      using O = decltype(out_tag);
      O* o = out.data_ptr<O>();
      for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<O>(acc[i]);
    });
  });
  return out;
}

}  // namespace ag::detail
