// Printing tensors as PyTorch does (operator<<, to_string).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "attograd/tensor.h"
#include "elementwise.h"

namespace ag {

// ---- printing ---------------------------------------------------------------------
// Mirrors PyTorch's repr (torch/_tensor_str.py) with its default print options:
//  * floats whose nonzero finite values are all integral print as "2."; others
//    with 4 decimals; scientific notation when those values span more than a
//    factor of 1000, exceed 1e8, or (non-integral only) go below 1e-4;
//  * every element is padded to one width, so columns line up;
//  * rows longer than 80 characters wrap;
//  * more than 1000 elements are summarised with "..." keeping 3 items at each
//    edge of every dim, and only the items shown decide format and width.
// One deliberate difference: the dtype suffix reads "dtype=float64", not
// "dtype=torch.float64".

namespace {

constexpr int64_t kSummarizeThreshold = 1000, kEdgeItems = 3;
constexpr size_t kLineWidth = 80;

// Decides, from the elements that will be shown, how every element prints.
class Formatter {
 public:
  // `c` is contiguous; `shown` are the flat indices of the printed elements.
  Formatter(const Tensor& c, const std::vector<int64_t>& shown) : c_(c) {
    if (!is_floating(c.dtype())) {
      for (int64_t i : shown) width_ = std::max(width_, unpadded(i).size());
      return;
    }
    double min_abs = INFINITY, max_abs = 0;
    std::vector<int64_t> nonzero_finite;
    for (int64_t i : shown) {
      const double v = value(i);
      if (!std::isfinite(v) || v == 0) continue;
      nonzero_finite.push_back(i);
      if (v != std::ceil(v)) int_mode_ = false;
      min_abs = std::min(min_abs, std::abs(v));
      max_abs = std::max(max_abs, std::abs(v));
    }
    if (nonzero_finite.empty()) return;  // zeros, nan, inf: "0.", "nan", "inf"
    sci_mode_ = max_abs / min_abs > 1000.0 || max_abs > 1e8 || (!int_mode_ && min_abs < 1e-4);
    // The width comes from the nonzero finite values only (as in PyTorch).
    for (int64_t i : nonzero_finite) width_ = std::max(width_, unpadded(i).size());
  }

  size_t width() const { return width_; }

  // Element i, right-aligned to width().
  std::string operator()(int64_t i) const {
    const std::string s = unpadded(i);
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }

 private:
  double value(int64_t i) const {
    return dispatch_all(
        c_.dtype(), [&](auto tag) { return static_cast<double>(c_.data_ptr<decltype(tag)>()[i]); });
  }

  std::string unpadded(int64_t i) const {
    if (c_.dtype() == kBool) return c_.data_ptr<bool>()[i] ? "True" : "False";
    if (c_.dtype() == kInt64) return std::to_string(c_.data_ptr<int64_t>()[i]);
    const double v = value(i);
    if (std::isnan(v)) return "nan";  // printf would say "-nan" for some NaNs
    char buffer[64];
    if (sci_mode_) {
      std::snprintf(buffer, sizeof buffer, "%.4e", v);
    } else if (int_mode_) {
      std::snprintf(buffer, sizeof buffer, std::isinf(v) ? "%.0f" : "%.0f.", v);
    } else {
      std::snprintf(buffer, sizeof buffer, "%.4f", v);
    }
    return buffer;
  }

  Tensor c_;
  bool int_mode_ = true, sci_mode_ = false;
  size_t width_ = 1;
};

// Positions printed along a dim of size n: all, or 3 at each edge.
std::vector<int64_t> shown_positions(int64_t n, bool summarize) {
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    positions.push_back(i);
  }
  return positions;
}

// Flat indices of the printed elements of the sub-tensor at `offset` from `dim` on.
void collect_shown(const Shape& shape, size_t dim, int64_t offset, bool summarize,
                   std::vector<int64_t>& out) {
  if (dim == shape.size()) {
    out.push_back(offset);
    return;
  }
  const int64_t inner = shape_numel(Shape(shape.begin() + static_cast<long>(dim) + 1, shape.end()));
  for (int64_t i : shown_positions(shape[dim], summarize))
    collect_shown(shape, dim + 1, offset + i * inner, summarize, out);
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? separator : "") + items[i];
  return s;
}

// The sub-tensor at `offset` from `dim` on; `indent` is its column on screen.
std::string tensor_str(const Formatter& f, const Shape& shape, size_t dim, int64_t offset,
                       size_t indent, bool summarize) {
  if (dim == shape.size()) return f(offset);  // a 0-d tensor
  const int64_t n = shape[dim];
  const bool cut = summarize && n > 2 * kEdgeItems;
  const int64_t inner = shape_numel(Shape(shape.begin() + static_cast<long>(dim) + 1, shape.end()));
  std::vector<std::string> items;
  for (int64_t i : shown_positions(n, summarize)) {
    if (cut && i == n - kEdgeItems) items.push_back(dim + 1 == shape.size() ? " ..." : "...");
    items.push_back(dim + 1 == shape.size()
                        ? f(offset + i)
                        : tensor_str(f, shape, dim + 1, offset + i * inner, indent + 1, summarize));
  }
  if (dim + 1 < shape.size()) {
    // Sub-tensors go one per line, with a blank line per level beyond matrices.
    const std::string separator =
        "," + std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
    return "[" + join(items, separator) + "]";
  }
  // A row: as many ", "-separated elements per line as fit in kLineWidth.
  const size_t per_line =
      std::max<size_t>(1, (kLineWidth - std::min(indent, kLineWidth)) / (f.width() + 2));
  std::vector<std::string> lines;
  for (size_t i = 0; i < items.size(); i += per_line)
    lines.push_back(join({items.begin() + static_cast<long>(i),
                          items.begin() + static_cast<long>(std::min(items.size(), i + per_line))},
                         ", "));
  return "[" + join(lines, ",\n" + std::string(indent + 1, ' ')) + "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "None";
  const std::string prefix = "tensor(";
  const Tensor c = t.is_contiguous() ? t : detail::contiguous_copy(t);
  std::vector<std::string> suffixes;
  std::string body;
  if (c.numel() == 0) {
    // No values to tell the shape or dtype by: spell them out (size as a tuple, like PyTorch).
    if (c.dim() != 1) {
      std::string size = "(";
      for (size_t d = 0; d < c.shape().size(); ++d)
        size += (d ? ", " : "") + std::to_string(c.shape()[d]);
      suffixes.push_back("size=" + size + ")");
    }
    if (c.dtype() != kFloat32) suffixes.push_back(std::string("dtype=") + dtype_name(c.dtype()));
    body = "[]";
  } else {
    if (c.dtype() == kFloat64) suffixes.push_back("dtype=float64");
    const bool summarize = c.numel() > kSummarizeThreshold;
    std::vector<int64_t> shown;
    collect_shown(c.shape(), 0, 0, summarize, shown);
    body = tensor_str(Formatter(c, shown), c.shape(), 0, 0, prefix.size(), summarize);
  }
  if (!t.is_leaf()) {
    suffixes.push_back("grad_fn=<" + t.grad_fn_name() + ">");
  } else if (t.requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  // Suffixes follow on the last line, or on a new one when that would pass kLineWidth.
  std::string out = prefix + body;
  const size_t newline = out.rfind('\n');
  size_t line_length = newline == std::string::npos ? out.size() + 2 : out.size() - newline + 1;
  for (const std::string& suffix : suffixes) {
    if (line_length + suffix.size() + 2 > kLineWidth) {
      out += ",\n" + std::string(prefix.size(), ' ') + suffix;
      line_length = prefix.size() + suffix.size();
    } else {
      out += ", " + suffix;
      line_length += suffix.size() + 2;
    }
  }
  return os << out << ")";
}

std::string to_string(const Tensor& t) {
  std::ostringstream s;
  s << t;
  return s.str();
}

}  // namespace ag
