// Tensor handle, storage and the creation functions. Next to it: dtype.cpp
// (dtype names, error messages), shape.cpp, random.cpp (the generator and
// the random creation functions) and print.cpp. Ops (the differentiable
// members contiguous, clone and to among them) live in ops_*.cpp; the engine
// in autograd.cpp.
#include "attograd/tensor.h"

#include <algorithm>

#include "elementwise.h"
#include "tensor_impl_access.h"

namespace ag {

// ---- storage ----------------------------------------------------------------

Storage::Storage(size_t nbytes, const char* op, Init init)
    : block_(detail::allocate(nbytes, init, op)), nbytes_(nbytes) {}

Storage::~Storage() {
  detail::deallocate(block_);
}

// ---- Tensor -------------------------------------------------------------------

void Tensor::throw_undefined() {
  throw Error("tensor: operation on an undefined tensor (Tensor{})");
}

// A tensor's shape was checked when it was made (shape_numel: no negative
// dims, no overflow), so counting its elements is a plain product here, not
// shape_numel's checked one (a division per dim; 6% of the d2l toy call).
int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape()) n *= d;
  return n;
}

int64_t Tensor::size(int64_t d) const {
  // normalize_dim lets dim 0 name a 0-d tensor itself (for sum, softmax, ...),
  // but there is no size to return for it.
  AG_CHECK(dim() > 0, "size",
           "dim " + std::to_string(d) + " asked of a 0-d tensor (shape []), which has no dims");
  return shape()[static_cast<size_t>(normalize_dim(d, shape(), "size"))];
}

uint64_t Tensor::version() const {
  return checked().storage()->version();
}

bool Tensor::is_contiguous() const {
  const TensorImpl& t = checked();
  // With no elements the strides address nothing: any layout is contiguous.
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(t.shape().size()) - 1; d >= 0; --d) {
    if (t.shape()[d] != 1 && t.strides()[d] != expected) return false;
    expected *= t.shape()[d];
  }
  return true;
}

template <typename T>
T* Tensor::data_ptr() const {
  const TensorImpl& t = checked();
  AG_CHECK(t.dtype() == dtype_of<T>(), "data_ptr",
           std::string("tensor is ") + dtype_name(t.dtype()) + ", asked for " +
               dtype_name(dtype_of<T>()));
  return reinterpret_cast<T*>(t.storage()->data()) + t.offset();
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
  AG_CHECK(!requires_grad || is_floating(t.dtype()), "requires_grad_",
           std::string("only floating-point tensors can require gradients, got ") +
               dtype_name(t.dtype()));
  AG_CHECK(requires_grad || !t.grad_fn(), "requires_grad_",
           "cannot turn off requires_grad of a non-leaf tensor (use detach())");
  t.requires_grad_ = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const {
  return checked().requires_grad();
}

Tensor Tensor::grad() const {
  const TensorImpl& t = checked();
  return t.grad_ ? *t.grad_ : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  TensorImpl& t = const_cast<TensorImpl&>(checked());
  if (!grad.defined()) {
    t.grad_.reset();
    return;
  }
  AG_CHECK(grad.shape() == t.shape() && grad.dtype() == t.dtype(), "set_grad",
           "gradient of shape " + shape_str(grad.shape()) + " (" + dtype_name(grad.dtype()) +
               ") does not match tensor of shape " + shape_str(t.shape()) + " (" +
               dtype_name(t.dtype()) + ")");
  t.grad_ = std::make_shared<Tensor>(grad);
}

void Tensor::zero_grad() {
  set_grad(Tensor());
}

Tensor Tensor::detach() const {
  const TensorImpl& t = checked();
  Tensor detached =
      detail::TensorImplAccess::make(t.storage(), t.offset(), t.shape(), t.strides(), t.dtype());
  detached.impl_->name_ = t.name();
  return detached;
}

bool Tensor::is_leaf() const {
  return checked().grad_fn() == nullptr;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  return checked().grad_fn();
}

Tensor& Tensor::set_name(std::string name) {
  const_cast<TensorImpl&>(checked()).name_ = std::move(name);
  return *this;
}

const std::string& Tensor::name() const {
  return checked().name();
}

// ---- creation -------------------------------------------------------------------

// Every creation function goes through make_tensor (and make_filled, in
// elementwise.h, or make_full below), which report errors (a bad shape, out of
// memory, a value the dtype cannot hold) under the name of the function the
// user called.
Tensor detail::make_tensor(Shape shape, DType dtype, const char* op, Init init) {
  // Bytes fit in size_t: at most 2^60 elements of at most 8 bytes.
  const size_t nbytes = static_cast<size_t>(shape_numel(shape, op)) * dtype_size(dtype);
  Shape strides = contiguous_strides(shape);
  return TensorImplAccess::make(std::make_shared<Storage>(nbytes, op, init), 0, std::move(shape),
                                std::move(strides), dtype);
}

namespace {

Tensor make_full(Shape shape, double value, DType dtype, const char* op) {
  const Tensor t = detail::make_tensor(std::move(shape), dtype, op, Init::None);
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(t.data_ptr<T>(), t.numel(), detail::convert<T>(value, op));
  });
  return t;
}

}  // namespace

Tensor empty(Shape shape, DType dtype) {
  return detail::make_tensor(std::move(shape), dtype, "empty", Init::None);
}

Tensor full(Shape shape, double value, DType dtype) {
  return make_full(std::move(shape), value, dtype, "full");
}

Tensor zeros(Shape shape, DType dtype) {
  return detail::make_tensor(std::move(shape), dtype, "zeros");
}
Tensor ones(Shape shape, DType dtype) {
  return make_full(std::move(shape), 1.0, dtype, "ones");
}
Tensor zeros_like(const Tensor& t) {
  return detail::make_tensor(t.shape(), t.dtype(), "zeros_like");
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
  return detail::make_filled(std::move(shape), dtype, "tensor",
                             [&](int64_t i) { return values[static_cast<size_t>(i)]; });
}

Tensor arange(int64_t n, DType dtype) {
  AG_CHECK(n >= 0, "arange", "n must be >= 0, got " + std::to_string(n));
  return detail::make_filled({n}, dtype, "arange",
                             [](int64_t i) { return static_cast<double>(i); });
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

}  // namespace ag
