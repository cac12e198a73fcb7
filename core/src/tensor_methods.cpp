// The member forms of the ops (declared in tensor.h): each forwards to the
// free function of ops.h, so both give the same tensor and the same node.
// Inside a member, an unqualified exp(...) would name the member itself:
// every call here is qualified with ag::.
#include "attograd/ops.h"

namespace ag {

Tensor Tensor::add(const Tensor& other) const {
  return ag::add(*this, other);
}
Tensor Tensor::sub(const Tensor& other) const {
  return ag::sub(*this, other);
}
Tensor Tensor::mul(const Tensor& other) const {
  return ag::mul(*this, other);
}
Tensor Tensor::div(const Tensor& other) const {
  return ag::div(*this, other);
}
Tensor Tensor::pow(double exponent) const {
  return ag::pow(*this, exponent);
}
Tensor Tensor::pow(const Tensor& exponent) const {
  return ag::pow(*this, exponent);
}
Tensor Tensor::neg() const {
  return ag::neg(*this);
}
Tensor Tensor::exp() const {
  return ag::exp(*this);
}
Tensor Tensor::log() const {
  return ag::log(*this);
}
Tensor Tensor::tanh() const {
  return ag::tanh(*this);
}
Tensor Tensor::sigmoid() const {
  return ag::sigmoid(*this);
}
Tensor Tensor::relu() const {
  return ag::relu(*this);
}
Tensor Tensor::sqrt() const {
  return ag::sqrt(*this);
}
Tensor Tensor::abs() const {
  return ag::abs(*this);
}

Tensor Tensor::sum() const {
  return ag::sum(*this);
}
Tensor Tensor::sum(int64_t dim, bool keepdim) const {
  return ag::sum(*this, dim, keepdim);
}
Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return ag::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const {
  return ag::mean(*this);
}
Tensor Tensor::mean(int64_t dim, bool keepdim) const {
  return ag::mean(*this, dim, keepdim);
}
Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return ag::mean(*this, dims, keepdim);
}
Tensor Tensor::max() const {
  return ag::max(*this);
}
Tensor Tensor::max(int64_t dim, bool keepdim) const {
  return ag::max(*this, dim, keepdim);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return ag::argmax(*this, dim, keepdim);
}

Tensor Tensor::reshape(Shape shape) const {
  return ag::reshape(*this, std::move(shape));
}
Tensor Tensor::view(Shape shape) const {
  return ag::view(*this, std::move(shape));
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return ag::flatten(*this, start_dim, end_dim);
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return ag::transpose(*this, dim0, dim1);
}
Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  return ag::permute(*this, dims);
}
Tensor Tensor::unsqueeze(int64_t dim) const {
  return ag::unsqueeze(*this, dim);
}
Tensor Tensor::squeeze() const {
  return ag::squeeze(*this);
}
Tensor Tensor::squeeze(int64_t dim) const {
  return ag::squeeze(*this, dim);
}
Tensor Tensor::expand(Shape shape) const {
  return ag::expand(*this, std::move(shape));
}

Tensor Tensor::masked_fill(const Tensor& mask, double value) const {
  return ag::masked_fill(*this, mask, value);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return ag::narrow(*this, dim, start, length);
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return ag::index_select(*this, dim, index);
}

Tensor Tensor::eq(const Tensor& other) const {
  return ag::eq(*this, other);
}
Tensor Tensor::eq(double other) const {
  return ag::eq(*this, other);
}
Tensor Tensor::ne(const Tensor& other) const {
  return ag::ne(*this, other);
}
Tensor Tensor::ne(double other) const {
  return ag::ne(*this, other);
}
Tensor Tensor::lt(const Tensor& other) const {
  return ag::lt(*this, other);
}
Tensor Tensor::lt(double other) const {
  return ag::lt(*this, other);
}
Tensor Tensor::le(const Tensor& other) const {
  return ag::le(*this, other);
}
Tensor Tensor::le(double other) const {
  return ag::le(*this, other);
}
Tensor Tensor::gt(const Tensor& other) const {
  return ag::gt(*this, other);
}
Tensor Tensor::gt(double other) const {
  return ag::gt(*this, other);
}
Tensor Tensor::ge(const Tensor& other) const {
  return ag::ge(*this, other);
}
Tensor Tensor::ge(double other) const {
  return ag::ge(*this, other);
}
Tensor Tensor::logical_and(const Tensor& other) const {
  return ag::logical_and(*this, other);
}
Tensor Tensor::logical_or(const Tensor& other) const {
  return ag::logical_or(*this, other);
}
Tensor Tensor::logical_not() const {
  return ag::logical_not(*this);
}

Tensor Tensor::matmul(const Tensor& other) const {
  return ag::matmul(*this, other);
}
Tensor Tensor::bmm(const Tensor& other) const {
  return ag::bmm(*this, other);
}
Tensor Tensor::mm(const Tensor& other) const {
  return ag::mm(*this, other);
}
Tensor Tensor::softmax(int64_t dim) const {
  return ag::softmax(*this, dim);
}
Tensor Tensor::log_softmax(int64_t dim) const {
  return ag::log_softmax(*this, dim);
}

}  // namespace ag
