// The library's write door to a TensorImpl. Users see TensorImpl read-only
// (tensor.h); the ops that make tensors and the autograd engine need to build
// views and to set gradients, so this header, under core/src and never
// installed, gives them exactly that and nothing more.
#pragma once

#include <memory>

#include "attograd/tensor.h"

namespace ag::detail {

struct TensorImplAccess {
  // A tensor over `storage`; the caller guarantees that shape, strides and
  // offset stay inside it (make_tensor and the view ops check their inputs).
  static Tensor make(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, Shape strides,
                     DType dtype) {
    return Tensor(std::shared_ptr<TensorImpl>(
        new TensorImpl(std::move(storage), offset, std::move(shape), std::move(strides), dtype)));
  }
  // The shared handle (the engine keeps leaves alive and counts owners with it).
  static const std::shared_ptr<TensorImpl>& shared(const Tensor& t) { return t.impl_; }
  // The accumulated gradient (a leaf's, or a retained one), written by backward.
  static std::shared_ptr<Tensor>& grad(TensorImpl& leaf) { return leaf.grad_; }
  // A leaf's hooks (register_hook), null without any.
  static const std::shared_ptr<GradHooks>& hooks(const Tensor& leaf) { return leaf.impl_->hooks_; }
  // Makes `out` the output of `node` (record, in autograd.h).
  static void set_grad_fn(TensorImpl& out, std::shared_ptr<Node> node) {
    out.requires_grad_ = true;
    out.grad_fn_ = std::move(node);
  }
};

}  // namespace ag::detail
