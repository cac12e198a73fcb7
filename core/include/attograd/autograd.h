// The reverse-mode autograd engine.
//
// Every differentiable op computes its output and then, when some input
// needs a gradient, calls record() with the backward written as a lambda
// right below the forward:
//
//   Tensor out = ...forward...;                       // out = a * b
//   if (needs_grad(a, b))
//     record(out, "MulBackward", {a, b}, [a_ = a.detach(), b_ = b.detach()](const Tensor& g) {
//       return grads{g * b_, g * a_};                 // dL/da = g b, dL/db = g a
//     });
//
// needs_grad() first, always: under NoGradGuard, or when no input requires
// grad, nothing of the graph is built (no input list, no lambda, no detached
// copies), which is most of an op's cost on small tensors. record() checks
// again, so a call without the guard is still correct, only slower.
//
// Rules for backward lambdas:
//  * return one gradient per input, in order; an undefined Tensor means "none";
//  * a gradient may have the broadcast (output) shape: the engine's
//    accumulate step sums it back to the input's shape (and checks it fits);
//  * capture tensors with .detach() (never `out` itself: that would make a
//    reference cycle out -> node -> lambda -> out);
//  * backward runs under NoGradGuard, so it may use any public op.
//
// backward() sorts the graph topologically with an explicit stack (no
// recursion: a chain of 100,000 ops is fine), then sweeps it in reverse.
//
// What a node keeps of its inputs (NodeInput): where each one's gradient goes
// (the node that made it, or the leaf itself), its shape and dtype, and its
// storage version; not an op output's values. Nodes therefore do not keep
// their inputs' buffers alive (AddBackward holds neither a's nor b's): a
// lambda that needs values captures exactly those. Leaves (tensors no op
// made: parameters, inputs, constants such as a mask) are held whole.
//
// Saved values and in-place writes: a node remembers the storage version
// (Storage::version) of each input when it is recorded. If an input's storage
// was written in place before the backward reaches the node (an optimizer
// step, load_state_dict), the gradient would silently use the new values, so
// apply() throws instead, naming the node and the input, as PyTorch's version
// counter does. (attograd checks every input, including those whose backward
// would not need the value, like add's.)
//
// Watching the sweep: ag::backward(root, grad, retain_graph, observer) is
// Tensor::backward with an observer called once per node the sweep runs, in
// the sweep's order, after the node's backward lambda and before its
// gradients are accumulated (viewers and debuggers step through it this
// way). Without an observer the sweep pays one null check per node.
//
// Hooks and retained gradients (Tensor::register_hook, retain_grad): an op
// output's hooks live in its node and run on the node's summed dL/doutput
// before the node's backward (a retained gradient is one such hook, adding a
// copy into the tensor's grad()); a leaf's live in the TensorImpl and run on
// its gradient summed over the whole sweep, which is then accumulated after
// the sweep. Without hooks the sweep pays one null check per node and per
// leaf gradient.
//
// Threads: backward() of different graphs may run on several threads at
// once, even when the graphs share leaves (a parameter used by two models):
// accumulation into a leaf's grad() is locked. One graph must not be swept by
// two threads at once, and a leaf's grad() must not be read or reset, nor a
// hook registered or removed, while a backward may write or run it.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attograd/tensor.h"

namespace ag {

using grads = std::vector<Tensor>;

namespace detail {
class Sweep;

// One tensor's hooks, in registration order (see Tensor::register_hook).
// Held by the tensor's node (an op output) or its TensorImpl (a leaf);
// HookHandles hold it weakly.
struct GradHooks {
  struct Entry {
    uint64_t id;  // what a HookHandle names
    GradHook hook;
  };
  std::vector<Entry> entries;
  uint64_t next_id = 0;
  bool retains_grad = false;  // retain_grad() added its entry
};
}  // namespace detail

// What a node keeps of one input: enough to route its gradient and to check
// it, read with the same names as Tensor's accessors.
class NodeInput {
 public:
  NodeInput() = default;  // an undefined input (the None of an optional argument)
  explicit NodeInput(const Tensor& input);

  bool defined() const { return defined_; }
  bool requires_grad() const { return requires_grad_; }
  bool is_leaf() const { return defined_ && !grad_fn_; }
  const std::shared_ptr<Node>& grad_fn() const { return grad_fn_; }  // null for a leaf
  std::string grad_fn_name() const;                                  // "" for a leaf
  // Read from where it already lives (the making node's output shape, or the
  // leaf), not copied: shapes never change once a tensor exists.
  const Shape& shape() const;
  DType dtype() const { return dtype_; }
  const std::string& name() const { return name_; }
  // The input itself when it is a leaf (shares storage and grad with it);
  // undefined for an op's output, whose values the node does not keep.
  Tensor tensor() const { return leaf_ ? Tensor(leaf_) : Tensor(); }
  // The storage version now (the recorded one if the storage is gone: then
  // nothing can have written it) and when the node was recorded.
  uint64_t version() const;
  uint64_t recorded_version() const { return recorded_version_; }

 private:
  friend class Node;  // ~Node takes grad_fn_ to free a long chain iteratively
  bool defined_ = false;
  bool requires_grad_ = false;
  std::shared_ptr<Node> grad_fn_;     // the op that made it: where its gradient goes
  std::shared_ptr<TensorImpl> leaf_;  // a leaf: whose grad() receives it
  DType dtype_ = kFloat32;
  std::string name_;
  std::weak_ptr<Storage> storage_;  // weak: the node must not keep the buffer alive
  uint64_t recorded_version_ = 0;
};

// Where a node's output lies in its one input, for ops whose output is a
// slice of their input (narrow): out = x[..., start : start + length, ...]
// along dim. See record_slice.
struct InputSlice {
  int64_t dim = 0, start = 0, length = 0;
};

// One recorded op: what it consumed and how to send a gradient back. The
// backward itself lives in the derived LambdaNode (below).
class Node {
 public:
  Node(const char* name, std::span<const Tensor> inputs, Shape output_shape,
       std::optional<InputSlice> input_slice = std::nullopt);
  virtual ~Node();  // iterative: dropping a 100,000-op chain must not recurse
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<NodeInput>& inputs() const { return inputs_; }
  // The shape of the tensor this node made (viewers label the node with it).
  const Shape& output_shape() const { return output_shape_; }
  // Set when record_slice made the node: its backward returns dL/dx for this
  // slice of its one input x only (dL/dx is zero elsewhere).
  const std::optional<InputSlice>& input_slice() const { return input_slice_; }

  // dL/dinputs from dL/doutput (checks the node was not freed).
  // Throws when an input was modified in place since the node was recorded.
  grads apply(const Tensor& grad_output);
  // Frees saved tensors and the lambda (after a backward without retain_graph).
  void release();

 private:
  virtual grads run_backward(const Tensor& grad_output) = 0;
  virtual void free_backward() = 0;  // drops the lambda and what it captured

  friend class detail::Sweep;
  friend class Tensor;  // register_hook and retain_grad of the node's output
  std::string name_;
  std::vector<NodeInput> inputs_;
  Shape output_shape_;
  std::optional<InputSlice> input_slice_;
  bool released_ = false;
  std::shared_ptr<detail::GradHooks> output_hooks_;  // its output's hooks; null without any
  // backward()'s bookkeeping, valid during one sweep only (a sweep numbers
  // itself, so no per-sweep hash set or map is needed to mark and collect):
  uint64_t visited_in_sweep_ = 0;  // the number of the last sweep that reached it
  Tensor grad_;                    // dL/doutput summed so far in that sweep
};

namespace detail {
// A Node holding its backward lambda by value: make_shared puts the control
// block, the node and the lambda in ONE allocation, where a std::function
// would allocate again for any lambda capturing more than two pointers (two
// Tensors already do). On tiny tensors such allocations are most of an op's cost.
template <typename Backward>
class LambdaNode final : public Node {
 public:
  LambdaNode(const char* name, std::span<const Tensor> inputs, Backward&& backward,
             Shape output_shape, std::optional<InputSlice> input_slice = std::nullopt)
      : Node(name, inputs, std::move(output_shape), input_slice), backward_(std::move(backward)) {}

 private:
  grads run_backward(const Tensor& grad_output) override { return (*backward_)(grad_output); }
  void free_backward() override { backward_.reset(); }
  std::optional<Backward> backward_;  // empty once freed
};
}  // namespace detail

// What the sweep does at one node, as seen by a BackwardObserver. The
// references live only during the call: copy what you keep (Tensor copies
// share storage; grad_inputs' tensors are not written afterwards).
struct BackwardStep {
  size_t index;                            // 0, 1, ...: position in this sweep
  const Node& node;                        // the op being undone: name(), inputs(), output_shape()
  const Tensor& grad_output;               // dL/d(node's output), summed over all its uses
                                           // (after the output's hooks)
  const std::vector<Tensor>& grad_inputs;  // dL/d(input i), already summed to input i's
                                           // shape; undefined where nothing flows (input
                                           // undefined or not requiring grad)
};
// May read the step and throw; must not change the graph or run backward.
// An exception propagates out of backward() unchanged and leaves what any
// failing backward lambda leaves: the gradients of the steps before it
// accumulated in leaves (except leaves with hooks, accumulated after the
// sweep), this step's and later ones' not; nodes already swept
// freed (unless retain_graph), the others intact; grad mode restored.
using BackwardObserver = std::function<void(const BackwardStep&)>;

// root.backward(grad_output, retain_graph), calling `observer` (when set) at
// every node the sweep runs. A leaf root runs no node: the observer is not called.
void backward(const Tensor& root, const Tensor& grad_output = Tensor(), bool retain_graph = false,
              const BackwardObserver& observer = {});

// True unless a NoGradGuard is alive on this thread.
bool grad_mode_enabled();

// RAII: while alive, ops record nothing (inference, optimizer steps, backward).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when grad mode is on and some input requires grad: the op must record.
bool any_requires_grad(std::span<const Tensor> inputs);

namespace detail {
// record()'s one write: makes `out` (requires_grad) the output of `node`.
// Out of line, since only the library writes a TensorImpl (see tensor.h).
void set_grad_fn(Tensor& out, std::shared_ptr<Node> node);
inline bool requires_grad(const Tensor& t) {
  return t.defined() && t.requires_grad();
}
inline bool requires_grad(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (requires_grad(t)) return true;
  return false;
}
}  // namespace detail

// needs_grad(a, b, ...): the check before record() (see the top of this
// file). Takes tensors (undefined ones allowed) and vectors of tensors.
template <typename... Inputs>
bool needs_grad(const Inputs&... inputs) {
  return grad_mode_enabled() && (... || detail::requires_grad(inputs));
}

// Attaches a Node named `name` to `out` when any_requires_grad(inputs);
// otherwise does nothing (and the lambda is dropped). `backward` is any
// callable grads(const Tensor& grad_output), usually a lambda.
template <typename Backward>
void record(Tensor& out, const char* name, std::span<const Tensor> inputs, Backward backward) {
  if (!any_requires_grad(inputs)) return;
  detail::set_grad_fn(out, std::make_shared<detail::LambdaNode<Backward>>(
                               name, inputs, std::move(backward), out.shape()));
}
// record(out, "MulBackward", {a, b}, ...): the list lives on the stack, no vector is built.
template <typename Backward>
void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs,
            Backward backward) {
  record(out, name, std::span<const Tensor>(inputs.begin(), inputs.size()), std::move(backward));
}
template <typename Backward>
void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, Backward backward) {
  record(out, name, std::span<const Tensor>(inputs), std::move(backward));
}

// record() for an op whose output is a slice of its one input x:
// out = x[..., slice.start : slice.start + slice.length, ...] along slice.dim
// (narrow). `backward` returns the gradient of that slice of x only, of
// out's shape (for narrow, g itself); dL/dx is zero outside it, and the
// engine places it there. Why: a GRU reads its input x [T, B, 3H] one step
// at a time, T slices; with a full-size dL/dx per slice, mostly zeros, the
// backward would fill and add T tensors of x's size. The engine instead adds
// each slice's gradient into the one dL/dx it is summing (in place when it
// can, see autograd.cpp): T slice-sized additions.
template <typename Backward>
void record_slice(Tensor& out, const char* name, const Tensor& x, const InputSlice& slice,
                  Backward backward) {
  const std::span<const Tensor> inputs(&x, 1);
  if (!any_requires_grad(inputs)) return;
  detail::set_grad_fn(out, std::make_shared<detail::LambdaNode<Backward>>(
                               name, inputs, std::move(backward), out.shape(), slice));
}

// The one place a gradient meets its tensor: checks that `grad` has `shape`
// or a shape `shape` broadcasts to, and sums the broadcast dims away.
// Throws "autograd: MulBackward produced a gradient of shape [..] for input 1 of shape [..]".
Tensor sum_to_shape(const Tensor& grad, const Shape& shape, const std::string& op, size_t input);

}  // namespace ag
