// nn::Module — the base of every layer: named parameters, sub-modules,
// train/eval mode, state dicts.
//
// A module owns its parameters as Tensor members and registers them (and its
// sub-module members) in its constructor, in the order PyTorch would:
//
//   class Linear : public Module {
//     Linear(...) : Module("Linear") {
//       register_parameter("weight", &weight);   // -> "weight"
//     }
//     Tensor weight;
//   };
//   // in AdditiveAttention: register_module("W_q", &W_q) -> "W_q.weight"
//
// Modules are neither copyable nor movable: registration stores pointers to
// members. Hold them by value in their parent or by std::unique_ptr.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attograd/autograd.h"
#include "attograd/ops.h"

namespace ag::nn {

// A state dict: name -> tensor in insertion order, as PyTorch's OrderedDict.
// Looked up like a map (lookups are linear: a module has few parameters);
// converts to std::map<std::string, Tensor> for save_npz and
// load_state_dict, which take that.
class StateDict {
 public:
  using Entry = std::pair<std::string, Tensor>;

  // The tensor under `name`, appended (undefined) when there is none.
  Tensor& operator[](const std::string& name);
  // The tensor under `name`; throws ag::Error naming it when there is none.
  const Tensor& at(const std::string& name) const;
  size_t count(const std::string& name) const;
  bool contains(const std::string& name) const { return count(name) > 0; }
  // Removes the entry under `name`; returns how many it removed (0 or 1).
  size_t erase(const std::string& name);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

  // Implicit, so that code written when state_dict() returned a std::map
  // (std::map<std::string, Tensor> s = m.state_dict()) still compiles.
  operator std::map<std::string, Tensor>() const;

 private:
  std::vector<Entry> entries_;
};

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // "AdditiveAttention": used in error messages.
  const std::string& type_name() const { return type_name_; }

  // Parameters of this module and its sub-modules, depth first in
  // registration order, with dotted names ("W_q.weight"). A tensor held by
  // two members (tied weights) is listed once, under its first name, as in
  // PyTorch; state_dict() keeps both names.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  // The parameter registered as `name` ("W_q.weight"), as torch's
  // get_parameter: the member itself, so that assigning to it replaces the
  // module's tensor (gradcheck does). An unknown name is an ag::Error listing
  // the module's names.
  Tensor& parameter(const std::string& name);

  // name -> detached parameter (shares storage), as torch's state_dict(): in
  // registration order (the order of named_parameters()).
  StateDict state_dict() const;
  // Copies values into the existing parameters (in place, so optimizers that
  // already hold them keep working). Entries are converted to the parameter's
  // dtype. Missing or unexpected names (when strict), and mis-shaped entries
  // (always), throw ag::Error naming the module, the entry and the shapes.
  // All or nothing: every entry is checked and converted before the first
  // parameter is written, so a load that throws changes nothing. Graphs
  // recorded before the load refuse to backward (see autograd.h).
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  // Training mode (dropout active) for this module and all sub-modules.
  Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }

  // The direct sub-modules, in registration order, as torch's named_children().
  const std::vector<std::pair<std::string, Module*>>& named_children() const { return children_; }

  void zero_grad();
  // Calls fn on every sub-module, depth first in registration order, then on
  // this module, as torch's Module.apply (d2l: net.apply(init_seq2seq)).
  Module& apply(const std::function<void(Module&)>& fn);
  // Converts every parameter to `dtype` (float32 or float64); create
  // optimizers after calling it.
  Module& to(DType dtype);

 protected:
  void register_parameter(std::string name, Tensor* parameter);
  void register_module(std::string name, Module* child);
  // Registers every parameter and sub-module of `other` as this module's
  // own, under the same names: a face (attention.h, keras.h) owns the parts
  // of the scoring function it wraps, so its state dict reads as that
  // function's.
  void adopt_parts(const Module& other);

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) const;
  std::vector<std::pair<std::string, Tensor*>> all_parameter_slots() const;

  std::string type_name_;
  std::vector<std::pair<std::string, Tensor*>> parameters_;
  std::vector<std::pair<std::string, Module*>> children_;
  bool training_ = true;
};

}  // namespace ag::nn
