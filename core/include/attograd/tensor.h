// ag::Tensor — an N-d array handle with reverse-mode autograd.
//
// A Tensor is a cheap handle (a shared_ptr) to a TensorImpl:
//   storage  shared, 64-byte aligned bytes (several views may share it)
//   offset   first element, in elements
//   shape    e.g. [B, T, d]; strides in elements, row-major when contiguous
//   dtype    float32 (default), float64, int64, bool
//   autograd requires_grad, grad (a Tensor), grad_fn (the Node that made it)
// Copying a Tensor shares everything, as in PyTorch. View ops (reshape of a
// contiguous tensor, transpose, permute, expand, squeeze, unsqueeze) share
// storage; every other op writes a fresh contiguous tensor.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "attograd/allocator.h"
#include "attograd/dtype.h"
#include "attograd/error.h"
#include "attograd/threads.h"  // set_num_threads, reachable from here as before

namespace ag {

using Shape = std::vector<int64_t>;

class Node;

// Raw, 64-byte aligned bytes (aligned for the SIMD kernels), from the caching
// allocator (allocator.h).
class Storage {
 public:
  // Zero-filled, unless Init::None (for ops whose kernels write every byte).
  // The one place attograd allocates tensor memory: running out of it throws
  // ag::Error ("op: out of memory allocating N bytes"), never std::bad_alloc.
  explicit Storage(size_t nbytes, const char* op = "tensor", Init init = Init::Zero);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  std::byte* data() { return block_.data; }
  const std::byte* data() const { return block_.data; }
  size_t nbytes() const { return nbytes_; }

  // The version counter (PyTorch's _version): every in-place write of these
  // bytes (an optimizer step, load_state_dict) calls bump_version(), and a
  // backward that needs values saved before the write refuses to run.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  detail::Block block_;
  size_t nbytes_;
  std::atomic<uint64_t> version_{0};
};

class Tensor;

namespace detail {
struct TensorImplAccess;  // core/src/tensor_impl_access.h: the library's own write door
struct GradHooks;         // autograd.h: a tensor's gradient hooks
}  // namespace detail

// A gradient hook (Tensor::register_hook): receives the gradient flowing into
// its tensor and returns a replacement of the same shape and dtype, or an
// undefined Tensor to keep it.
using GradHook = std::function<Tensor(const Tensor&)>;

// What register_hook returns. remove() detaches the hook; removing it again,
// or after its tensor is gone, does nothing (PyTorch's RemovableHandle).
class HookHandle {
 public:
  HookHandle() = default;  // a handle of no hook
  void remove();

 private:
  friend class Tensor;
  HookHandle(std::weak_ptr<detail::GradHooks> hooks, uint64_t id)
      : hooks_(std::move(hooks)), id_(id) {}
  std::weak_ptr<detail::GradHooks> hooks_;  // weak: a handle keeps no tensor alive
  uint64_t id_ = 0;
};

// The state behind a Tensor handle, read-only outside the library. Its fields
// keep invariants that only the library checks: a view lies inside its
// storage, grad matches shape and dtype, only an op's output has a grad_fn
// (and with it requires_grad). So Tensor's own members (tensor.cpp) and the
// ops and engine, through detail::TensorImplAccess in a header under core/src
// that is not installed, are the only writers; users go through Tensor.
class TensorImpl {
 public:
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  const std::shared_ptr<Storage>& storage() const { return storage_; }
  int64_t offset() const { return offset_; }  // in elements
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }  // in elements
  DType dtype() const { return dtype_; }
  bool requires_grad() const { return requires_grad_; }
  const std::shared_ptr<Node>& grad_fn() const { return grad_fn_; }  // null for leaves
  const std::string& name() const { return name_; }  // optional label for printing and the viewer
  // (The accumulated gradient is read with Tensor::grad().)

 private:
  friend class Tensor;
  friend struct detail::TensorImplAccess;
  TensorImpl(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, Shape strides,
             DType dtype)
      : storage_(std::move(storage)),
        offset_(offset),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        dtype_(dtype) {}

  std::shared_ptr<Storage> storage_;
  int64_t offset_;
  Shape shape_;
  Shape strides_;
  DType dtype_;
  bool requires_grad_ = false;
  std::shared_ptr<Tensor> grad_;   // accumulated dL/dself (leaves, and op outputs that
                                   // retain_grad), null until a backward
  std::shared_ptr<Node> grad_fn_;  // the op that produced this tensor; null for leaves
  std::string name_;
  // A leaf's register_hook hooks; null without any. (An op output's live in its grad_fn.)
  std::shared_ptr<detail::GradHooks> hooks_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: the "None" of optional arguments
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- shape and type -------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return checked().shape(); }
  const Shape& strides() const { return checked().strides(); }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const;
  // Negative dims count from the end; a 0-d tensor has no dims to ask about.
  int64_t size(int64_t dim) const;
  DType dtype() const { return checked().dtype(); }
  bool is_contiguous() const;  // an empty tensor always is (as in PyTorch)
  // The version of the storage (see Storage::version), shared by every view.
  uint64_t version() const;

  // ---- data -----------------------------------------------------------------
  Tensor contiguous() const;              // itself when already contiguous (differentiable)
  Tensor clone() const;                   // a fresh contiguous copy (differentiable)
  Tensor to(DType dtype) const;           // differentiable between float32 and float64
  std::vector<double> to_vector() const;  // row-major values, whatever the strides
  double item() const;                    // the one value of a 1-element tensor
  // Pointer to the first element (at `offset`); T must match dtype(). Walk it
  // with strides(), or call contiguous() first to walk it linearly.
  template <typename T>
  T* data_ptr() const;

  // ---- autograd -------------------------------------------------------------
  Tensor& requires_grad_(bool requires_grad = true);
  bool requires_grad() const;
  // dL/dself: a leaf's, or an op output's that called retain_grad(); undefined
  // until a backward reaches it (always undefined for other op outputs).
  Tensor grad() const;
  // Seeds dL/dself with `grad_output` (ones for a scalar when omitted) and
  // accumulates dL/dleaf into every leaf's grad() (and into the grad() of op
  // outputs that retain_grad). The graph is freed after the sweep unless
  // retain_graph.
  void backward(const Tensor& grad_output = Tensor(), bool retain_graph = false) const;
  void zero_grad();
  void set_grad(const Tensor& grad);  // used by optimizers and zero_grad
  Tensor detach() const;              // same storage, no graph, requires_grad false
  bool is_leaf() const;
  std::string grad_fn_name() const;  // "BmmBackward", or "" for a leaf
  const std::shared_ptr<Node>& grad_fn() const;

  // An op output keeps its gradient in grad() after backward (accumulating
  // across backwards, as a leaf's). A no-op on a leaf, which always does. It
  // sees the gradient as hooks registered before it left it (PyTorch 1.13).
  void retain_grad();
  bool retains_grad() const;  // false for a leaf, as PyTorch's retains_grad
  // Calls hook(g) with the gradient g flowing into this tensor: for an op
  // output when dL/dself is complete, before it flows on to the op's inputs;
  // for a leaf before it is added to grad() (once per backward, with the sum
  // over all its uses). Hooks run in registration order, each on the previous
  // one's result; a hook returning a Tensor replaces g (same shape and dtype),
  // one returning an undefined Tensor, or nothing, keeps it. The tensor must
  // require grad. A hook must not capture its own tensor (the tensor would
  // own itself and never be freed): capture tensor.detach() if it needs values.
  template <typename Hook>
  HookHandle register_hook(Hook hook) {
    if constexpr (std::is_void_v<std::invoke_result_t<Hook&, const Tensor&>>) {
      return add_hook([hook = std::move(hook)](const Tensor& g) mutable {
        hook(g);
        return Tensor();
      });
    } else {
      return add_hook(GradHook(std::move(hook)));
    }
  }

  // Optional label (e.g. "scores", "attention_weights"), shown by the viewer.
  Tensor& set_name(std::string name);
  const std::string& name() const;

  // ---- ops as members ---------------------------------------------------------
  // x.f(args) is f(x, args) of ops.h, exactly (same result, same node), so
  // chains read left to right: x.matmul(w).softmax(-1).sum(). Declared here,
  // defined with the ops (tensor_methods.cpp): tensor.h does not include ops.h.
  Tensor add(const Tensor& other) const;
  Tensor sub(const Tensor& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor pow(double exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor sqrt() const;
  Tensor abs() const;

  Tensor sum() const;
  Tensor sum(int64_t dim, bool keepdim = false) const;
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int64_t dim, bool keepdim = false) const;
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(int64_t dim, bool keepdim = false) const;  // values; max_with_indices for both
  Tensor argmax(int64_t dim, bool keepdim = false) const;

  Tensor reshape(Shape shape) const;
  Tensor view(Shape shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor expand(Shape shape) const;

  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;

  // Comparisons and logic (bool results, no gradient); `other` may be a number.
  Tensor eq(const Tensor& other) const;
  Tensor eq(double other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(double other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(double other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(double other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(double other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(double other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_not() const;

  Tensor matmul(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;

  // Read-only: see TensorImpl. Its address identifies the tensor (viewers key on it).
  const TensorImpl* impl() const { return impl_.get(); }
  // True when both handles point at the same tensor. (a == b compares values,
  // elementwise, as in PyTorch.)
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  friend struct detail::TensorImplAccess;  // hands the engine the shared handle
  HookHandle add_hook(GradHook hook);      // register_hook's out-of-line part (autograd.cpp)
  // The impl, or ag::Error for an undefined tensor. Inline, with the throw out
  // of line: shape() and dtype() are called several times per op.
  const TensorImpl& checked() const {
    if (!impl_) throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();
  std::shared_ptr<TensorImpl> impl_;
};

// ---- creation ----------------------------------------------------------------
// tensor({1, 2, 3, 4}, {2, 2}) -> [[1, 2], [3, 4]]. An empty shape makes a
// 1-D tensor of values.size() elements.
Tensor tensor(std::vector<double> values, Shape shape = {}, DType dtype = kFloat32);
Tensor scalar_tensor(double value, DType dtype = kFloat32);  // 0-d
// Uninitialised: its bytes are whatever the allocator hands out (not zeros;
// zeros() for that). For code that then writes every element, which saves a
// pass over memory.
Tensor empty(Shape shape, DType dtype = kFloat32);
Tensor zeros(Shape shape, DType dtype = kFloat32);
Tensor ones(Shape shape, DType dtype = kFloat32);
Tensor full(Shape shape, double value, DType dtype = kFloat32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor arange(int64_t n, DType dtype = kFloat32);  // 0, 1, ..., n-1
// Random draws use one global generator; manual_seed makes every draw (init,
// dropout, rand, randn) reproducible.
void manual_seed(uint64_t seed);
Tensor rand(Shape shape, DType dtype = kFloat32);   // uniform [0, 1)
Tensor randn(Shape shape, DType dtype = kFloat32);  // standard normal
Tensor uniform(Shape shape, double low, double high, DType dtype = kFloat32);
// The next raw 64-bit draw of the thread's generator: the global one unless
// a ThreadGenerator (below) lives on this thread (for dropout masks etc.).
uint64_t random_u64();
// torch.get_rng_state / torch.set_rng_state: the global generator's state
// as int64 [n] (the Mersenne Twister's words, bit for bit, as the standard
// library writes them), kept with a checkpoint; set_rng_state puts it back,
// and the draws go on as they would have from there (a resumed training run
// drops out the same units). A tensor that is no such state (dtype, shape,
// words the generator cannot read) is an ag::Error naming what is wrong.
Tensor get_rng_state();
void set_rng_state(const Tensor& state);
// The same for a generator of one's own (a data loader's shuffling); `op`
// starts the error message.
Tensor generator_state(const std::mt19937_64& generator);
void set_generator_state(std::mt19937_64& generator, const Tensor& state, const std::string& op);
// A generator of the calling thread's own. While one lives, every draw made
// on its thread (rand, randn, uniform, random_u64, so dropout masks too)
// comes from it, seeded with `seed`, and the global generator is neither
// read nor advanced; when it ends, the thread draws from the one before
// (the global generator, or an enclosing ThreadGenerator) again. For code
// that draws on several threads at once (data-parallel training): each
// thread's draws are reproducible whatever the other threads do. Destroy it
// on the thread that made it, innermost first (a local variable does).
class ThreadGenerator {
 public:
  explicit ThreadGenerator(uint64_t seed);
  ~ThreadGenerator();
  ThreadGenerator(const ThreadGenerator&) = delete;
  ThreadGenerator& operator=(const ThreadGenerator&) = delete;
  struct Engine;  // the generator's state (random.cpp)

 private:
  std::unique_ptr<Engine> engine_;
  Engine* previous_;
};

// While one lives on this thread, rand, randn and uniform return zeros and
// draw nothing (the generator does not advance): for building a model whose
// every parameter is loaded right after it (load_translator), where drawing
// initial values that are then overwritten would be most of a load's time.
class SkipDrawsGuard {
 public:
  SkipDrawsGuard();
  ~SkipDrawsGuard();
  SkipDrawsGuard(const SkipDrawsGuard&) = delete;
  SkipDrawsGuard& operator=(const SkipDrawsGuard&) = delete;

 private:
  bool previous_;
};

// ---- shape helpers -----------------------------------------------------------
// Shapes hold at most kMaxNumel elements, counting a size-0 dim as 1 (so that
// strides fit too): then every element, stride and byte count derived from a
// shape fits in int64 without a check of its own.
inline constexpr int64_t kMaxNumel = int64_t{1} << 60;
// The element count of `shape`: the one checked place for shape arithmetic.
// Throws "op: negative dimension in shape [2, -1]" or "op: too many elements
// in shape [..]". Every creation function, view and file reader runs it on
// the shapes it is given.
int64_t shape_numel(const Shape& shape, const char* op = "shape");
Shape contiguous_strides(const Shape& shape);
// Normalises a possibly negative dim against `ndim`, throwing
// "op: dim 3 out of range for a 2-D tensor of shape [2, 3]".
int64_t normalize_dim(int64_t dim, const Shape& shape, const char* op);
// NumPy broadcasting of two shapes; throws "op: shapes [2, 3] and [4] do not broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// True when `shape` broadcasts to `target` without enlarging it (a mask to scores).
bool broadcasts_to(const Shape& shape, const Shape& target);

// ---- dtype checks ------------------------------------------------------------
// The two dtype checks the ops share, each worded in one place.
namespace detail {
// "op: dtypes differ: float32 [2, 3] (label_a) vs float64 [3, 2] (label_b)";
// an empty label is left out.
[[noreturn]] void throw_dtypes_differ(const Tensor& a, const Tensor& b, const char* op,
                                      const std::string& label_a = "",
                                      const std::string& label_b = "");
}  // namespace detail
// Throws the message above unless a and b share a dtype.
inline void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype()) detail::throw_dtypes_differ(a, b, op);
}
// Throws "op: undefined <what>" for an undefined t and
// "op: <what> must be float32 or float64, got int64 [2, 3]" for a t that is
// not floating.
inline void check_floating(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) detail::throw_error(op, std::string("undefined ") + what);
  if (!is_floating(t.dtype())) detail::throw_not_floating(t.dtype(), op, what, &t.shape());
}

// ---- printing ----------------------------------------------------------------
// PyTorch style: tensor([[2., 3.]], grad_fn=<BmmBackward>)
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

}  // namespace ag
