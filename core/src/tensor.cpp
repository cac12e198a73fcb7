// Tensor handle, storage, creation functions, the random generator and
// PyTorch-style printing. Ops (the differentiable members contiguous, clone
// and to among them) live in ops_*.cpp; the engine in autograd.cpp.
#include "attograd/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <sstream>

#include "elementwise.h"

namespace ag {

// ---- dtypes and shapes ---------------------------------------------------------

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int64:
      return "int64";
    case DType::Bool:
      return "bool";
  }
  return "unknown";
}

size_t dtype_size(DType dtype) {
  return dispatch_all(dtype, [](auto tag) { return sizeof(tag); });
}

void detail::throw_error(std::string_view op, const std::string& message) {
  throw Error(std::string(op) + ": " + message);
}

void detail::throw_not_floating(DType dtype, const char* op, const char* what,
                                const std::vector<int64_t>* shape) {
  std::string message = what;
  message += " must be float32 or float64, got ";
  message += dtype_name(dtype);
  if (shape) {
    message += ' ';
    message += shape_str(*shape);
  }
  throw_error(op, message);
}

void detail::throw_dtypes_differ(const Tensor& a, const Tensor& b, const char* op,
                                 const std::string& label_a, const std::string& label_b) {
  std::string message = "dtypes differ: ";
  const auto describe = [&](const Tensor& t, const std::string& label) {
    message += dtype_name(t.dtype());
    message += ' ';
    message += shape_str(t.shape());
    if (!label.empty()) {
      message += " (";
      message += label;
      message += ')';
    }
  };
  describe(a, label_a);
  message += " vs ";
  describe(b, label_b);
  throw_error(op, message);
}

std::string number_str(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

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

// ---- storage ----------------------------------------------------------------

Storage::Storage(size_t nbytes, const char* op, Init init)
    : block_(detail::allocate(nbytes, init, op)), nbytes_(nbytes) {}

Storage::~Storage() {
  detail::deallocate(block_);
}

// ---- Tensor -------------------------------------------------------------------

const TensorImpl& Tensor::checked() const {
  if (!impl_) throw Error("tensor: operation on an undefined tensor (Tensor{})");
  return *impl_;
}

const Shape& Tensor::shape() const {
  return checked().shape;
}
const Shape& Tensor::strides() const {
  return checked().strides;
}
int64_t Tensor::numel() const {
  return shape_numel(shape());
}
DType Tensor::dtype() const {
  return checked().dtype;
}

int64_t Tensor::size(int64_t d) const {
  // normalize_dim lets dim 0 name a 0-d tensor itself (for sum, softmax, ...),
  // but there is no size to return for it.
  AG_CHECK(dim() > 0, "size",
           "dim " + std::to_string(d) + " asked of a 0-d tensor (shape []), which has no dims");
  return shape()[static_cast<size_t>(normalize_dim(d, shape(), "size"))];
}

uint64_t Tensor::version() const {
  return checked().storage->version();
}

bool Tensor::is_contiguous() const {
  const TensorImpl& t = checked();
  // With no elements the strides address nothing: any layout is contiguous.
  if (shape_numel(t.shape) == 0) return true;
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

template <typename T>
T* Tensor::data_ptr() const {
  const TensorImpl& t = checked();
  AG_CHECK(
      t.dtype == dtype_of<T>(), "data_ptr",
      std::string("tensor is ") + dtype_name(t.dtype) + ", asked for " + dtype_name(dtype_of<T>()));
  return reinterpret_cast<T*>(t.storage->data()) + t.offset;
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;

std::vector<double> Tensor::to_vector() const {
  const Tensor c = is_contiguous() ? *this : detail::contiguous_copy(*this);
  std::vector<double> values(static_cast<size_t>(c.numel()));
  dispatch_all(dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = c.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(p[i]);
  });
  return values;
}

double Tensor::item() const {
  AG_CHECK(numel() == 1, "item",
           "only a one-element tensor converts to a number, got shape " + shape_str(shape()));
  return to_vector()[0];
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  TensorImpl& t = const_cast<TensorImpl&>(checked());
  AG_CHECK(
      !requires_grad || is_floating(t.dtype), "requires_grad_",
      std::string("only floating-point tensors can require gradients, got ") + dtype_name(t.dtype));
  AG_CHECK(requires_grad || !t.grad_fn, "requires_grad_",
           "cannot turn off requires_grad of a non-leaf tensor (use detach())");
  t.requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const {
  return checked().requires_grad;
}

Tensor Tensor::grad() const {
  const TensorImpl& t = checked();
  return t.grad ? *t.grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  TensorImpl& t = const_cast<TensorImpl&>(checked());
  if (!grad.defined()) {
    t.grad.reset();
    return;
  }
  AG_CHECK(grad.shape() == t.shape && grad.dtype() == t.dtype, "set_grad",
           "gradient of shape " + shape_str(grad.shape()) + " (" + dtype_name(grad.dtype()) +
               ") does not match tensor of shape " + shape_str(t.shape) + " (" +
               dtype_name(t.dtype) + ")");
  t.grad = std::make_shared<Tensor>(grad);
}

void Tensor::zero_grad() {
  set_grad(Tensor());
}

Tensor Tensor::detach() const {
  const TensorImpl& t = checked();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.storage;
  impl->offset = t.offset;
  impl->shape = t.shape;
  impl->strides = t.strides;
  impl->dtype = t.dtype;
  impl->name = t.name;
  return Tensor(impl);
}

bool Tensor::is_leaf() const {
  return checked().grad_fn == nullptr;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  return checked().grad_fn;
}

Tensor& Tensor::set_name(std::string name) {
  const_cast<TensorImpl&>(checked()).name = std::move(name);
  return *this;
}

const std::string& Tensor::name() const {
  return checked().name;
}

// ---- creation -------------------------------------------------------------------

// Every creation function goes through these helpers, which report errors (a bad
// shape, out of memory, a value the dtype cannot hold) under the name of the
// function the user called.
namespace {

// Init::None when the caller writes every element.
Tensor make_tensor(Shape shape, DType dtype, const char* op, Init init = Init::Zero) {
  // Bytes fit in size_t: at most 2^60 elements of at most 8 bytes.
  const size_t nbytes = static_cast<size_t>(shape_numel(shape, op)) * dtype_size(dtype);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(nbytes, op, init);
  impl->strides = contiguous_strides(shape);
  impl->shape = std::move(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

// A tensor whose element i is convert(value_at(i)), written in place.
template <typename ValueAt>
Tensor make_filled(Shape shape, DType dtype, const char* op, ValueAt value_at) {
  Tensor t = make_tensor(std::move(shape), dtype, op, Init::None);
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data_ptr<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = detail::convert<T>(value_at(i), op);
  });
  return t;
}

Tensor make_full(Shape shape, double value, DType dtype, const char* op) {
  const Tensor t = make_tensor(std::move(shape), dtype, op, Init::None);
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(t.data_ptr<T>(), t.numel(), detail::convert<T>(value, op));
  });
  return t;
}

}  // namespace

Tensor empty(Shape shape, DType dtype) {
  return make_tensor(std::move(shape), dtype, "empty");
}

Tensor detail::empty_uninit(Shape shape, DType dtype) {
  return make_tensor(std::move(shape), dtype, "empty", Init::None);
}

Tensor full(Shape shape, double value, DType dtype) {
  return make_full(std::move(shape), value, dtype, "full");
}

Tensor zeros(Shape shape, DType dtype) {
  return make_tensor(std::move(shape), dtype, "zeros");
}
Tensor ones(Shape shape, DType dtype) {
  return make_full(std::move(shape), 1.0, dtype, "ones");
}
Tensor zeros_like(const Tensor& t) {
  return make_tensor(t.shape(), t.dtype(), "zeros_like");
}
Tensor ones_like(const Tensor& t) {
  return make_full(t.shape(), 1.0, t.dtype(), "ones_like");
}
Tensor scalar_tensor(double value, DType dtype) {
  return make_full({}, value, dtype, "scalar_tensor");
}

Tensor detail::scalar_tensor(double value, DType dtype, const char* op) {
  return make_full({}, value, dtype, op);
}

Tensor tensor(std::vector<double> values, Shape shape, DType dtype) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  AG_CHECK(shape_numel(shape, "tensor") == static_cast<int64_t>(values.size()), "tensor",
           std::to_string(values.size()) + " values do not fill shape " + shape_str(shape));
  return make_filled(std::move(shape), dtype, "tensor",
                     [&](int64_t i) { return values[static_cast<size_t>(i)]; });
}

Tensor arange(int64_t n, DType dtype) {
  AG_CHECK(n >= 0, "arange", "n must be >= 0, got " + std::to_string(n));
  return make_filled({n}, dtype, "arange", [](int64_t i) { return static_cast<double>(i); });
}

// ---- random -------------------------------------------------------------------------
// One global 64-bit Mersenne Twister. Our own uniform/normal transforms (not
// std::*_distribution, whose output differs between standard libraries) keep
// every draw identical across platforms for a given seed.

namespace {
std::mutex rng_mutex;
std::mt19937_64& rng() {
  static std::mt19937_64 generator(0x5eed);
  return generator;
}
double next_uniform_locked() {
  return static_cast<double>(rng()() >> 11) * 0x1.0p-53;
}
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(rng_mutex);
  rng().seed(seed);
}

uint64_t random_u64() {
  std::lock_guard<std::mutex> lock(rng_mutex);
  return rng()();
}

namespace {
Tensor uniform_op(Shape shape, double low, double high, DType dtype, const char* op) {
  check_floating(dtype, op, "dtype");
  AG_CHECK(low <= high, op, "low must be <= high");
  // (make_filled allocates before the first draw: a bad shape draws nothing)
  std::lock_guard<std::mutex> lock(rng_mutex);
  return make_filled(std::move(shape), dtype, op,
                     [&](int64_t) { return low + (high - low) * next_uniform_locked(); });
}
}  // namespace

Tensor uniform(Shape shape, double low, double high, DType dtype) {
  return uniform_op(std::move(shape), low, high, dtype, "uniform");
}

Tensor rand(Shape shape, DType dtype) {
  return uniform_op(std::move(shape), 0.0, 1.0, dtype, "rand");
}

Tensor randn(Shape shape, DType dtype) {
  check_floating(dtype, "randn", "dtype");
  const int64_t n = shape_numel(shape, "randn");
  std::lock_guard<std::mutex> lock(rng_mutex);
  // Box-Muller: two uniforms -> two independent standard normals (the second
  // one is kept for the next odd element).
  double second = 0;
  return make_filled(std::move(shape), dtype, "randn", [&](int64_t i) {
    if (i % 2 == 1) return second;
    const double u1 = 1.0 - next_uniform_locked();  // (0, 1]: log is finite
    const double u2 = next_uniform_locked();
    const double r = std::sqrt(-2.0 * std::log(u1));
    if (i + 1 < n) second = r * std::sin(2.0 * M_PI * u2);
    return r * std::cos(2.0 * M_PI * u2);
  });
}

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
