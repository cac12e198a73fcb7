// The autograd engine: nodes, grad mode, recording, and the backward sweep.
// It knows nothing about individual ops: each op hands it a backward lambda.
// The two pieces of arithmetic it does itself (summing a gradient to its
// input's shape, adding gradients) use the tensor layer's unrecorded
// kernels, not ops.h: the engine sits below the ops (scripts/check_layers.sh).
#include "attograd/autograd.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "dim_layout.h"
#include "elementwise.h"
#include "reduce.h"
#include "tensor_impl_access.h"

namespace ag {

// ---- NodeInput and Node ------------------------------------------------------------

NodeInput::NodeInput(const Tensor& input) {
  if (!input.defined()) return;
  const TensorImpl& impl = *input.impl();
  defined_ = true;
  requires_grad_ = impl.requires_grad();
  grad_fn_ = impl.grad_fn();
  if (!grad_fn_) leaf_ = detail::TensorImplAccess::shared(input);
  dtype_ = impl.dtype();
  name_ = impl.name();
  storage_ = impl.storage();
  recorded_version_ = impl.storage()->version();
}

void detail::set_grad_fn(Tensor& out, std::shared_ptr<Node> node) {
  TensorImplAccess::set_grad_fn(*TensorImplAccess::shared(out), std::move(node));
}

std::string NodeInput::grad_fn_name() const {
  return grad_fn_ ? grad_fn_->name() : std::string();
}

const Shape& NodeInput::shape() const {
  static const Shape none;  // an undefined input's
  if (grad_fn_) return grad_fn_->output_shape();
  return leaf_ ? leaf_->shape() : none;
}

uint64_t NodeInput::version() const {
  const std::shared_ptr<Storage> storage = storage_.lock();
  return storage ? storage->version() : recorded_version_;
}

Node::Node(const char* name, std::span<const Tensor> inputs, Shape output_shape,
           std::optional<InputSlice> input_slice)
    : name_(name), output_shape_(std::move(output_shape)), input_slice_(input_slice) {
  inputs_.reserve(inputs.size());
  for (const Tensor& input : inputs) inputs_.emplace_back(input);
  if (!input_slice_) return;
  // The sweep writes the slice's gradient at these offsets: they must fit.
  const InputSlice& s = *input_slice_;
  const Shape& shape = inputs_.size() == 1 ? inputs_[0].shape() : Shape();
  AG_CHECK(s.dim >= 0 && s.dim < static_cast<int64_t>(shape.size()) && s.start >= 0 &&
               s.length >= 0 && s.start <= shape[static_cast<size_t>(s.dim)] - s.length,
           "record_slice",
           name_ + ": slice (dim " + std::to_string(s.dim) + ", start " + std::to_string(s.start) +
               ", length " + std::to_string(s.length) + ") does not fit its one input of shape " +
               shape_str(shape) + " (" + std::to_string(inputs_.size()) + " inputs)");
}

// Destroying the last handle of a long chain would otherwise recurse once per
// op (node -> its input's node -> ...) and overflow the stack. Instead the
// input nodes go onto a heap-allocated worklist and are dropped one at a
// time; a node whose last handle is the worklist's first hands its own input
// nodes to the list, so it dies with none left: no recursion.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> worklist;
  for (NodeInput& input : inputs_)
    if (input.grad_fn_) worklist.push_back(std::move(input.grad_fn_));
  while (!worklist.empty()) {
    std::shared_ptr<Node> node = std::move(worklist.back());
    worklist.pop_back();
    if (node.use_count() != 1) continue;  // someone else still holds it
    for (NodeInput& input : node->inputs_)
      if (input.grad_fn_) worklist.push_back(std::move(input.grad_fn_));
    node->free_backward();
  }
}

grads Node::apply(const Tensor& grad_output) {
  if (released_)
    throw Error("backward: trying to backward through " + name_ +
                " a second time, but its saved tensors were freed by the first backward; "
                "call backward(grad, /*retain_graph=*/true) the first time");
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const NodeInput& input = inputs_[i];
    if (!input.defined() || input.version() == input.recorded_version()) continue;
    const std::string& label = input.name();
    throw Error("backward: input " + std::to_string(i) + " of " + name_ + " (" +
                (label.empty() ? std::string() : "'" + label + "', ") + "a " +
                dtype_name(input.dtype()) + " tensor of shape " + shape_str(input.shape()) +
                ") was modified in place after the forward (version " +
                std::to_string(input.version()) + ", recorded at version " +
                std::to_string(input.recorded_version()) +
                "): its gradient would use the new values. Run the forward again after "
                "optimizer.step() or load_state_dict()");
  }
  grads result = run_backward(grad_output);
  if (result.size() != inputs_.size())
    throw Error("autograd: " + name_ + " returned " + std::to_string(result.size()) +
                " gradients for " + std::to_string(inputs_.size()) + " inputs");
  return result;
}

void Node::release() {
  released_ = true;
  free_backward();
  // Keep the inputs: the graph's structure stays walkable, so a second
  // backward reaches this node and reports the freed graph clearly.
}

// ---- grad mode ------------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
}

bool grad_mode_enabled() {
  return grad_mode;
}
NoGradGuard::NoGradGuard() : previous_(grad_mode) {
  grad_mode = false;
}
NoGradGuard::~NoGradGuard() {
  grad_mode = previous_;
}

bool any_requires_grad(std::span<const Tensor> inputs) {
  if (!grad_mode) return false;
  for (const Tensor& t : inputs)
    if (detail::requires_grad(t)) return true;
  return false;
}

// ---- accumulation ---------------------------------------------------------------

Tensor sum_to_shape(const Tensor& grad, const Shape& shape, const std::string& op, size_t input) {
  if (grad.shape() == shape) return grad;
  const Shape& g = grad.shape();
  auto fail = [&]() {
    throw Error("autograd: " + op + " produced a gradient of shape " + shape_str(g) +
                " for input " + std::to_string(input) + " of shape " + shape_str(shape));
  };
  if (g.size() < shape.size()) fail();
  // Dims to sum: the extra leading ones, and those where the input had size 1.
  const size_t lead = g.size() - shape.size();
  std::vector<bool> reduce(g.size(), false);
  for (size_t d = 0; d < g.size(); ++d) {
    if (d < lead) {
      reduce[d] = true;
    } else if (shape[d - lead] != g[d]) {
      if (shape[d - lead] != 1) fail();
      reduce[d] = true;
    }
  }
  // The kept shape is `shape` behind `lead` ones: same elements, same layout.
  return detail::sum_dims(grad, reduce, shape);
}

namespace {

// a + b for two gradients of one tensor: same shape and (floating) dtype, as
// sum_to_shape and the dtype check guarantee. The same kernel as ag::add.
Tensor add_grads(const Tensor& a, const Tensor& b) {
  return dispatch_floating(a.dtype(), "autograd", [&](auto tag) {
    using T = decltype(tag);
    return detail::map_binary<T, T>(a, b, "autograd", a.dtype(), [](T x, T y) { return x + y; });
  });
}

// True when nothing but this handle can see t's values: no other Tensor
// shares its TensorImpl, no view shares its storage, and it is contiguous
// (no element is read through two indices, as in a broadcast). Only then may
// the engine write into it: an observer, a hook or a backward lambda that
// kept a gradient (or AddBackward, which hands one g to two inputs) holds a
// second handle, and sees no change.
bool exclusively_owned(const Tensor& t) {
  return detail::TensorImplAccess::shared(t).use_count() == 1 &&
         t.impl()->storage().use_count() == 1 && t.is_contiguous();
}

// sum += g in place, elementwise: sum exclusively owned (so contiguous), g
// of sum's shape and dtype, any strides.
void add_in_place(Tensor& sum, const Tensor& g) {
  dispatch_floating(sum.dtype(), "autograd", [&](auto tag) {
    using T = decltype(tag);
    T* out = sum.data_ptr<T>();
    const T* in = g.data_ptr<T>();
    if (g.is_contiguous()) {
      const int64_t n = sum.numel();
      for (int64_t i = 0; i < n; ++i) out[i] += in[i];
      return;
    }
    int64_t i = 0;
    detail::for_each_offset<1>(g.shape(), {g.strides()},
                               [&](const std::array<int64_t, 1>& off) { out[i++] += in[off[0]]; });
  });
}

// sum = sum + g for two gradients of one tensor (the first kept as it is, no
// copy). Written into whichever of the two buffers only the engine holds,
// rather than into a fresh one: a tensor used T times (an RNN's weights, the
// keys of attention at every decoder step) then costs T - 1 additions and no
// allocation. Float addition commutes, so sum + g and g + sum are the same bits.
void accumulate(Tensor& sum, Tensor g) {
  if (!sum.defined()) {
    sum = std::move(g);
  } else if (exclusively_owned(sum)) {
    add_in_place(sum, g);
  } else if (exclusively_owned(g)) {
    add_in_place(g, sum);
    sum = std::move(g);
  } else {
    sum = add_grads(sum, g);
  }
}

// The shape of a slice of a tensor of `shape` (record_slice): `shape` with
// slice.length in slice.dim.
Shape slice_shape(Shape shape, const InputSlice& slice) {
  shape[static_cast<size_t>(slice.dim)] = slice.length;
  return shape;
}

// dst[..., start + k, ...] (+)= g[..., k, ...] along slice.dim, k < length:
// dst contiguous [outer, n, inner] around the dim, g [outer, length, inner].
void add_into_slice(Tensor& dst, const Tensor& g, const InputSlice& slice, bool copy) {
  const detail::DimLayout b = detail::layout_around(dst.shape(), static_cast<size_t>(slice.dim));
  const Tensor gc = g.is_contiguous() ? g : detail::contiguous_copy(g);
  dispatch_floating(dst.dtype(), "autograd", [&](auto tag) {
    using T = decltype(tag);
    const int64_t block = slice.length * b.inner;  // one outer block of the slice
    const T* in = gc.data_ptr<T>();
    for (int64_t o = 0; o < b.outer; ++o, in += block) {
      T* out = dst.data_ptr<T>() + (o * b.n + slice.start) * b.inner;
      if (copy)
        std::copy_n(in, block, out);
      else
        for (int64_t k = 0; k < block; ++k) out[k] += in[k];
    }
  });
}

// The whole dL/dx from the gradient of its slice: g placed in zeros of x's
// shape, what a slice op's backward used to return (for an observer, which
// sees every gradient at its input's shape, and for a leaf's grad()).
Tensor widen_slice(const Tensor& g, const Shape& shape, const InputSlice& slice) {
  Tensor full = detail::make_tensor(shape, g.dtype(), "autograd");  // zeros
  add_into_slice(full, g, slice, /*copy=*/true);
  return full;
}

// sum = sum + (g placed at `slice` of a tensor of `shape`, zeros elsewhere),
// touching only the slice when sum is exclusively owned: the first slice's
// gradient becomes a zero-filled dL/dx holding it, later ones add into it.
void accumulate_slice(Tensor& sum, const Tensor& g, const Shape& shape, const InputSlice& slice) {
  if (!sum.defined()) {
    sum = widen_slice(g, shape, slice);
    return;
  }
  if (!exclusively_owned(sum)) sum = detail::contiguous_copy(sum);
  add_into_slice(sum, g, slice, /*copy=*/false);
}

// Guards every leaf's grad: backwards of two graphs that share a leaf may run
// on two threads at once (see autograd.h).
std::mutex leaf_grad_mutex;

// Adds `grad` into t.grad(): a leaf's, or a retained one's (retain_grad).
// When the caller moved `grad` in, it may be the only handle to its buffer.
void accumulate_grad(const Tensor& t, Tensor grad) {
  std::lock_guard<std::mutex> lock(leaf_grad_mutex);
  std::shared_ptr<Tensor>& leaf_grad =
      detail::TensorImplAccess::grad(*detail::TensorImplAccess::shared(t));
  if (!leaf_grad) {
    // The first gradient becomes grad(): its own buffer, contiguous so that
    // optimizers can walk it linearly. The buffer is adopted as is only when
    // nothing else can see it; otherwise it is copied: AddBackward hands the
    // same g to both inputs, a seed belongs to the caller, a hook may keep
    // what it saw, and clipping one leaf's gradient in place must not change
    // another's.
    leaf_grad = std::make_shared<Tensor>(exclusively_owned(grad) ? grad.detach()
                                                                 : detail::contiguous_copy(grad));
  } else if (exclusively_owned(*leaf_grad)) {
    // Nobody holds grad() (a handle from t.grad() would be a second owner):
    // the sum goes into its buffer.
    add_in_place(*leaf_grad, grad);
  } else {
    *leaf_grad = add_grads(*leaf_grad, grad);
  }
}

// Runs a tensor's hooks in registration order on `grad`, the gradient
// flowing into it; each sees the previous one's result. `node` made the
// tensor (null for a leaf): it names the tensor in errors.
Tensor run_hooks(const detail::GradHooks& hooks, Tensor grad, const Node* node) {
  // A copy of the list: a hook may remove itself, or add another, as it runs.
  const std::vector<detail::GradHooks::Entry> entries = hooks.entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    Tensor replacement = entries[i].hook(grad);
    if (!replacement.defined()) continue;  // the hook only watched
    if (replacement.shape() != grad.shape() || replacement.dtype() != grad.dtype())
      throw Error("register_hook: hook " + std::to_string(i) + " of " +
                  (node ? "the output of " + node->name() : std::string("a leaf")) +
                  " returned a " + dtype_name(replacement.dtype()) + " gradient of shape " +
                  shape_str(replacement.shape()) + " for a " + dtype_name(grad.dtype()) +
                  " gradient of shape " + shape_str(grad.shape()) +
                  "; a hook must keep the shape and dtype");
    grad = std::move(replacement);
  }
  return grad;
}

// A leaf's gradient in one sweep, summed over the leaf's uses so that its
// hooks run once, on the sum (as PyTorch's AccumulateGrad node does).
struct HookedLeaf {
  Tensor leaf, grad;
};

}  // namespace

// ---- hooks and retained gradients ------------------------------------------------
// An op output's hooks live in its node (the sweep reaches nodes, not
// tensors); a leaf's in its TensorImpl.

HookHandle Tensor::add_hook(GradHook hook) {
  AG_CHECK(requires_grad(), "register_hook",
           "cannot register a hook on a tensor that does not require grad (" +
               std::string(dtype_name(dtype())) + " " + shape_str(shape()) + ")");
  std::shared_ptr<detail::GradHooks>& hooks = is_leaf() ? impl_->hooks_ : grad_fn()->output_hooks_;
  if (!hooks) hooks = std::make_shared<detail::GradHooks>();
  const uint64_t id = hooks->next_id++;
  hooks->entries.push_back({id, std::move(hook)});
  return HookHandle(hooks, id);
}

void HookHandle::remove() {
  const std::shared_ptr<detail::GradHooks> hooks = hooks_.lock();
  hooks_.reset();
  if (hooks) std::erase_if(hooks->entries, [&](const auto& entry) { return entry.id == id_; });
}

// PyTorch 1.13's way: retaining is a hook, in order with the others, that
// adds (a copy of) the gradient it sees into grad(). It holds the tensor
// weakly: a graph does not keep its op outputs alive, and once the tensor is
// gone the hook does nothing.
void Tensor::retain_grad() {
  AG_CHECK(requires_grad(), "retain_grad",
           "cannot retain the gradient of a tensor that does not require grad (" +
               std::string(dtype_name(dtype())) + " " + shape_str(shape()) + ")");
  if (is_leaf() || retains_grad()) return;  // a leaf's grad() is kept anyway
  add_hook([target = std::weak_ptr<TensorImpl>(impl_)](const Tensor& g) {
    if (std::shared_ptr<TensorImpl> alive = target.lock()) accumulate_grad(Tensor(alive), g);
    return Tensor();
  });
  grad_fn()->output_hooks_->retains_grad = true;
}

bool Tensor::retains_grad() const {
  if (is_leaf()) return false;
  const std::shared_ptr<detail::GradHooks>& hooks = grad_fn()->output_hooks_;
  return hooks && hooks->retains_grad;
}

namespace detail {
// backward()'s walk over the graph. A friend of Node: it keeps its
// bookkeeping in the nodes themselves (Node::visited_in_sweep_, Node::grad_).
class Sweep {
 public:
  static void run(Node* root, Tensor seed, bool retain_graph, const BackwardObserver& observer);

 private:
  // Nodes reachable from `root`, ordered so that every node comes before the
  // nodes of its inputs (reverse post-order of an iterative DFS), each marked
  // with `sweep` and holding no gradient yet.
  static std::vector<Node*> topological_order(Node* root, uint64_t sweep);
};
}  // namespace detail

std::string Tensor::grad_fn_name() const {
  const std::shared_ptr<Node>& node = grad_fn();
  return node ? node->name() : std::string();
}

void Tensor::backward(const Tensor& grad_output, bool retain_graph) const {
  ag::backward(*this, grad_output, retain_graph);
}

void backward(const Tensor& root, const Tensor& grad_output, bool retain_graph,
              const BackwardObserver& observer) {
  AG_CHECK(
      root.requires_grad(), "backward",
      "tensor of shape " + shape_str(root.shape()) + " does not require grad and has no grad_fn");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    AG_CHECK(root.numel() == 1, "backward",
             "grad can be implicitly created only for scalar outputs, got shape " +
                 shape_str(root.shape()) + "; pass backward(grad_output)");
    seed = ones(root.shape(), root.dtype());
  }
  AG_CHECK(seed.shape() == root.shape(), "backward",
           "grad_output of shape " + shape_str(seed.shape()) + " does not match tensor of shape " +
               shape_str(root.shape()));
  AG_CHECK(seed.dtype() == root.dtype(), "backward",
           std::string("grad_output is ") + dtype_name(seed.dtype()) + ", tensor is " +
               dtype_name(root.dtype()));

  NoGradGuard no_grad;  // backward lambdas and hooks must not record
  if (root.is_leaf()) {
    const std::shared_ptr<detail::GradHooks>& hooks = detail::TensorImplAccess::hooks(root);
    accumulate_grad(root, hooks ? run_hooks(*hooks, std::move(seed), nullptr) : std::move(seed));
    return;
  }
  detail::Sweep::run(root.grad_fn().get(), std::move(seed), retain_graph, observer);
}

namespace detail {

// A sweep numbers itself; a node whose mark is this number has been reached.
// (Numbers only grow, so a mark left by an earlier sweep never matches.)
std::vector<Node*> Sweep::topological_order(Node* root, uint64_t sweep) {
  std::vector<Node*> post_order;
  std::vector<std::pair<Node*, size_t>> stack;  // (node, next input to visit)
  // Most graphs are small: one allocation each instead of a series of regrowths.
  post_order.reserve(64);
  stack.reserve(64);
  const auto reach = [&](Node* node) {
    node->visited_in_sweep_ = sweep;
    node->grad_ = Tensor();  // nothing has flowed here yet in this sweep
  };
  reach(root);
  stack.emplace_back(root, 0);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs_.size()) {
      Node* child = node->inputs_[next++].grad_fn().get();
      if (child && child->visited_in_sweep_ != sweep) {
        reach(child);
        stack.emplace_back(child, 0);
      }
    } else {
      post_order.push_back(node);
      stack.pop_back();
    }
  }
  std::reverse(post_order.begin(), post_order.end());
  return post_order;
}

void Sweep::run(Node* root, Tensor seed, bool retain_graph, const BackwardObserver& observer) {
  static std::atomic<uint64_t> sweeps{0};
  const std::vector<Node*> order = topological_order(root, ++sweeps);
  root->grad_ = std::move(seed);
  std::vector<HookedLeaf> hooked_leaves;  // allocates only when a leaf has hooks
  try {
    size_t step = 0;
    for (Node* node : order) {
      if (!node->grad_.defined()) continue;  // no gradient flowed here
      Tensor grad_out = std::move(node->grad_);
      // dL/d(this node's output) is complete: its tensor's hooks see it first.
      if (node->output_hooks_)
        grad_out = run_hooks(*node->output_hooks_, std::move(grad_out), node);
      grads input_grads = node->apply(grad_out);
      // A slice op's gradient (record_slice) covers its slice of input 0
      // only; it stays that small, to be added into the input's gradient in
      // place, unless something must see the whole dL/dinput: an observer,
      // or a leaf's grad().
      const InputSlice* slice = node->input_slice_ ? &*node->input_slice_ : nullptr;
      bool slice_only = false;  // input_grads[0] holds the slice's gradient only
      // Each gradient summed to its input's (or its slice's) shape and
      // checked first, so that an observer sees them all before any is
      // accumulated.
      for (size_t i = 0; i < input_grads.size(); ++i) {
        const NodeInput& input = node->inputs_[i];
        if (!input_grads[i].defined() || !input.defined() || !input.requires_grad()) {
          input_grads[i] = Tensor();
          continue;
        }
        const bool sliced = slice && i == 0;
        input_grads[i] = sum_to_shape(input_grads[i],
                                      sliced ? slice_shape(input.shape(), *slice) : input.shape(),
                                      node->name_, i);
        if (input_grads[i].dtype() != input.dtype())
          throw Error("autograd: " + node->name_ + " produced a " +
                      dtype_name(input_grads[i].dtype()) + " gradient for " +
                      dtype_name(input.dtype()) + " input " + std::to_string(i));
        if (sliced && (observer || input.is_leaf()))
          input_grads[i] = widen_slice(input_grads[i], input.shape(), *slice);
        else
          slice_only = sliced;
      }
      if (observer) observer(BackwardStep{step, *node, grad_out, input_grads});
      ++step;
      grad_out = Tensor();  // so a gradient passed through (g itself) has one handle less
      for (size_t i = 0; i < input_grads.size(); ++i) {
        if (!input_grads[i].defined()) continue;
        Tensor g = std::move(input_grads[i]);  // the engine's only handle, unless observed
        const NodeInput& input = node->inputs_[i];
        if (input.is_leaf()) {
          Tensor leaf = input.tensor();
          if (!TensorImplAccess::hooks(leaf)) {
            accumulate_grad(leaf, std::move(g));
            continue;
          }
          auto same_leaf = [&](const HookedLeaf& h) { return h.leaf.is_same(leaf); };
          const auto it = std::find_if(hooked_leaves.begin(), hooked_leaves.end(), same_leaf);
          if (it == hooked_leaves.end())
            hooked_leaves.push_back({std::move(leaf), std::move(g)});
          else
            accumulate(it->grad, std::move(g));
          continue;
        }
        Tensor& pending = input.grad_fn()->grad_;  // dL/d(input), summed over its uses
        if (slice_only && i == 0)
          accumulate_slice(pending, g, input.shape(), *slice);
        else
          accumulate(pending, std::move(g));
      }
      if (!retain_graph) node->release();
    }
    // Every use of every leaf has been swept: their hooks see the sums.
    for (HookedLeaf& h : hooked_leaves)
      accumulate_grad(h.leaf,
                      run_hooks(*TensorImplAccess::hooks(h.leaf), std::move(h.grad), nullptr));
  } catch (...) {
    // Gradients waiting in nodes the sweep did not reach are dropped with it.
    for (Node* node : order) node->grad_ = Tensor();
    throw;
  }
}

}  // namespace detail

}  // namespace ag
