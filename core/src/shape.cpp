// Shape arithmetic: element counts (the one checked place), strides, dims,
// broadcasting, and how shapes are spelled in messages.
#include <algorithm>
#include <string>

#include "attograd/tensor.h"

namespace ag {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t shape_numel(const Shape& shape, const char* op) {
  // `bound` multiplies the dims with 0 counted as 1, as the strides do; it
  // stays <= kMaxNumel, so neither product can overflow.
  int64_t numel = 1, bound = 1;
  for (int64_t d : shape) {
    AG_CHECK(d >= 0, op, "negative dimension in shape " + shape_str(shape));
    AG_CHECK(d <= kMaxNumel / bound, op,
             "too many elements in shape " + shape_str(shape) + " (at most 2^60)");
    bound *= std::max<int64_t>(d, 1);
    numel *= d;
  }
  return numel;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
  return strides;
}

int64_t normalize_dim(int64_t dim, const Shape& shape, const char* op) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t lo = nd == 0 ? -1 : -nd, hi = nd == 0 ? 0 : nd - 1;  // 0-d accepts dim 0/-1
  AG_CHECK(dim >= lo && dim <= hi, op,
           "dim " + std::to_string(dim) + " out of range for a " + std::to_string(nd) +
               "-D tensor of shape " + shape_str(shape));
  return dim < 0 ? dim + std::max<int64_t>(nd, 1) : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // Align from the right: missing leading dims count as 1.
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    AG_CHECK(da == db || da == 1 || db == 1, op,
             "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  shape_numel(out, op);  // [2^40, 1] and [1, 2^40] broadcast to too many elements
  return out;
}

bool broadcasts_to(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  const size_t skip = target.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && shape[d] != target[skip + d]) return false;
  return true;
}

}  // namespace ag
